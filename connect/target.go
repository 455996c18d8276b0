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
	"fmt"
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

// Target is a deployment lockscope is connected to: what Open makes of a Config. A Target
// built as a literal (tests, the demo's embedded servers) redacts nothing.
type Target struct {
	Mode    Mode
	Clients []redis.UniversalClient // one for Standalone and Cluster, N for Redlock
	Addrs   []string                // display addresses, same order as Clients (no credentials)
	// Notice is what Open decided that the command line did not say (a server given without
	// --cluster is a cluster node: the whole cluster is read), for the user; "" when nothing.
	Notice string

	secrets secrets // the passwords of the URLs it was opened from
	tls     bool    // the connections use TLS (an error from a plain one may mean the server wants it)
}

// Close closes every client of the target.
func (t Target) Close() {
	for _, c := range t.Clients {
		_ = c.Close()
	}
}

// Redact removes every password the target was opened with from s (as "***").
func (t Target) Redact(s string) string { return t.secrets.redact(s) }

// Label names the target for people: its mode and addresses ("redlock 10.0.0.1:6379,...").
func (t Target) Label() string { return t.Mode.String() + " " + strings.Join(t.Addrs, ",") }

// Dialer returns a function that opens a new client with the options of client i, for a
// caller that needs clients of its own (each demo worker does). The caller closes them.
func (t Target) Dialer(i int) (func() redis.UniversalClient, error) {
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
