package demo

import (
	"strings"

	"github.com/lockscope/lockscope/connect"
	"github.com/redis/go-redis/v9"
)

// Servers is where the demo's locks live: the embedded servers (StartEmbedded) or servers the
// user named with --redis. Each worker gets clients of its own (Dial), so that a fault can cut
// exactly one worker's traffic the way a crash or a GC pause would.
type Servers struct {
	Label   string   // which server is in use, for the status bar ("embedded miniredis 127.0.0.1:41234")
	Addrs   []string // one display address per instance, no credentials
	Redlock bool     // N independent instances: workers use locklib.NewRedlock, else locklib.New
	// Dial returns a new client for instance i (0 <= i < len(Addrs)). The demo adds its fault
	// hooks to it and closes it.
	Dial func(i int) redis.UniversalClient
	// Faults stops and restarts instances for the failover scenario. When nil (servers the demo
	// cannot stop), the demo cuts every worker off the instance instead and, before letting
	// them back, deletes its own lock keys there (compare-and-delete): what a restart without
	// persistence would have done to them.
	Faults InstanceFaults
	// Replication is the demo's own master, replica and sentinel (the failover-replica
	// scenario fails the master over); nil otherwise.
	Replication *ReplicaSet
}

// InstanceFaults stops an instance and brings it back without its data.
type InstanceFaults interface {
	StopInstance(i int) error
	RestartEmpty(i int) error
}

// OnServers are the servers lockscope is connected to (--redis): each worker
// dials clients of its own with t's options. A cluster is one instance, seeded with every
// address.
func OnServers(t connect.Target) (Servers, error) {
	dials := make([]func() redis.UniversalClient, len(t.Clients))
	for i := range t.Clients {
		var err error
		if dials[i], err = t.Dialer(i); err != nil {
			return Servers{}, err
		}
	}
	d := Servers{
		Label:   t.Label(),
		Addrs:   t.Addrs,
		Redlock: t.Mode == connect.Redlock,
		Dial:    func(i int) redis.UniversalClient { return dials[i]() },
	}
	if t.Mode == connect.Cluster || t.Mode == connect.Sentinel { // one client: one instance
		d.Addrs = []string{strings.Join(t.Addrs, ",")}
	}
	return d, nil
}
