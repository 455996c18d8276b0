package cli

// target.go turns the shared connection flags (flags.go) into a scanner.Target and classifies
// connection errors into one clear line and a documented exit code (docs/cli.md).
//
// For the other commands (TUI, demo):
//
//	t, closeTarget, err := openTarget(cmd) // err is already classified: return it from RunE
//	defer closeTarget()
//	scanner.New(t, scanner.Options{Pattern: patternFlag(cmd)})
//	newAdmin(cmd, t)                        // actions.Admin with --operator and --read-only
//
// Accessors: redisFlagGiven, clusterFlag, patternFlag, readOnlyFlag, stuckAfterFlag, operatorFlag
// (flags.go). Any error printed to the user should go through describeError, which maps it to
// its exit code and removes every password lockscope knows of from the message. URLs are
// shown only through redactURL.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/scanner"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// Exit codes (docs/cli.md lists them; 0, 3, 4 and 5 are fixed by the issue).
const (
	exitOK          = 0
	exitOther       = 1
	exitUsage       = 2 // bad flag, bad argument, bad URL
	exitReadOnly    = 3 // refused by --read-only
	exitChanged     = 4 // the lock changed hands: nothing done
	exitGone        = 5 // the lock was already gone
	exitUnreachable = 6 // a Redis server could not be reached
	exitAuth        = 7 // authentication failed
	exitPermission  = 8 // the Redis user lacks an ACL permission
	exitPartial     = 9 // some Redlock instances or cluster nodes failed; the output says which
)

// Timeouts of the CLI's connections: short, so an unreachable server is reported promptly.
const (
	dialTimeout = 2 * time.Second
	ioTimeout   = 5 * time.Second
	pingTimeout = 3 * time.Second
	dialRetries = 2 // go-redis' default (5, 100 ms apart) makes "unreachable" take a second
)

// openTarget connects to what the connection flags name and checks that every server answers
// (PING, which also proves authentication). It returns the target, a function that closes its
// clients, and an error already classified (exit code, passwords removed). On a Redlock target
// servers that do not answer are reported on stderr and kept (commands report them per
// instance); it fails only when none answers.
func openTarget(cmd *cobra.Command) (scanner.Target, func(), error) {
	silenceRedisLog.Do(func() { redis.SetLogger(discardLogger{}) })
	urls := redisURLs(cmd)
	tlsConf, err := tlsFlags(cmd)
	if err != nil {
		return scanner.Target{}, func() {}, err
	}
	opts := make([]*redis.Options, len(urls))
	for i, raw := range urls {
		if opts[i], err = parseRedisURL(raw, tlsConf); err != nil {
			return scanner.Target{}, func() {}, err
		}
	}

	var t scanner.Target
	switch {
	case clusterFlag(cmd):
		t = scanner.Target{Mode: scanner.Cluster, Clients: []redis.UniversalClient{redis.NewClusterClient(clusterOptions(opts))}}
		for _, o := range opts {
			t.Addrs = append(t.Addrs, o.Addr)
		}
	case len(opts) > 1:
		t.Mode = scanner.Redlock
		for _, o := range opts {
			t.Clients = append(t.Clients, redis.NewClient(o))
			t.Addrs = append(t.Addrs, o.Addr)
		}
	default:
		t = scanner.Target{Mode: scanner.Standalone, Clients: []redis.UniversalClient{redis.NewClient(opts[0])}, Addrs: []string{opts[0].Addr}}
	}
	closeTarget := func() {
		for _, c := range t.Clients {
			_ = c.Close()
		}
	}
	if err := pingTarget(cmd.Context(), t, cmd.ErrOrStderr()); err != nil {
		closeTarget()
		return scanner.Target{}, func() {}, err
	}
	return t, closeTarget, nil
}

// go-redis logs dial failures on stderr by itself; lockscope reports them as one line instead
// (and the TUI must not have its screen written over).
var silenceRedisLog sync.Once

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

// parseRedisURL parses one --redis URL and applies the TLS flags and $LOCKSCOPE_PASSWORD.
func parseRedisURL(raw string, tlsConf *tls.Config) (*redis.Options, error) {
	shown := redactURL(raw) // first: it also remembers the password of an unparsable URL
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the whole URL, password included
		}
		return nil, withExit(exitUsage, fmt.Errorf("bad --redis URL %s: %v", shown, scrub(err.Error())))
	}
	if p, ok := u.User.Password(); ok {
		rememberSecret(p)
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, withExit(exitUsage, fmt.Errorf("bad --redis URL %s: %s (want redis://, rediss:// or unix://)", shown, scrub(err.Error())))
	}
	if o.Network == "tcp" {
		if _, port, _ := net.SplitHostPort(o.Addr); !validPort(port) {
			return nil, withExit(exitUsage, fmt.Errorf("bad --redis URL %s: port %q is not 1-65535", shown, port))
		}
	}
	if o.Password == "" {
		if p := os.Getenv(envPassword); p != "" {
			rememberSecret(p)
			o.Password = p
		}
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

// tlsFlags builds the TLS config of --tls-ca / --tls-insecure, or nil when neither is given
// (rediss:// URLs then use the system roots).
func tlsFlags(cmd *cobra.Command) (*tls.Config, error) {
	caFile, _ := cmd.Flags().GetString(flagTLSCA)
	insecure, _ := cmd.Flags().GetBool(flagTLSInsecure)
	if caFile == "" && !insecure {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // the user asked for it
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, withExit(exitUsage, fmt.Errorf("--tls-ca: %v", err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, withExit(exitUsage, fmt.Errorf("--tls-ca %s: no PEM certificate in it", caFile))
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

// pingTarget checks every client. A NOPERM reply to PING still proves the server is there
// and the login worked.
func pingTarget(ctx context.Context, t scanner.Target, stderr io.Writer) error {
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
				errs[i] = describeErrorAt(err, t.Addrs[min(i, len(t.Addrs)-1)])
			}
		})
	}
	wg.Wait()
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	if failed == 0 {
		return nil
	}
	if t.Mode == scanner.Redlock && failed < len(errs) {
		for _, err := range errs {
			if err != nil {
				fmt.Fprintln(stderr, "lockscope: warning:", err)
			}
		}
		return nil
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// describeError maps err to one line with its exit code (see the exit* constants); every
// password lockscope has seen is removed from the message. Errors that already carry an exit
// code keep it (their message is scrubbed all the same).
func describeError(err error) error { return describeErrorAt(err, "") }

// describeErrorAt is describeError for an error known to come from the server at addr.
func describeErrorAt(err error, addr string) error {
	if err == nil {
		return nil
	}
	var tagged *exitError
	if errors.As(err, &tagged) {
		return &exitError{code: tagged.code, err: errors.New(scrub(err.Error()))}
	}
	msg := scrub(err.Error())
	at := ""
	if addr != "" {
		at = " at " + addr
	}
	switch {
	case errors.Is(err, actions.ErrReadOnly):
		return withExit(exitReadOnly, errors.New("refused: --read-only is set"))
	case errors.Is(err, actions.ErrBadRequest):
		return withExit(exitUsage, errors.New(msg))
	case redis.IsAuthError(err) || strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH") ||
		strings.Contains(msg, "invalid password") || strings.Contains(msg, "invalid username-password"):
		return withExit(exitAuth, fmt.Errorf("authentication failed%s: %s (check the user and password in --redis or $%s)", at, msg, envPassword))
	case strings.Contains(msg, "NOPERM"):
		return withExit(exitPermission, fmt.Errorf("missing ACL permission%s: the Redis user %s (%s)", at, deniedPermission(err, msg), msg))
	case isUnreachable(err) || errors.Is(err, scanner.ErrUnreachable):
		return withExit(exitUnreachable, fmt.Errorf("cannot reach Redis%s: %s", at, msg))
	}
	return withExit(exitOther, errors.New(msg))
}

// noPermCommand finds the command a NOPERM reply names, e.g.
// "NOPERM User u has no permissions to run the 'get' command".
var noPermCommand = regexp.MustCompile(`run the '([^']+)' command`)

// deniedPermission says what a NOPERM refusal denies, naming the command when Redis (or the
// script line, see actions.ScriptPermissionError) tells which.
func deniedPermission(err error, msg string) string {
	var scriptErr *actions.ScriptPermissionError
	if errors.As(err, &scriptErr) {
		return "may not run " + scriptErr.Command
	}
	if m := noPermCommand.FindStringSubmatch(msg); m != nil {
		return "may not run " + strings.ToUpper(m[1])
	}
	if strings.Contains(msg, "keys") {
		return "may not access these keys (ACL key pattern)"
	}
	if strings.Contains(msg, "channel") {
		return "may not use this pub/sub channel"
	}
	return "lacks a permission this command needs"
}

// isUnreachable: no connection could be made, including a TLS handshake that failed (an
// untrusted certificate reads like a wrong address to the user: the server is not usable).
func isUnreachable(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	var certErr *tls.CertificateVerificationError
	msg := err.Error()
	return errors.As(err, &opErr) || errors.As(err, &netErr) || errors.As(err, &certErr) ||
		strings.Contains(msg, "tls: ") || strings.Contains(msg, "x509: ") ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		strings.Contains(msg, "connection refused") || strings.Contains(msg, "i/o timeout")
}

// Passwords seen in URLs and $LOCKSCOPE_PASSWORD, removed from every message.
var (
	secretsMu sync.Mutex
	secrets   []string
)

func rememberSecret(s string) {
	if s == "" {
		return
	}
	secretsMu.Lock()
	defer secretsMu.Unlock()
	secrets = append(secrets, s, url.QueryEscape(s), url.PathEscape(s))
}

// scrub replaces every known password in s with "***".
func scrub(s string) string {
	secretsMu.Lock()
	defer secretsMu.Unlock()
	for _, p := range secrets {
		if p != "" {
			s = strings.ReplaceAll(s, p, "***")
		}
	}
	return s
}

// redactURL is raw without its password ("redis://user:***@host:6379"), safe to print.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxx")
			return scrub(strings.Replace(u.String(), ":xxx@", ":***@", 1))
		}
		return scrub(u.String())
	}
	// Unparsable: hide everything between the scheme and the last '@', and remember the
	// password-looking part so that no later message repeats it.
	start := strings.Index(raw, "://")
	at := strings.LastIndex(raw, "@")
	if start < 0 || at < start {
		return scrub(raw)
	}
	info := raw[start+3 : at]
	if _, pass, found := strings.Cut(info, ":"); found {
		rememberSecret(pass)
	}
	return scrub(raw[:start+3] + "***" + raw[at:])
}
