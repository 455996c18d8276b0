// Package scanner takes a census of the lock keys on a Redis deployment.
package scanner

import "github.com/redis/go-redis/v9"

// Mode says what kind of deployment a Target is.
type Mode int

const (
	// Standalone is one Redis server (or a primary with replicas behind one address).
	Standalone Mode = iota
	// Cluster is a Redis Cluster: Clients[0] is a *redis.ClusterClient.
	Cluster
	// Redlock is N independent servers that hold the same locks (one client each).
	Redlock
)

func (m Mode) String() string {
	switch m {
	case Cluster:
		return "cluster"
	case Redlock:
		return "redlock"
	default:
		return "standalone"
	}
}

// Target is the deployment to inspect: what the shared connection flags resolve to.
type Target struct {
	Mode    Mode
	Clients []redis.UniversalClient // one for Standalone and Cluster, N for Redlock
	Addrs   []string                // display addresses, same order as Clients (no credentials)
}
