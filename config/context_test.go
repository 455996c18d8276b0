package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// load writes yaml as the config file of a fresh XDG directory and loads it.
func load(t *testing.T, yaml string) (*File, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "lockscope"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lockscope", "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(func(k string) string { return map[string]string{"XDG_CONFIG_HOME": dir}[k] })
}

func TestLoadRefusesWhatItCannotUseSafely(t *testing.T) {
	for yaml, want := range map[string]string{
		"contexts:\n  a:\n    redis: [redis://h:1]\n    password: x\n":                           "a password in clear is refused",
		"contexts:\n  a:\n    redis: [redis://u:pw@h:1]\n":                                       "a password in a redis URL is refused",
		"contexts:\n  a:\n    redis: [redis://h:1, redis://h:2]\n    mode: standalone\n":         "2 redis URLs: say what they are with mode redlock, independent or cluster",
		"contexts:\n  a:\n    redis: [redis://h:1, redis://h:2]\n":                               "2 redis URLs: say what they are",
		"contexts:\n  a:\n    redis: [redis://h:1]\n    mode: sentinel\n":                        "mode sentinel: give sentinel_master",
		"contexts:\n  a:\n    redis: [redis://h:1]\n    mode: primary\n":                         `mode "primary"`,
		"contexts:\n  a:\n    redis: [redis://h:1]\n    mode: cluster\n    sentinel_master: m\n": "mode cluster with sentinel_master",
		"contexts:\n  a:\n    redis: [\"redis+sentinel://u:pw@h:1,h:2/m\"]\n":                    "a password in a redis URL is refused",
		"contexts:\n  a:\n    redis: [\"redis+sentinel://h:1/m?sentinel_password=x\"]\n":         "use sentinel_password_env",
		"contexts:\n  a:\n    redis: [redis://h:1]\n    pattrn: x\n":                             "field pattrn not found",
		"contexts:\n  a:\n    mode: cluster\n":                                                   "no redis URL",
		// YAML splits an unquoted URL of several sentinels at its commas.
		"contexts:\n  a:\n    redis: [redis+sentinel://h:1,h:2/m]\n": `"h:2/m" is no URL: quote a redis+sentinel:// URL`,
	} {
		_, err := load(t, yaml)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
}

func TestContextDefaultsAndPassword(t *testing.T) {
	f, err := load(t, "contexts:\n  one:\n    redis: [redis://h:1]\n  set:\n    redis: [redis://h:1, redis://h:2, redis://h:3]\n    mode: independent\n"+
		"    password_cmd: printf 'pw-from-cmd\\nrest'\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Names(), ","); got != "one,set" {
		t.Fatalf("names %q", got)
	}
	one, _ := f.Get("one")
	set, _ := f.Get("set")
	if one.ResolvedMode() != ModeStandalone || set.ResolvedMode() != ModeIndependent {
		t.Errorf("modes %q %q", one.ResolvedMode(), set.ResolvedMode())
	}
	sf, err := load(t, "contexts:\n  s:\n    redis: [redis://h:1, redis://h:2]\n    sentinel_master: m\n    sentinel_password_env: SPW\n"+
		"  u:\n    redis: [\"redis+sentinel://h:1,h:2/m\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	s, u := sf.Contexts["s"], sf.Contexts["u"]
	if s.ResolvedMode() != ModeSentinel || u.ResolvedMode() != ModeSentinel {
		t.Errorf("sentinel modes %q %q", s.ResolvedMode(), u.ResolvedMode())
	}
	if pw, err := s.FetchSentinelPassword(func(k string) string { return map[string]string{"SPW": "spw"}[k] }); err != nil || pw != "spw" {
		t.Errorf("sentinel_password_env: %q %v", pw, err)
	}
	if _, err := s.FetchSentinelPassword(func(string) string { return "" }); err == nil {
		t.Error("an empty sentinel_password_env is taken")
	}
	if pw, err := set.FetchPassword(context.Background(), func(string) string { return "" }); err != nil || pw != "pw-from-cmd" {
		t.Errorf("password_cmd: %q %v", pw, err)
	}
	if _, err := f.Get("two"); err == nil || !strings.Contains(err.Error(), "known: one, set") {
		t.Errorf("unknown context: %v", err)
	}
	missing, err := Load(func(k string) string { return map[string]string{"XDG_CONFIG_HOME": t.TempDir()}[k] })
	if err != nil || len(missing.Contexts) != 0 {
		t.Errorf("a missing file is not an empty one: %v", err)
	}
}

// A password_cmd that runs past its deadline is stopped even when a command it started
// still holds its output open (the shell is killed, its child is not).
func TestPasswordCmdTimeoutWithChild(t *testing.T) {
	c := Context{Name: "slow", PasswordCmd: "sleep 3; echo pw"}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.FetchPassword(ctx, func(string) string { return "" })
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("FetchPassword returned after %v, past its deadline", took)
	}
	if err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("err %v, want a timeout", err)
	}
}

// A config file anyone may write is refused when it holds a password_cmd: anyone could make
// lockscope run their command as its user.
func TestLoadRefusesAWorldWritablePasswordCmd(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	getenv := func(k string) string { return map[string]string{EnvConfig: path}[k] }
	for _, c := range []struct {
		yaml string
		ok   bool
	}{
		{"contexts:\n  a:\n    redis: [redis://h:1]\n    password_cmd: echo pw\n", false},
		{"contexts:\n  a:\n    redis: [redis://h:1]\n    password_env: PW\n", true},
	} {
		if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o666); err != nil {
			t.Fatal(err)
		}
		_, err := Load(getenv)
		if ok := err == nil; ok != c.ok || !ok && !strings.Contains(err.Error(), "chmod o-w") {
			t.Errorf("%q, mode 0666: %v", c.yaml, err)
		}
	}
}

// A sentinel user with an '@' in the query of a URL of several sentinels is no password in
// the URL (the check looks at the authority only).
func TestSentinelUserWithAtInQuery(t *testing.T) {
	f, err := load(t, "contexts:\n  a:\n    redis: [\"redis+sentinel://h:1,h:2/m?sentinel_username=svc@corp\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := f.Get("a"); c.ResolvedMode() != ModeSentinel {
		t.Fatalf("mode %q, want sentinel", c.ResolvedMode())
	}
	// The userinfo of one still is.
	if _, err := load(t, "contexts:\n  a:\n    redis: [\"redis+sentinel://u:pw@h:1,h:2/m?sentinel_username=svc@corp\"]\n"); err == nil ||
		!strings.Contains(err.Error(), "a password in a redis URL is refused") {
		t.Fatalf("a password in the userinfo: %v", err)
	}
}
