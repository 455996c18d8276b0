// Package connect owns how lockscope reaches Redis: the URLs of a deployment (one server,
// cluster seeds, or the N independent servers of a Redlock set), TLS, credentials and their
// redaction, opening and pinging the clients, and the classification of connection errors
// (unreachable, authentication failed, missing ACL permission, unusable URL).
//
// Everything else (scanner, actions, ui, demo, cli) receives a Target and never parses a URL
// or inspects a connection error itself. Messages speak the command line's language (--redis,
// $LOCKSCOPE_PASSWORD): this package is the connection model of lockscope's commands.
package connect

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Mode says what kind of deployment a Target is.
type Mode int

const (
	// Standalone is one Redis server (or a primary with replicas behind one address).
	Standalone Mode = iota
	// Cluster is a Redis Cluster: Clients[0] is a *redis.ClusterClient.
	Cluster
	// Redlock is N independent servers that hold the same locks (one client each).
	Redlock
	// Independent is N separate servers, each with locks of its own (one client each): a
	// lock is a key on one server, so the same key on two servers is two locks.
	Independent
	// Sentinel is a master with replicas behind sentinels: Clients[0] is go-redis' failover
	// client (a *redis.Client that follows the master), Addrs are the sentinels.
	Sentinel
)

func (m Mode) String() string {
	switch m {
	case Cluster:
		return "cluster"
	case Redlock:
		return "redlock"
	case Independent:
		return "independent"
	case Sentinel:
		return "sentinel"
	default:
		return "standalone"
	}
}

// Target is a deployment lockscope is connected to: what Open makes of a Config. A Target
// built as a literal (tests, the demo's embedded servers) redacts nothing.
type Target struct {
	Mode    Mode
	Clients []redis.UniversalClient // one for Standalone, Cluster and Sentinel, N for Redlock and Independent
	Addrs   []string                // display addresses, same order as Clients (no credentials); Sentinel: the sentinels
	// Notice is what Open decided that the command line did not say (a server given without
	// --cluster is a cluster node: the whole cluster is read), for the user; "" when nothing.
	Notice string

	secrets secrets // the passwords of the URLs it was opened from
	tls     bool    // the connections use TLS (an error from a plain one may mean the server wants it)

	sentinel *sentinelState // Sentinel only: shared by the target's copies
}

// Close closes every client of the target.
func (t Target) Close() {
	for _, c := range t.Clients {
		_ = c.Close()
	}
}

// On is the server at addr (one of Addrs) as a standalone target of its own, sharing t's
// client: what an action on one of several independent servers acts on. Closing it closes
// that client for t too. ok is false when addr is not one of t's servers.
func (t Target) On(addr string) (one Target, ok bool) {
	for i, a := range t.Addrs {
		if a == addr && i < len(t.Clients) {
			return Target{Mode: Standalone, Clients: t.Clients[i : i+1 : i+1], Addrs: []string{a}, secrets: t.secrets, tls: t.tls}, true
		}
	}
	return Target{}, false
}

// ServerAddr is the address of the server client i talks to, for people: Addrs[i], but on a
// Sentinel target the master as last seen (by Open, Master or FollowMaster): its Addrs are
// the sentinels, which hold no lock.
func (t Target) ServerAddr(i int) string {
	if t.sentinel != nil {
		if m := t.sentinel.lastMaster(); m != "" {
			return m
		}
	}
	if i < len(t.Addrs) {
		return t.Addrs[i]
	}
	return ""
}

// Redact removes every password the target was opened with from s (as "***").
func (t Target) Redact(s string) string { return t.secrets.redact(s) }

// Label names the target for people: its mode and addresses ("redlock 10.0.0.1:6379,..."); for
// Sentinel the master as last seen (by Open, Master or FollowMaster) and the sentinels
// ("sentinel NAME → 10.0.0.1:6379 (sentinels a,b,c)").
func (t Target) Label() string {
	if t.sentinel != nil {
		master := t.sentinel.lastMaster()
		if master == "" {
			master = "?"
		}
		return fmt.Sprintf("sentinel %s → %s (sentinels %s)", t.SentinelMaster(), master, strings.Join(t.Addrs, ","))
	}
	return t.Mode.String() + " " + strings.Join(t.Addrs, ",")
}

// Dialer returns a function that opens a new client with the options of client i, for a
// caller that needs clients of its own (each demo worker does). The caller closes them.
func (t Target) Dialer(i int) (func() redis.UniversalClient, error) {
	if t.sentinel != nil { // a copy of the failover client's Options would share its sentinel state
		o := *cmp.Or(t.sentinel.client, t.sentinel.opts)
		o.SentinelAddrs = slices.Clone(o.SentinelAddrs) // go-redis reorders them
		return func() redis.UniversalClient { o := o; return redis.NewFailoverClient(&o) }, nil
	}
	switch c := t.Clients[i].(type) {
	case *redis.ClusterClient:
		o := *c.Options()
		return func() redis.UniversalClient { o := o; return redis.NewClusterClient(&o) }, nil
	case *redis.Client:
		o := *c.Options()
		return func() redis.UniversalClient { o := o; return redis.NewClient(&o) }, nil
	}
	return nil, fmt.Errorf("connect: cannot copy a client of type %T", t.Clients[i])
}
