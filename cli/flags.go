package cli

import (
	"os"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/scanner"
	"github.com/spf13/cobra"
)

// Names of the shared connection flags (persistent on the root command, so every command,
// the TUI and the demo included, has them). target.go turns them into a scanner.Target.
const (
	flagRedis       = "redis"
	flagCluster     = "cluster"
	flagTLSCA       = "tls-ca"
	flagTLSInsecure = "tls-insecure"
	flagPattern     = "pattern"
	flagReadOnly    = "read-only"
	flagStuckAfter  = "stuck-after"
	flagOperator    = "operator"
)

// Environment variables read by the connection flags.
const (
	envRedisURL = "REDIS_URL"          // default --redis when the flag is not given
	envPassword = "LOCKSCOPE_PASSWORD" // password for URLs that carry none
)

const (
	defaultRedisURL   = "redis://127.0.0.1:6379"
	defaultPattern    = "lock:*"
	defaultStuckAfter = 5 * time.Minute
)

// addConnectionFlags registers the shared connection flags on root as persistent flags.
// --redis has no flag default on purpose: $REDIS_URL may hold a password and cobra would print
// it in --help; the default is applied in redisURLs instead.
func addConnectionFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringArray(flagRedis, nil, "Redis URL: redis://, rediss:// (TLS) or unix://; repeat for N independent "+
		"instances (Redlock). Default $"+envRedisURL+", else "+defaultRedisURL+". Password from the URL or $"+envPassword)
	f.Bool(flagCluster, false, "the --redis URL(s) are seeds of a Redis Cluster")
	f.String(flagTLSCA, "", "PEM file of the CA that signs the servers' TLS certificates (implies TLS)")
	f.Bool(flagTLSInsecure, false, "do not verify the servers' TLS certificates (implies TLS)")
	f.String(flagPattern, defaultPattern, "key pattern of the locks (SCAN MATCH)")
	f.Bool(flagReadOnly, false, "refuse every action that changes Redis (exit code 3)")
	f.Duration(flagStuckAfter, defaultStuckAfter, "flag locks held longer than this as stuck")
	f.String(flagOperator, "", "operator name recorded in the audit trail (default: OS user@host)")
	// Bad flags are usage errors (exit code 2), in every subcommand.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withExit(exitUsage, err) })
}

// redisURLs is the list of Redis URLs to connect to: the --redis flags, else $REDIS_URL,
// else redis://127.0.0.1:6379.
func redisURLs(cmd *cobra.Command) []string {
	if urls, _ := cmd.Flags().GetStringArray(flagRedis); len(urls) > 0 {
		return urls
	}
	if env := os.Getenv(envRedisURL); env != "" {
		return []string{env}
	}
	return []string{defaultRedisURL}
}

// redisFlagGiven reports whether --redis was given on the command line (the demo uses its own
// embedded server otherwise and never falls back to $REDIS_URL or 127.0.0.1:6379).
func redisFlagGiven(cmd *cobra.Command) bool {
	f := cmd.Flags().Lookup(flagRedis)
	return f != nil && f.Changed
}

// clusterFlag reports --cluster.
func clusterFlag(cmd *cobra.Command) bool {
	v, _ := cmd.Flags().GetBool(flagCluster)
	return v
}

// patternFlag is --pattern (default lock:*).
func patternFlag(cmd *cobra.Command) string {
	v, _ := cmd.Flags().GetString(flagPattern)
	if v == "" {
		return defaultPattern
	}
	return v
}

// readOnlyFlag reports --read-only.
func readOnlyFlag(cmd *cobra.Command) bool {
	v, _ := cmd.Flags().GetBool(flagReadOnly)
	return v
}

// stuckAfterFlag is --stuck-after (default 5m).
func stuckAfterFlag(cmd *cobra.Command) time.Duration {
	v, err := cmd.Flags().GetDuration(flagStuckAfter)
	if err != nil || v <= 0 {
		return defaultStuckAfter
	}
	return v
}

// operatorFlag is --operator, else the OS user@host.
func operatorFlag(cmd *cobra.Command) string {
	if v, _ := cmd.Flags().GetString(flagOperator); v != "" {
		return v
	}
	return actions.DefaultOperator()
}

// newAdmin returns the actions.Admin for target with the operator and --read-only of cmd.
func newAdmin(cmd *cobra.Command, target scanner.Target) *actions.Admin {
	return actions.New(target, actions.Options{Operator: operatorFlag(cmd), ReadOnly: readOnlyFlag(cmd)})
}
