package connect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config says where a deployment is: what the command line's connection flags give.
type Config struct {
	// URLs are redis://, rediss:// (TLS) or unix:// URLs: one server, the seeds of a cluster,
	// or the servers of a Redlock set or of N independent servers; with SentinelMaster, the
	// sentinels (redis+sentinel:// URLs name them and the master without it).
	URLs []string
	// Mode is what the URLs are: Cluster, Redlock or Independent. Standalone (the zero value)
	// takes one URL: several without a mode are refused (ErrBadConfig), since a Redlock set
	// and separate servers read the same keys differently and guessing shows the wrong one.
	Mode        Mode
	TLSCAFile   string // PEM file of the CA that signs the servers' certificates (implies TLS)
	TLSInsecure bool   // do not verify the servers' certificates (implies TLS)
	Password    string // for URLs that carry none ($LOCKSCOPE_PASSWORD)

	// SentinelMaster is the name the sentinels monitor the master under (--sentinel-master):
	// the URLs then name sentinels and the Mode is Sentinel. SentinelUser and SentinelPassword
	// are the sentinels' own credentials, for URLs whose query carries none (the userinfo of a
	// Sentinel URL is the master's).
	SentinelMaster   string
	SentinelUser     string
	SentinelPassword string // $LOCKSCOPE_SENTINEL_PASSWORD
}

// Timeouts of lockscope's connections: short, so an unreachable server is reported promptly.
const (
	dialTimeout = 2 * time.Second
	ioTimeout   = 5 * time.Second
	pingTimeout = 3 * time.Second
	dialRetries = 2 // go-redis' default (5, 100 ms apart) makes "unreachable" take a second
)

// Open connects to the deployment cfg names and checks that every server answers (PING, which
// also proves authentication). Its error is classified (see Error) and carries no password.
//
// On a Redlock or Independent target servers that do not answer are kept (commands report them per
// instance) and returned in down, classified; Open fails only when none answers.
//
// A Sentinel target (Mode Sentinel, a SentinelMaster or a redis+sentinel:// URL) asks the
// sentinels for the master, then pings it through go-redis' failover client.
//
// One server given without Cluster that turns out to be a cluster node is opened as the
// whole cluster, and the Target's Notice says so.
func Open(ctx context.Context, cfg Config) (t Target, down []error, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	known := secretsOf(cfg)
	tlsConf, err := tlsConfig(cfg)
	if err != nil {
		return Target{}, nil, err
	}
	if wantsSentinel(cfg) {
		t, err := openSentinel(ctx, cfg, tlsConf, known)
		return t, nil, err
	}
	if cfg.SentinelUser != "" { // else silently unused: the user meant sentinels and named none
		return Target{}, nil, &Error{Kind: ErrBadConfig, msg: fmt.Sprintf("--sentinel-user without --sentinel-master "+
			"or a %s:// URL: name the master the sentinels monitor", schemeSentinel)}
	}
	opts := make([]*redis.Options, len(cfg.URLs))
	for i, raw := range cfg.URLs {
		if opts[i], err = parseURL(raw, cfg.Password, tlsConf, known); err != nil {
			return Target{}, nil, err
		}
	}
	if len(opts) == 0 {
		return Target{}, nil, &Error{Kind: ErrBadConfig, msg: "no --redis URL"}
	}
	if len(opts) > 1 && cfg.Mode == Standalone {
		return Target{}, nil, &Error{Kind: ErrBadConfig, msg: fmt.Sprintf("%d --redis URLs: say what they are: "+
			"--redlock (one Redlock set), --independent (separate servers) or --cluster (cluster seeds)", len(opts))}
	}

	t = Target{secrets: known, Mode: cfg.Mode, tls: opts[0].TLSConfig != nil}
	switch cfg.Mode {
	case Cluster:
		co, err := clusterOptions(opts, known)
		if err != nil {
			return Target{}, nil, err
		}
		t.Clients = []redis.UniversalClient{redis.NewClusterClient(co)}
		for _, o := range opts {
			t.Addrs = append(t.Addrs, o.Addr)
		}
	case Redlock, Independent:
		for _, o := range opts {
			t.Clients = append(t.Clients, redis.NewClient(o))
			t.Addrs = append(t.Addrs, o.Addr)
		}
	default:
		t.Clients = []redis.UniversalClient{redis.NewClient(opts[0])}
		t.Addrs = []string{opts[0].Addr}
	}
	if down, err = t.ping(ctx); err != nil {
		t.Close()
		return Target{}, nil, err
	}
	if t.Mode == Standalone {
		return t.wholeClusterIfNode(ctx, opts)
	}
	return t, down, nil
}

// wholeClusterIfNode turns a standalone target whose server turns out to be a cluster node
// into a cluster target: without --cluster a census would read that node's share of the keys
// only, and look complete. Notice says so. CLUSTER INFO answers only on a cluster node (a
// standalone server refuses it: cluster support disabled); a server whose ACL refuses it
// stays standalone.
func (t Target) wholeClusterIfNode(ctx context.Context, opts []*redis.Options) (Target, []error, error) {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if info, err := t.Clients[0].ClusterInfo(pctx).Result(); err != nil || !strings.Contains(info, "cluster_state:") {
		return t, nil, nil
	}
	co, err := clusterOptions(opts, t.secrets)
	if err != nil {
		t.Close()
		return Target{}, nil, err
	}
	whole := Target{Mode: Cluster, Addrs: t.Addrs, secrets: t.secrets, tls: t.tls,
		Clients: []redis.UniversalClient{redis.NewClusterClient(co)}}
	t.Close()
	if _, err := whole.ping(ctx); err != nil {
		whole.Close()
		return Target{}, nil, err
	}
	nodes := "its nodes"
	if slots, err := whole.Clients[0].ClusterSlots(pctx).Result(); err == nil {
		nodes = fmt.Sprintf("%d nodes", countNodes(slots))
	}
	whole.Notice = fmt.Sprintf("%s is a cluster node: reading the whole cluster (%s); pass --cluster to skip this check",
		whole.Addrs[0], nodes)
	return whole, nil, nil
}

// countNodes is how many servers (masters and replicas) serve the slots.
func countNodes(slots []redis.ClusterSlot) int {
	seen := map[string]bool{}
	for _, s := range slots {
		for _, n := range s.Nodes {
			seen[n.Addr] = true
		}
	}
	return len(seen)
}

// parseURL parses one URL and applies the TLS config and the fallback password.
func parseURL(raw, password string, tlsConf *tls.Config, known secrets) (*redis.Options, error) {
	bad := badURL(raw, known)
	if _, err := url.Parse(raw); err != nil {
		return nil, bad("%v", withoutURL(err))
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, bad("%s (want redis://, rediss:// or unix://)", err)
	}
	if o.Network == "tcp" {
		if _, port, _ := net.SplitHostPort(o.Addr); !validPort(port) {
			return nil, bad("port %q is not 1-65535", port)
		}
	}
	if o.Password == "" {
		o.Password = password
	}
	if tlsConf != nil {
		c := tlsConf.Clone()
		if o.TLSConfig != nil && c.ServerName == "" {
			c.ServerName = o.TLSConfig.ServerName
		}
		if c.ServerName == "" && o.Network != "unix" {
			c.ServerName, _, _ = net.SplitHostPort(o.Addr)
		}
		o.TLSConfig = c
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = dialTimeout, ioTimeout, ioTimeout
	o.MaxRetries, o.DialerRetries = 1, dialRetries
	o.OnConnect = nameConnection
	return o, nil
}

// badURL makes the errors of one --redis URL: "bad --redis URL <raw, redacted>: <why>", of
// kind ErrBadConfig, without any known password.
func badURL(raw string, known secrets) func(format string, args ...any) error {
	shown := redactURL(raw, known)
	return func(format string, args ...any) error {
		return &Error{Kind: ErrBadConfig, msg: "bad --redis URL " + shown + ": " + known.redact(fmt.Sprintf(format, args...))}
	}
}

// withoutURL is url.Parse's error without its *url.Error, which repeats the whole URL,
// password included.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// ClientName is the name every connection lockscope opens gives itself (CLIENT SETNAME), so
// operators can tell it apart in CLIENT LIST.
const ClientName = "lockscope"

// nameConnection sets ClientName on a new connection. A user whose ACL refuses CLIENT SETNAME
// still connects: the name is a courtesy. It is not go-redis' ClientName option, which
// makes the name a condition of connecting.
func nameConnection(ctx context.Context, cn *redis.Conn) error {
	err := cn.ClientSetName(ctx, ClientName).Err()
	var refused redis.Error
	if errors.As(err, &refused) {
		return nil
	}
	return err
}

func validPort(port string) bool {
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// tlsConfig builds the TLS config of TLSCAFile / TLSInsecure, or nil when neither is given
// (rediss:// URLs then use the system roots).
func tlsConfig(cfg Config) (*tls.Config, error) {
	if cfg.TLSCAFile == "" && !cfg.TLSInsecure {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.TLSInsecure} //nolint:gosec // the user asked for it
	if cfg.TLSCAFile != "" {
		pem, err := os.ReadFile(cfg.TLSCAFile)
		if err != nil {
			return nil, &Error{Kind: ErrBadConfig, msg: fmt.Sprintf("--tls-ca: %v", err), err: err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &Error{Kind: ErrBadConfig, msg: fmt.Sprintf("--tls-ca %s: no PEM certificate in it", cfg.TLSCAFile)}
		}
		c.RootCAs = pool
	}
	return c, nil
}

// clusterOptions makes cluster options with every URL as a seed and the first one's
// credentials and TLS, used for every node the cluster names: seeds that ask for other
// credentials or another TLS setting are refused rather than silently overridden.
func clusterOptions(opts []*redis.Options, known secrets) (*redis.ClusterOptions, error) {
	first := opts[0]
	for _, o := range opts[1:] {
		if o.Username != first.Username || o.Password != first.Password || (o.TLSConfig == nil) != (first.TLSConfig == nil) {
			return nil, &Error{Kind: ErrBadConfig, msg: known.redact(fmt.Sprintf(
				"--cluster: the seed %s has another user, password or TLS setting than %s: every node is reached with the first URL's", o.Addr, first.Addr))}
		}
	}
	co := &redis.ClusterOptions{
		Username:      first.Username,
		Password:      first.Password,
		TLSConfig:     first.TLSConfig,
		DialTimeout:   dialTimeout,
		ReadTimeout:   ioTimeout,
		WriteTimeout:  ioTimeout,
		MaxRetries:    1,
		DialerRetries: dialRetries,
		OnConnect:     nameConnection,
	}
	for _, o := range opts {
		co.Addrs = append(co.Addrs, o.Addr)
	}
	return co, nil
}

// ping checks every client. A NOPERM reply to PING still proves the server is there and the
// login worked. On a Redlock or Independent target with some servers answering, the others are returned in
// down; otherwise the first failure is the error.
func (t Target) ping(ctx context.Context) (down []error, err error) {
	errs := make([]error, len(t.Clients))
	var wg sync.WaitGroup
	for i, c := range t.Clients {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, pingTimeout)
			defer cancel()
			if err := c.Ping(pctx).Err(); err != nil && !redis.IsPermissionError(err) {
				errs[i] = t.classifyAt(err, t.Addrs[min(i, len(t.Addrs)-1)])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			down = append(down, err)
		}
	}
	switch {
	case len(down) == 0:
		return nil, nil
	case (t.Mode == Redlock || t.Mode == Independent) && len(down) < len(errs):
		return down, nil
	}
	return nil, down[0]
}
