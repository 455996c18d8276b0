package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/lockscope/lockscope/internal/redistest"
)

// writeConfig writes a config file in a fresh XDG config directory and returns the
// environment entry that points at it.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "lockscope"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lockscope", "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return "XDG_CONFIG_HOME=" + dir
}

// TestContextConnectsEveryCommand: --context takes the URL, pattern, read-only and the
// password (from an environment variable or a command) of a named connection, for ls, show
// and release; flags given as well win; `contexts` lists them without their passwords; a
// password stored in the file is refused with one line (exit 2).
func TestContextConnectsEveryCommand(t *testing.T) {
	const secret = "s3cret-pw"
	srv := redistest.Start(t, redistest.WithArgs("--requirepass", secret))
	rdb := srv.Client(func(o *redis.Options) { o.Password = secret })
	ctx := context.Background()
	rdb.Set(ctx, "lock:ctx:a", "node-a:-:1:0123456789abcdef", time.Minute)
	rdb.Set(ctx, "other:ctx:b", "node-b:-:1:0123456789abcdef", time.Minute)
	xdg := writeConfig(t, `contexts:
  prod:
    redis: [redis://`+srv.Addr+`]
    pattern: "lock:ctx:*"
    read_only: true
    password_env: PROD_PW
  prodcmd:
    redis: [redis://`+srv.Addr+`]
    mode: standalone
    pattern: "other:*"
    password_cmd: echo `+secret+`
`)
	env := []string{xdg, "PROD_PW=" + secret}

	r := runCLI(t, cliOpts{env: env}, "ls", "--context", "prod")
	expectExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "lock:ctx:a") || strings.Contains(r.stdout, "other:ctx:b") {
		t.Fatalf("--context prod: not its pattern:\n%s", r)
	}
	r = runCLI(t, cliOpts{env: env}, "ls", "--context", "prodcmd")
	expectExit(t, r, exitOK)
	if !strings.Contains(r.stdout, "other:ctx:b") {
		t.Fatalf("--context prodcmd (password_cmd):\n%s", r)
	}
	r = runCLI(t, cliOpts{env: env}, "ls", "--context", "prod", "--pattern", "other:*")
	if !strings.Contains(r.stdout, "other:ctx:b") {
		t.Fatalf("--pattern does not win over the context's:\n%s", r)
	}
	r = runCLI(t, cliOpts{env: env}, "show", "--context", "prod", "lock:ctx:a")
	expectExit(t, r, exitOK)
	r = runCLI(t, cliOpts{env: env}, "release", "--context", "prod", "-y", "lock:ctx:a")
	expectExit(t, r, exitReadOnly) // the context is read-only

	r = runCLI(t, cliOpts{env: env}, "contexts")
	expectExit(t, r, exitOK)
	for _, want := range []string{"prod ", "prodcmd", "standalone", "lock:ctx:*", "env PROD_PW", "cmd"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("contexts does not show %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, secret) {
		t.Fatalf("contexts shows the password:\n%s", r)
	}

	r = runCLI(t, cliOpts{env: env}, "ls", "--context", "staging")
	expectExit(t, r, exitUsage)
	if !strings.Contains(r.stderr, `no context "staging"`) || !strings.Contains(r.stderr, "prod, prodcmd") {
		t.Errorf("unknown context:\n%s", r)
	}

	clear := []string{writeConfig(t, "contexts:\n  bad:\n    redis: [redis://"+srv.Addr+"]\n    password: "+secret+"\n")}
	r = runCLI(t, cliOpts{env: clear}, "ls", "--context", "bad")
	expectExit(t, r, exitUsage)
	if !strings.Contains(r.stderr, "a password in clear is refused") || strings.Contains(r.stderr, secret) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("a clear password is not refused in one line:\n%s", r)
	}
}

// A context that names no password source connects without a password: $LOCKSCOPE_PASSWORD,
// meant for whatever --redis says, is not sent to the context's server.
func TestContextDoesNotTakeTheEnvironmentsPassword(t *testing.T) {
	const secret = "env-pw"
	srv := redistest.Start(t, redistest.WithArgs("--requirepass", secret))
	env := []string{writeConfig(t, "contexts:\n  nopw:\n    redis: [redis://"+srv.Addr+"]\n"), "LOCKSCOPE_PASSWORD=" + secret}
	r := runCLI(t, cliOpts{env: env}, "ls", "--context", "nopw")
	expectExit(t, r, exitAuth)
	// Opting in is one line: password_env names the variable.
	env[0] = writeConfig(t, "contexts:\n  envpw:\n    redis: [redis://"+srv.Addr+"]\n    password_env: LOCKSCOPE_PASSWORD\n")
	expectExit(t, runCLI(t, cliOpts{env: env}, "ls", "--context", "envpw"), exitOK)
}

// The console's `:context` keeps the command line's --read-only, not the read_only of the
// context it started on: from a read-only context to a writable one, the actions come back.
func TestConsoleSwitchKeepsOnlyTheFlagsReadOnly(t *testing.T) {
	srv := redistest.Start(t)
	xdg := writeConfig(t, "contexts:\n  ro:\n    redis: [redis://"+srv.Addr+"]\n    read_only: true\n"+
		"  rw:\n    redis: [redis://"+srv.Addr+"]\n")
	getenv := func(k string) string {
		return map[string]string{"XDG_CONFIG_HOME": strings.TrimPrefix(xdg, "XDG_CONFIG_HOME=")}[k]
	}
	ctx := context.Background()
	for _, c := range []struct {
		args         []string
		wantReadOnly bool
	}{
		{[]string{"--context", "ro"}, false},
		{[]string{"--context", "ro", "--read-only"}, true},
		{[]string{"--context", "rw", "--read-only"}, true},
	} {
		cmd := &cobra.Command{Use: "lockscope"}
		addConnectionFlags(cmd)
		addContextFlag(cmd)
		addTUIFlags(cmd)
		cmd.SetContext(ctx)
		env := &contextEnv{base: getenv}
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		if err := env.apply(cmd); err != nil {
			t.Fatal(err)
		}
		opts := consoleOptions(cmd, IOStreams{}, env)
		if !opts.Conn.ReadOnly {
			t.Fatalf("%v: the console does not start read-only", c.args)
		}
		s, err := opts.Switch(ctx, "rw", "")
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if s.ReadOnly != c.wantReadOnly {
			t.Errorf("%v, then :context rw: read-only %v, want %v", c.args, s.ReadOnly, c.wantReadOnly)
		}
	}
}
