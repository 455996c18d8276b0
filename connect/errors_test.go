package connect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

type deniedInScript struct{ command string }

func (e deniedInScript) Error() string         { return "NOPERM in a script" }
func (e deniedInScript) DeniedCommand() string { return e.command }

func TestClassifyKinds(t *testing.T) {
	target := Target{secrets: secretsOf(Config{Password: "hunter2"})}
	cases := []struct {
		err  error
		kind error // nil: not a connection failure
		says string
	}{
		{errors.New("WRONGPASS invalid username-password pair"), ErrAuth, "authentication failed at h:1"},
		{errors.New("NOPERM User u has no permissions to run the 'scan' command"), ErrPermission, "may not run SCAN"},
		{deniedInScript{"DEL"}, ErrPermission, "may not run DEL"},
		{errors.New("dial tcp h:1: connect: connection refused (pw hunter2)"), ErrUnreachable, "cannot reach Redis at h:1"},
		{fmt.Errorf("every server is down: %w", ErrUnreachable), ErrUnreachable, "cannot reach Redis at h:1"},
		{errors.New("ERR This instance has cluster support disabled"), ErrBadConfig, "drop --cluster"},
		{errors.New("redis: cluster has no nodes"), ErrUnreachable, "no node of the cluster at h:1 serves a slot"},
		{errors.New("ERR DB index is out of range"), ErrBadConfig, "`databases` setting"},
		{errors.New(`redis: invalid reply: "HTTP/1.1 400 Bad Request"`), ErrUnreachable, "not in Redis' protocol"},
		{fmt.Errorf("read: %w", io.EOF), ErrUnreachable, "use a rediss:// URL"},
		{errors.New("something else"), nil, "something else"},
	}
	for _, c := range cases {
		got := target.classifyAt(c.err, "h:1")
		var e *Error
		if !errors.As(got, &e) || e.Kind != c.kind || !strings.Contains(got.Error(), c.says) {
			t.Errorf("classifyAt(%v) = %v (kind %v), want kind %v saying %q", c.err, got, e.Kind, c.kind, c.says)
		}
		if c.kind != nil && !errors.Is(got, c.kind) {
			t.Errorf("errors.Is(%v, %v) is false", got, c.kind)
		}
		if strings.Contains(got.Error(), "hunter2") {
			t.Errorf("the password was not redacted: %q", got)
		}
	}
	if got := (Target{tls: true}).classifyAt(io.EOF, "h:1"); strings.Contains(got.Error(), "rediss://") {
		t.Errorf("a TLS connection closed is told to use TLS: %v", got)
	}
	// rediss:// to a plain server: it waits for a command line, or answers in clear.
	for _, err := range []error{context.DeadlineExceeded, errors.New("tls: first record does not look like a TLS handshake")} {
		if got := (Target{tls: true}).classifyAt(err, "h:1"); !strings.Contains(got.Error(), "use a redis:// URL") {
			t.Errorf("a TLS handshake without an answer gives no hint: %v", got)
		}
		if got := (Target{}).classifyAt(err, "h:1"); strings.Contains(got.Error(), "redis:// URL") {
			t.Errorf("a plain connection is told to drop TLS: %v", got)
		}
	}
	if got := target.Classify(nil); got != nil {
		t.Errorf("Classify(nil) = %v", got)
	}
}

// One of several independent servers, as an action aims at it (Target.On), keeps what the
// whole target knows of its connections: a TLS connection's EOF is not the sign of a plain
// connection to a TLS-only port, and the password is still scrubbed.
func TestOnKeepsTLSAndSecrets(t *testing.T) {
	all := Target{Mode: Independent, Addrs: []string{"a:1", "b:1"}, Clients: make([]redis.UniversalClient, 2),
		secrets: secretsOf(Config{Password: "hunter2"}), tls: true}
	one, ok := all.On("b:1")
	if !ok {
		t.Fatal("b:1 is one of the servers")
	}
	err := one.Classify(fmt.Errorf("read tcp b:1: %w (hunter2)", io.EOF))
	if msg := err.Error(); strings.Contains(msg, "rediss://") || strings.Contains(msg, "hunter2") {
		t.Errorf("one TLS server's EOF: %q", msg)
	}
}
