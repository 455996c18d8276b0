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
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config says where a deployment is: what the command line's connection flags give.
type Config struct {
	// URLs are redis://, rediss:// (TLS) or unix:// URLs: one server, the seeds of a cluster,
	// or the servers of a Redlock set or of N independent servers.
	URLs []string
	// Mode is what the URLs are: Cluster, Redlock or Independent. Standalone (the zero value)
	// takes one URL: several without a mode are refused (ErrBadConfig), since a Redlock set
	// and separate servers read the same keys differently and guessing shows the wrong one.
	Mode        Mode
	TLSCAFile   string // PEM file of the CA that signs the servers' certificates (implies TLS)
	TLSInsecure bool   // do not verify the servers' certificates (implies TLS)
	Password    string // for URLs that carry none ($LOCKSCOPE_PASSWORD)
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
func Open(ctx context.Context, cfg Config) (t Target, down []error, err error) {
	known := secretsOf(cfg)
	tlsConf, err := tlsConfig(cfg)
	if err != nil {
		return Target{}, nil, err
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

	t = Target{secrets: known, Mode: cfg.Mode}
	switch cfg.Mode {
	case Cluster:
		t.Clients = []redis.UniversalClient{redis.NewClusterClient(clusterOptions(opts))}
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
	return t, down, nil
}

// parseURL parses one URL and applies the TLS config and the fallback password.
func parseURL(raw, password string, tlsConf *tls.Config, known secrets) (*redis.Options, error) {
	shown := redactURL(raw, known)
	bad := func(format string, args ...any) error {
		return &Error{Kind: ErrBadConfig, msg: "bad --redis URL " + shown + ": " + known.redact(fmt.Sprintf(format, args...))}
	}
	if _, err := url.Parse(raw); err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the whole URL, password included
		}
		return nil, bad("%v", err)
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
	return o, nil
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
// credentials and TLS.
func clusterOptions(opts []*redis.Options) *redis.ClusterOptions {
	first := opts[0]
	co := &redis.ClusterOptions{
		Username:      first.Username,
		Password:      first.Password,
		TLSConfig:     first.TLSConfig,
		DialTimeout:   dialTimeout,
		ReadTimeout:   ioTimeout,
		WriteTimeout:  ioTimeout,
		MaxRetries:    1,
		DialerRetries: dialRetries,
	}
	for _, o := range opts {
		co.Addrs = append(co.Addrs, o.Addr)
	}
	return co
}

// ping checks every client. A NOPERM reply to PING still proves the server is there and the
// login worked. On a Redlock or Independent target with some servers answering, the others are returned in
// down; otherwise the first failure is the error.
func (t Target) ping(ctx context.Context) (down []error, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
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
