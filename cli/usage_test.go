package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lockscope/lockscope/internal/redistest"
)

// oneLine fails the test unless stderr is one line that contains want.
func oneLine(t *testing.T, r cliRun, want string) {
	t.Helper()
	if !strings.Contains(r.stderr, want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("want one line on stderr saying %q:\n%s", want, r)
	}
}

// Values that cannot mean what they say are usage errors, never a silent default.
func TestCLIUsageErrors(t *testing.T) {
	s := redistest.Start(t)
	url := redisURL(s.Addr)
	cases := []struct {
		args []string
		says string
	}{
		{[]string{"lsx"}, `unknown command "lsx"`},
		{[]string{"version", "extra"}, `unknown command "extra"`},
		{[]string{"tui", "extra"}, `unknown command "extra"`},
		{[]string{"contexts", "extra"}, `unknown command "extra"`},
		{[]string{"ls", "--stuck-after", "0", "--redis", url}, "--stuck-after 0s: want a duration above 0"},
		{[]string{"ls", "--stuck-after", "-1m", "--redis", url}, "--stuck-after -1m0s: want a duration above 0"},
		{[]string{"ls", "--pattern", "", "--redis", url}, "--pattern '': give a key pattern"},
		{[]string{"ls", "--redis", ""}, "--redis '': give a URL"},
		{[]string{"ls", "--sort", "size", "--redis", url}, `--sort "size"`},
		{[]string{"ls", "--limit", "-1", "--redis", url}, "--limit -1"},
		{[]string{"audit", "--limit", "0", "--redis", url}, "--limit 0"},
		{[]string{"extend", "lock:x", "--ttl", "0", "--yes", "--redis", url}, "--ttl is required and must be at least 1ms"},
		{[]string{"demo", "--headless", "--duration", "-1s"}, "--duration -1s"},
		{[]string{"demo", "--headless", "--workers", "65"}, "--workers 65 (want 1..64)"},
		{[]string{"tui", "--scan-budget", "0", "--redis", url}, "more than 0"},
		{[]string{"tui", "--group", "segment:0", "--redis", url}, "--group: key group rule \"segment:0\""},
		{[]string{"--group", "regex:(", "--redis", url}, "--group: key group rule"},
		{[]string{"demo", "--headless", "--group", "prefix:"}, "--group: key group rule"},
		{[]string{"demo", "--headless", "--resources", "33"}, "--resources 33 (want 1..32)"},
		{[]string{"demo", "--headless", "--ttl", "100ms"}, "--ttl 100ms is too short"},
		{[]string{"demo", "--headless", "--read-only", "--redis", url}, "demo cannot run with --read-only"},
		{[]string{"demo", "--headless", "--read-only"}, "demo cannot run with --read-only"},
	}
	for _, c := range cases {
		r := runCLI(t, cliOpts{}, c.args...)
		if r.code != exitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", c.args, r.code, exitUsage, r)
			continue
		}
		oneLine(t, r, c.says)
	}
	if keys := s.Client().Keys(t.Context(), "*").Val(); len(keys) != 0 {
		t.Errorf("demo --read-only wrote %v", keys)
	}
}

// Connection failures that used to be a bare exit 1 (or a bare EOF) name their cause.
func TestCLIConnectionHints(t *testing.T) {
	s := redistest.Start(t)
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	cases := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"ls", "--cluster", "--redis", redisURL(s.Addr)}, exitUsage, "is not a cluster node"},
		{[]string{"show", "lock:x", "--cluster", "--redis", redisURL(s.Addr)}, exitUsage, "drop --cluster"},
		{[]string{"ls", "--redis", redisURL(s.Addr) + "/99"}, exitUsage, "the database number in --redis does not exist"},
		{[]string{"ls", "--redis", "redis://" + strings.TrimPrefix(web.URL, "http://")}, exitUnreachable, "not in Redis' protocol"},
	}
	for _, c := range cases {
		r := runCLI(t, cliOpts{}, c.args...)
		if r.code != c.code {
			t.Errorf("%q: exit %d, want %d\n%s", c.args, r.code, c.code, r)
			continue
		}
		oneLine(t, r, c.says)
	}
}
