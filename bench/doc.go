// Package bench compares lockscope's locklib with peer libraries (go-redsync/redsync,
// bsm/redislock) on the same real redis-server processes, in one run. It has its own
// go.mod so that the main module does not depend on the peers.
//
// docs/benchmarks.md gives the commands and the results.
package bench
