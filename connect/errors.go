package connect

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// The kinds of connection failure. Every *Error matches exactly one of them (errors.Is), or
// none when the failure is not about the connection.
var (
	ErrBadConfig   = errors.New("connect: unusable URL or TLS file")
	ErrUnreachable = errors.New("connect: cannot reach Redis")
	ErrAuth        = errors.New("connect: authentication failed")
	ErrPermission  = errors.New("connect: missing ACL permission")
)

// Error is a classified failure: one line for people, without passwords, that names the
// server when it is known.
type Error struct {
	Kind error // ErrBadConfig, ErrUnreachable, ErrAuth, ErrPermission, or nil: not a connection failure
	msg  string
	err  error
}

func (e *Error) Error() string { return e.msg }

// Unwrap gives the original error (its message may hold a password: print Error only).
func (e *Error) Unwrap() error { return e.err }

// Is matches the error's kind.
func (e *Error) Is(target error) bool { return e.Kind != nil && target == e.Kind }

// Classify turns an error met while talking to the target into an *Error: its kind and one
// line without the target's passwords. An *Error comes back unchanged.
func (t Target) Classify(err error) error { return t.classifyAt(err, "") }

// classifyAt is Classify for an error known to come from the server at addr.
func (t Target) classifyAt(err error, addr string) error {
	if err == nil {
		return nil
	}
	if classified, ok := err.(*Error); ok {
		return classified
	}
	msg := t.Redact(err.Error())
	at := ""
	if addr != "" {
		at = " at " + addr
	}
	e := &Error{err: err}
	switch {
	case isAuthFailure(err, msg):
		e.Kind, e.msg = ErrAuth, fmt.Sprintf("authentication failed%s: %s (check the user and password in --redis or $LOCKSCOPE_PASSWORD)", at, msg)
	case strings.Contains(msg, "NOPERM"):
		e.Kind, e.msg = ErrPermission, fmt.Sprintf("missing ACL permission%s: the Redis user %s (%s)", at, deniedPermission(err, msg), msg)
	case strings.Contains(msg, "cluster support disabled"):
		e.Kind, e.msg = ErrBadConfig, fmt.Sprintf("--cluster, but the server%s is not a cluster node (%s): drop --cluster", at, msg)
	case strings.Contains(msg, "cluster has no nodes"):
		e.Kind, e.msg = ErrUnreachable, fmt.Sprintf("no node of the cluster%s serves a slot: is the cluster set up "+
			"(CLUSTER SLOTS is empty until slots are assigned, e.g. by redis-cli --cluster create)? (%s)", at, msg)
	case strings.Contains(msg, "DB index is out of range"):
		e.Kind, e.msg = ErrBadConfig, fmt.Sprintf("the database number in --redis does not exist%s (%s): "+
			"the server has as many as its `databases` setting (16 by default, numbered from 0)", at, msg)
	case isNotRedis(msg):
		e.Kind, e.msg = ErrUnreachable, fmt.Sprintf("no Redis server%s: something answered, but not in Redis' protocol "+
			"(an HTTP server?): check the host and port in --redis (%s)", at, msg)
	case isUnreachable(err):
		e.Kind, e.msg = ErrUnreachable, fmt.Sprintf("cannot reach Redis%s: %s%s", at, msg, t.tlsHint(err))
	default:
		e.msg = msg
	}
	return e
}

// isNotRedis: the reply was not RESP, e.g. "HTTP/1.1 400 Bad Request" read as a reply.
func isNotRedis(msg string) bool {
	return strings.Contains(msg, "invalid reply") || strings.Contains(msg, "HTTP/")
}

// tlsHint explains what a TLS mismatch looks like: a TLS-only port closes a plain connection
// without a word; a plain server waits for a command line in a TLS handshake (no answer) or
// answers it in clear.
func (t Target) tlsHint(err error) string {
	switch {
	case !t.tls && errors.Is(err, io.EOF):
		return " (the server closed the connection: if it wants TLS, use a rediss:// URL)"
	case t.tls && (errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "first record does not look like a TLS handshake")):
		return " (no TLS handshake: if the server does not use TLS, use a redis:// URL)"
	}
	return ""
}

func isAuthFailure(err error, msg string) bool {
	return redis.IsAuthError(err) || strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH") ||
		strings.Contains(msg, "invalid password") || strings.Contains(msg, "invalid username-password")
}

// noPermCommand finds the command a NOPERM reply names, e.g.
// "NOPERM User u has no permissions to run the 'get' command".
var noPermCommand = regexp.MustCompile(`run the '([^']+)' command`)

// deniedCommander is an error that knows which command an ACL refused where Redis' reply
// does not say (actions.ScriptPermissionError: Redis names only the line of a script).
type deniedCommander interface {
	error
	DeniedCommand() string
}

// deniedPermission says what a NOPERM refusal denies, naming the command when it is known.
func deniedPermission(err error, msg string) string {
	var denied deniedCommander
	if errors.As(err, &denied) {
		return "may not run " + denied.DeniedCommand()
	}
	if m := noPermCommand.FindStringSubmatch(msg); m != nil {
		return "may not run " + strings.ToUpper(m[1])
	}
	if strings.Contains(msg, "keys") {
		return "may not access these keys: its ~ key patterns must cover --pattern and the locks' companion keys (docs/acl.md)"
	}
	if strings.Contains(msg, "channel") {
		return "may not use this pub/sub channel (docs/acl.md)"
	}
	return "lacks a permission this command needs"
}

// isUnreachable: no connection could be made, including a TLS handshake that failed (an
// untrusted certificate reads like a wrong address to the user: the server is not usable),
// and errors that wrap ErrUnreachable (scanner.ErrUnreachable: no server could be read).
func isUnreachable(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	var certErr *tls.CertificateVerificationError
	msg := err.Error()
	return errors.Is(err, ErrUnreachable) ||
		errors.As(err, &opErr) || errors.As(err, &netErr) || errors.As(err, &certErr) ||
		strings.Contains(msg, "tls: ") || strings.Contains(msg, "x509: ") ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		strings.Contains(msg, "connection refused") || strings.Contains(msg, "i/o timeout")
}
