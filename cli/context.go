package cli

import (
	"context"
	"io"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockscope/lockscope/config"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/scanner"
	"github.com/lockscope/lockscope/ui"
)

// flagContext names a connection of the config file (package config).
const flagContext = "context"

// contextEnv is the environment the commands read: the process's, with the password of the
// --context connection ("" when it names none) as $LOCKSCOPE_PASSWORD once apply has fetched
// it, so that it reaches connect.Config.Password (and its redaction) like any password of the
// environment.
type contextEnv struct {
	base     func(string) string
	password string
	// sentinelPassword is the context's sentinel_password_env, as $LOCKSCOPE_SENTINEL_PASSWORD.
	sentinelPassword string
	fetched          bool
	// readOnlyFromContext: read-only comes from the context, not from --read-only (the
	// console's `:context` does not carry it to another context).
	readOnlyFromContext bool
}

func (e *contextEnv) getenv(name string) string {
	switch {
	case name == envPassword && e.fetched:
		return e.password
	case name == envSentinelPassword && e.fetched:
		return e.sentinelPassword
	}
	return e.base(name)
}

// addContextFlag registers --context on root (persistent: every command takes it).
func addContextFlag(root *cobra.Command) {
	root.PersistentFlags().String(flagContext, "", "use the named connection of the config file "+
		"($XDG_CONFIG_HOME/lockscope/config.yaml; `lockscope contexts` lists them); flags given as well win")
}

// apply fills the connection flags the command line did not give from --context's
// connection (the root's PersistentPreRunE, before any command reads them).
func (e *contextEnv) apply(cmd *cobra.Command) error {
	name, _ := cmd.Flags().GetString(flagContext)
	if name == "" {
		return nil
	}
	file, err := config.Load(e.base)
	if err != nil {
		return withExit(exitUsage, err)
	}
	c, err := file.Get(name)
	if err != nil {
		return withExit(exitUsage, err)
	}
	f := cmd.Flags()
	set := func(flag, value string) {
		if !f.Changed(flag) {
			_ = f.Set(flag, value) // the values are of the flags' types: no parse error
		}
	}
	if !f.Changed(flagRedis) {
		for _, u := range c.URLs {
			_ = f.Set(flagRedis, u)
		}
	}
	if modeFlag(cmd) == connect.Standalone { // a mode given on the command line wins
		switch c.ResolvedMode() {
		case config.ModeCluster:
			set(flagCluster, "true")
		case config.ModeRedlock:
			set(flagRedlock, "true")
		case config.ModeIndependent:
			set(flagIndependent, "true")
		}
	}
	if c.SentinelMaster != "" && modeFlag(cmd) == connect.Standalone {
		set(flagSentinelMaster, c.SentinelMaster)
	}
	if c.SentinelUser != "" {
		set(flagSentinelUser, c.SentinelUser)
	}
	if c.Pattern != "" {
		set(flagPattern, c.Pattern)
	}
	if c.ReadOnly && !f.Changed(flagReadOnly) {
		e.readOnlyFromContext = true
		set(flagReadOnly, "true")
	}
	if c.TLSCA != "" {
		set(flagTLSCA, c.TLSCA)
	}
	if c.TLSInsecure {
		set(flagTLSInsecure, "true")
	}
	pw, err := c.FetchPassword(cmd.Context(), e.base)
	if err != nil {
		return withExit(exitUsage, err)
	}
	spw, err := c.FetchSentinelPassword(e.base)
	if err != nil {
		return withExit(exitUsage, err)
	}
	// Also when the context names no password: $LOCKSCOPE_PASSWORD is not sent to its servers.
	e.password, e.sentinelPassword, e.fetched = pw, spw, true
	return nil
}

// newContextsCmd is `lockscope contexts`: the connections of the config file.
func newContextsCmd(ios IOStreams, getenv func(string) string) *cobra.Command {
	return &cobra.Command{
		Use:   "contexts",
		Short: "List the named connections of the config file (use one with --context NAME)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			file, err := config.Load(getenv)
			if err != nil {
				return withExit(exitUsage, err)
			}
			return writeContexts(ios, file)
		},
	}
}

// writeContexts lists file's contexts, one a line, in aligned columns.
func writeContexts(ios IOStreams, file *config.File) error {
	if len(file.Contexts) == 0 {
		return printf(ios.Out, "no contexts in %s (docs/cli.md, Contexts)\n", file.Path)
	}
	tw := tabwriter.NewWriter(ios.Out, 0, 0, 2, ' ', 0)
	const row = "%s\t%s\t%s\t%s\t%s\t%s\n"
	printf(tw, row, "NAME", "MODE", "REDIS", "PATTERN", "READ-ONLY", "PASSWORD")
	for _, name := range file.Names() {
		c := file.Contexts[name]
		readOnly := "no"
		if c.ReadOnly {
			readOnly = "yes"
		}
		printf(tw, row, name, c.ResolvedMode(), strings.Join(c.URLs, ","), patternOrDefault(c.Pattern), readOnly, c.PasswordSource())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printf(ios.Out, "(%s)\n", file.Path)
}

// patternOrDefault is a context's pattern, or "-" when it leaves --pattern's default.
func patternOrDefault(pattern string) string {
	if pattern == "" {
		return "-"
	}
	return pattern
}

// contextConnection is the connection `lockscope --context name` has, read from the config
// file with the environment getenv (the process's: not another context's password).
func contextConnection(ctx context.Context, name string, getenv func(string) string) (connection, error) {
	cmd := &cobra.Command{Use: "lockscope"}
	addConnectionFlags(cmd)
	addContextFlag(cmd)
	cmd.SetContext(ctx)
	if err := cmd.ParseFlags([]string{"--" + flagContext, name}); err != nil {
		return connection{}, err
	}
	env := &contextEnv{base: getenv}
	if err := env.apply(cmd); err != nil {
		return connection{}, err
	}
	if err := validateConnectionFlags(cmd); err != nil {
		return connection{}, err
	}
	return connectionFlags(cmd, env.getenv), nil
}

// consoleSwitch is the console's `:context NAME` and `:pattern GLOB`: a new connection as
// `--context NAME` gives it (or the current one's settings under another pattern), keeping
// the console's own --read-only (readOnly: given on the command line; a context may add
// read-only, never remove it), --stuck-after and --operator.
func consoleSwitch(first connection, firstLabel string, getenv func(string) string, scanBudget float64, readOnly bool) ui.SwitchFunc {
	var mu sync.Mutex
	cur, curName := first, firstLabel
	return func(ctx context.Context, name, pattern string) (ui.Session, error) {
		mu.Lock()
		defer mu.Unlock()
		conn, label := cur, curName
		if name != "" {
			c, err := contextConnection(ctx, name, getenv)
			if err != nil {
				return ui.Session{}, err
			}
			c.ReadOnly = c.ReadOnly || readOnly
			c.StuckAfter, c.Operator = first.StuckAfter, first.Operator
			conn, label = c, "context "+name
		}
		if pattern != "" {
			conn.Pattern = pattern
		}
		t, err := conn.open(ctx, io.Discard) // instances down show in the console's status bar
		if err != nil {
			return ui.Session{}, err
		}
		cur, curName = conn, label
		return ui.Session{
			Target:   t,
			Scanner:  scanner.New(t, scanner.Options{Pattern: conn.Pattern, ScanBudget: scanBudget}),
			Admin:    conn.admin(t),
			ReadOnly: conn.ReadOnly,
			Label:    strings.TrimPrefix(label+", ", ", ") + patternOrDefault(conn.Pattern),
			Close:    t.Close,
		}, nil
	}
}
