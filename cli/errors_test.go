package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

const testPassword = "Pa55-w0rd_e2e-9731"

func TestCLIPasswordIsNeverPrinted(t *testing.T) {
	s := redistest.Start(t, redistest.WithArgs("--requirepass", testPassword))
	admin := s.Client(func(o *redis.Options) { o.Password = testPassword })
	seedLocks(t, admin)
	good := fmt.Sprintf("redis://:%s@%s", testPassword, s.Addr)
	port, _ := redistest.FreePort()
	dead := fmt.Sprintf("redis://user:%s@127.0.0.1:%d", testPassword, port)

	runs := []struct {
		args []string
		env  []string
		code int
	}{
		{[]string{"ls", "--redis", good}, nil, exitOK},
		{[]string{"ls", "--json", "--redis", good}, nil, exitOK},
		{[]string{"show", "lock:old", "--redis", good}, nil, exitOK},
		{[]string{"show", "lock:none", "--redis", good}, nil, exitGone},
		{[]string{"release", "lock:old", "--expect", "x", "--redis", good}, nil, exitChanged},
		{[]string{"release", "lock:old", "--yes", "--redis", good}, nil, exitOK},
		{[]string{"extend", "lock:forever", "--ttl", "1m", "--yes", "--read-only", "--redis", good}, nil, exitReadOnly},
		{[]string{"audit", "--redis", good}, nil, exitOK},
		{[]string{"ls", "--redis", dead}, nil, exitUnreachable},
		{[]string{"ls", "--redis", "redis://:" + testPassword + "@" + s.Addr + "/x"}, nil, exitUsage},
		{[]string{"ls", "--redis", "http://:" + testPassword + "@" + s.Addr}, nil, exitUsage},
		{[]string{"ls", "--redis", "redis://:" + testPassword + "@" + s.Addr + ":bad:port"}, nil, exitUsage},
		{[]string{"ls", "--redis", "redis://" + s.Addr}, []string{envPassword + "=" + testPassword}, exitOK},
		{[]string{"ls"}, []string{envRedisURL + "=" + good}, exitOK},
		{[]string{"ls", "--redis", "redis://:wrong" + testPassword + "@" + s.Addr}, nil, exitAuth},
		{[]string{"ls", "--help"}, []string{envRedisURL + "=" + good}, exitOK},
	}
	for _, run := range runs {
		r := runCLI(t, cliOpts{env: run.env}, run.args...)
		if r.code != run.code {
			t.Errorf("%v: exit %d, want %d\n%s", run.args, r.code, run.code, r)
		}
		if strings.Contains(r.stdout+r.stderr, testPassword) {
			t.Errorf("%v printed the password:\n%s", run.args, r)
		}
	}
}

func TestCLIWrongPassword(t *testing.T) {
	s := redistest.Start(t, redistest.WithArgs("--requirepass", testPassword))
	for _, url := range []string{"redis://:nope@" + s.Addr, "redis://" + s.Addr} {
		r := runCLI(t, cliOpts{}, "ls", "--redis", url)
		expectExit(t, r, exitAuth)
		if !strings.Contains(r.stderr, "authentication failed") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%s: want one line saying authentication failed:\n%s", url, r)
		}
	}
}

func TestCLIMissingACLPermissionNamesTheCommand(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	seedLocks(t, c)
	ctx := context.Background()
	users := map[string][]string{
		"noeval": {"-evalsha", "-eval"},
		"nodel":  {"-del"},
		"noscan": {"-scan"},
	}
	for user, denied := range users {
		args := append([]any{"ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all"}, toAny(denied)...)
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		user    string
		args    []string
		command string
	}{
		{"noeval", []string{"release", "lock:old", "--expect", oldLock}, "EVALSHA"},
		{"nodel", []string{"release", "lock:old", "--expect", oldLock}, "DEL"},
		{"noscan", []string{"ls"}, "SCAN"},
	}
	for _, tc := range cases {
		r := runCLI(t, cliOpts{}, append(tc.args, "--redis", "redis://"+tc.user+":pw@"+s.Addr)...)
		expectExit(t, r, exitPermission)
		if !strings.Contains(r.stderr, "may not run "+tc.command) {
			t.Errorf("%s %v: the message does not name %s:\n%s", tc.user, tc.args, tc.command, r)
		}
	}
	if v, _ := redistest.Value(t, c, "lock:old"); v != oldLock {
		t.Fatal("lock:old changed")
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func TestCLIUnreachableNamesTheAddress(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for _, args := range [][]string{{"ls"}, {"show", "lock:x"}, {"release", "lock:x", "--expect", "v"}, {"audit"}} {
		r := runCLI(t, cliOpts{}, append(args, "--redis", "redis://"+addr)...)
		expectExit(t, r, exitUnreachable)
		if !strings.Contains(r.stderr, "cannot reach Redis at "+addr) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: want one line naming %s:\n%s", args, addr, r)
		}
	}
	// A unix socket that does not exist, too.
	r := runCLI(t, cliOpts{}, "ls", "--redis", "unix:///nonexistent/redis.sock")
	expectExit(t, r, exitUnreachable)
	if !strings.Contains(r.stderr, "/nonexistent/redis.sock") {
		t.Errorf("unix socket not named:\n%s", r)
	}
}

func TestCLIBadURLs(t *testing.T) {
	for _, url := range []string{"http://127.0.0.1:1", "redis://127.0.0.1:99999", "redis://127.0.0.1:1/notadb", "unix://", "::nonsense"} {
		r := runCLI(t, cliOpts{}, "ls", "--redis", url)
		expectExit(t, r, exitUsage)
		if !strings.Contains(r.stderr, "bad --redis URL") {
			t.Errorf("%s: %s", url, r)
		}
	}
	r := runCLI(t, cliOpts{}, "ls", "--tls-ca", "/nonexistent.pem", "--redis", "rediss://127.0.0.1:1")
	expectExit(t, r, exitUsage)
}
