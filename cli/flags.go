package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
	"github.com/spf13/cobra"
)

// Names of the shared connection flags (persistent on the root command, so every command,
// the TUI and the demo included, has them). connectionFlags turns them into a connection.
const (
	flagRedis       = "redis"
	flagCluster     = "cluster"
	flagRedlock     = "redlock"
	flagIndependent = "independent"
	flagTLSCA       = "tls-ca"
	flagTLSInsecure = "tls-insecure"
	flagPattern     = "pattern"
	flagReadOnly    = "read-only"
	flagStuckAfter  = "stuck-after"
	flagOperator    = "operator"
	// The --redis URLs name sentinels that monitor the master of this name; their own user.
	flagSentinelMaster = "sentinel-master"
	flagSentinelUser   = "sentinel-user"
)

// Environment variables read by the connection flags.
const (
	envRedisURL = "REDIS_URL"          // default --redis when the flag is not given
	envPassword = "LOCKSCOPE_PASSWORD" // password for URLs that carry none
	// envSentinelPassword is the sentinels' own password (no flag: passwords never on argv).
	envSentinelPassword = "LOCKSCOPE_SENTINEL_PASSWORD"
)

const defaultRedisURL = "redis://127.0.0.1:6379"

// addConnectionFlags registers the shared connection flags on root as persistent flags.
// --redis has no flag default on purpose: $REDIS_URL may hold a password and cobra would print
// it in --help; the default is applied in connectionFlags instead.
func addConnectionFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringArray(flagRedis, nil, "Redis URL: redis://, rediss:// (TLS) or unix://; repeat for several servers "+
		"(with --redlock, --independent or --cluster). Default $"+envRedisURL+", else "+defaultRedisURL+
		". Password from the URL or $"+envPassword)
	f.Bool(flagCluster, false, "the --redis URL(s) are seeds of a Redis Cluster; every node is reached with the first URL's "+
		"user, password and TLS. Without it a URL that names a cluster node reads the whole cluster anyway")
	f.Bool(flagRedlock, false, "the --redis URLs are the instances of one Redlock set (each lock is on all of them)")
	f.Bool(flagIndependent, false, "the --redis URLs are separate servers, each with locks of its own")
	f.String(flagSentinelMaster, "", "the --redis URLs are sentinels, and NAME the master they monitor: lockscope follows it "+
		"through failovers (or give one redis+sentinel://host:port,host:port/NAME URL). The URLs' user and password are "+
		"the master's; the sentinels' are --"+flagSentinelUser+" and $"+envSentinelPassword)
	f.String(flagSentinelUser, "", "ACL user of the sentinels (with --"+flagSentinelMaster+"); password from $"+envSentinelPassword)
	f.String(flagTLSCA, "", "PEM file of the CA that signs the servers' TLS certificates (implies TLS)")
	f.Bool(flagTLSInsecure, false, "do not verify the servers' TLS certificates (implies TLS)")
	f.String(flagPattern, scanner.DefaultPattern, "key pattern of the locks (SCAN MATCH)")
	f.Bool(flagReadOnly, false, "refuse every action that changes Redis (exit code 3)")
	f.Duration(flagStuckAfter, present.DefaultStuckAfter, "flag locks held longer than this as stuck")
	f.String(flagOperator, "", "operator name recorded in the audit trail (default: OS user@host)")
	// Bad flags are usage errors (exit code 2), in every subcommand.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withExit(exitUsage, err) })
}

// validateConnectionFlags refuses values of the shared flags that cannot mean what they say,
// before any command runs (exit code 2), instead of quietly using the default.
func validateConnectionFlags(cmd *cobra.Command) error {
	f := cmd.Flags()
	// GetStringArray reads [""] back as no URL at all (then the default): ask the value itself.
	if urls := f.Lookup(flagRedis).Value.(interface{ GetSlice() []string }).GetSlice(); slices.Contains(urls, "") {
		return withExit(exitUsage, fmt.Errorf("--%s '': give a URL (default $%s, else %s)", flagRedis, envRedisURL, defaultRedisURL))
	}
	if pattern, _ := f.GetString(flagPattern); pattern == "" {
		return withExit(exitUsage, fmt.Errorf("--%s '': give a key pattern (default %s)", flagPattern, scanner.DefaultPattern))
	}
	if stuck, _ := f.GetDuration(flagStuckAfter); stuck <= 0 {
		return withExit(exitUsage, fmt.Errorf("--%s %v: want a duration above 0 (default %v)", flagStuckAfter, stuck, present.DefaultStuckAfter))
	}
	return checkModeFlags(cmd)
}

// connection is what the shared flags say about the deployment: where it is and how to treat
// it. Every command that talks to Redis has one in its options.
type connection struct {
	Config     connect.Config
	RedisGiven bool          // --redis was given (the demo uses its embedded servers otherwise)
	Pattern    string        // --pattern, default lock:*
	ReadOnly   bool          // --read-only
	StuckAfter time.Duration // --stuck-after, default 5m
	Operator   string        // --operator; "" lets actions use the OS user@host
}

// connectionFlags reads the shared flags of cmd. The Redis URLs are the --redis flags, else
// $REDIS_URL, else redis://127.0.0.1:6379; the fallback password is $LOCKSCOPE_PASSWORD.
func connectionFlags(cmd *cobra.Command, getenv func(string) string) connection {
	f := cmd.Flags()
	var c connection
	c.Config.URLs, _ = f.GetStringArray(flagRedis)
	c.RedisGiven = f.Changed(flagRedis)
	if len(c.Config.URLs) == 0 {
		c.Config.URLs = []string{defaultRedisURL}
		if env := getenv(envRedisURL); env != "" {
			c.Config.URLs = []string{env}
		}
	}
	c.Config.Mode = modeFlag(cmd)
	c.Config.TLSCAFile, _ = f.GetString(flagTLSCA)
	c.Config.TLSInsecure, _ = f.GetBool(flagTLSInsecure)
	c.Config.Password = getenv(envPassword)
	c.Config.SentinelMaster, _ = f.GetString(flagSentinelMaster)
	c.Config.SentinelUser, _ = f.GetString(flagSentinelUser)
	c.Config.SentinelPassword = getenv(envSentinelPassword)
	if c.Config.Mode == connect.Standalone && c.Config.SentinelMaster != "" {
		c.Config.Mode = connect.Sentinel
	}
	c.Pattern, _ = f.GetString(flagPattern)
	c.ReadOnly, _ = f.GetBool(flagReadOnly)
	c.StuckAfter, _ = f.GetDuration(flagStuckAfter)
	c.Operator, _ = f.GetString(flagOperator)
	return c
}

// modeFlags are the flags that say what several --redis URLs are, and the mode each names.
var modeFlags = []struct {
	name string
	mode connect.Mode
}{{flagCluster, connect.Cluster}, {flagRedlock, connect.Redlock}, {flagIndependent, connect.Independent}}

// modeFlag is the mode the command line names (connect.Standalone when none). A flag of
// another type under one of the names (the demo's --redlock N) names none.
func modeFlag(cmd *cobra.Command) connect.Mode {
	for _, m := range modeFlags {
		if on, err := cmd.Flags().GetBool(m.name); err == nil && on {
			return m.mode
		}
	}
	return connect.Standalone
}

// checkModeFlags refuses more than one of --cluster, --redlock, --independent and
// --sentinel-master.
func checkModeFlags(cmd *cobra.Command) error {
	var given []string
	for _, m := range modeFlags {
		if on, err := cmd.Flags().GetBool(m.name); err == nil && on {
			given = append(given, "--"+m.name)
		}
	}
	if name, _ := cmd.Flags().GetString(flagSentinelMaster); name != "" {
		given = append(given, "--"+flagSentinelMaster)
	}
	if len(given) > 1 {
		return withExit(exitUsage, fmt.Errorf("%s: give one of them", strings.Join(given, " and ")))
	}
	return nil
}

// open connects (connect.Open) and reports on stderr what it decided on its own (a cluster
// node given without --cluster) and Redlock or independent servers that do not answer, as
// warnings; the error is ready to return from a run function (exit code, no password).
func (c connection) open(ctx context.Context, stderr io.Writer) (connect.Target, error) {
	t, down, err := connect.Open(ctx, c.Config)
	if err != nil {
		return connect.Target{}, describeError(t, err)
	}
	if t.Notice != "" {
		printf(stderr, "lockscope: note: %s\n", t.Notice)
	}
	for _, err := range down {
		printf(stderr, "lockscope: warning: %s\n", err)
	}
	return t, nil
}

// scanner is the census of target under --pattern.
func (c connection) scanner(target connect.Target) *scanner.Scanner {
	return scanner.New(target, scanner.Options{Pattern: c.Pattern})
}

// admin is the actions.Admin for target with --operator and --read-only.
func (c connection) admin(target connect.Target) *actions.Admin {
	return actions.New(target, c.adminOptions())
}

func (c connection) adminOptions() actions.Options {
	return actions.Options{Operator: c.Operator, ReadOnly: c.ReadOnly}
}
