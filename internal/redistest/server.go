// Package redistest starts real redis-server processes on free loopback ports for tests.
//
// Every server belongs to one test: it is killed and its files removed when the test ends,
// pass or fail. Faults are real: Kill (SIGKILL), Restart (same port, empty data),
// Pause (SIGSTOP) and Resume (SIGCONT).
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redisproc"
	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process owned by a test.
type Server struct {
	tb      testing.TB
	Port    int
	Addr    string // 127.0.0.1:<port>
	dir     string
	conf    []string // arguments before the options: a config file (and --sentinel)
	args    []string
	mu      sync.Mutex
	proc    redisproc.Process
	paused  bool
	started int // how many times the process was started, for log file names
}

// Option changes how a server is started.
type Option func(*config)

type config struct {
	args            []string
	clusterReplicas int
}

// WithArgs passes extra arguments to redis-server, e.g. WithArgs("--requirepass", "s3cret").
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// Binary returns the path of redis-server or an error that says how to get it.
func Binary() (string, error) {
	p, err := redisproc.Binary()
	if err != nil {
		return "", fmt.Errorf("%w: run `make test` (installs it) or `apt-get install redis-server`", err)
	}
	return p, nil
}

// Start starts one redis-server on a free loopback port and waits until it answers PING.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{tb: tb, dir: tb.TempDir(), args: cfg.args}
	tb.Cleanup(s.stop)
	var lastErr error
	for attempt := 0; attempt < 8; attempt++ {
		port, err := FreePort()
		if err != nil {
			tb.Fatal(err)
		}
		s.Port, s.Addr = port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.launch(bin); lastErr == nil {
			return s
		}
	}
	tb.Fatalf("redistest: could not start redis-server: %v", lastErr)
	return nil
}

// StartN starts n independent servers.
func StartN(tb testing.TB, n int, opts ...Option) []*Server {
	tb.Helper()
	out := make([]*Server, n)
	for i := range out {
		out[i] = Start(tb, opts...)
	}
	return out
}

// FreePort asks the kernel for a loopback port that is free right now, for a test that
// needs one of its own.
func FreePort() (int, error) { return redisproc.FreePort() }

func (s *Server) launch(bin string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started++
	logPath := filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", s.started))
	exited, err := s.proc.Start(redisproc.Config{Bin: bin, Conf: s.conf, Port: strconv.Itoa(s.Port), Dir: s.dir,
		LogFile: logPath, Args: append([]string{"--protected-mode", "no"}, s.args...)})
	if err != nil {
		return err
	}
	s.paused = false

	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("redis-server on port %d exited at start: %s", s.Port, tail(log))
		default:
		}
		if ping(s.Addr) == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.proc.Kill()
	return fmt.Errorf("redis-server on port %d did not answer PING within 10s", s.Port)
}

func ping(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, MaxRetries: -1, Protocol: 2})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := c.Ping(ctx).Err()
	// A server started with --requirepass answers NOAUTH: it is up.
	if err != nil && (strings.HasPrefix(err.Error(), "NOAUTH") || strings.HasPrefix(err.Error(), "WRONGPASS")) {
		return nil
	}
	return err
}

func tail(b []byte) string {
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return string(b)
}

// Client returns a go-redis client for this server, closed when the test ends.
func (s *Server) Client(opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: s.Addr, DialTimeout: time.Second}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	s.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// SetUser runs ACL SETUSER name rules... on the server ("on", ">password", "~*", ...),
// failing the test when it cannot.
func (s *Server) SetUser(name string, rules ...string) {
	s.tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second})
	defer c.Close()
	args := []any{"ACL", "SETUSER", name}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := c.Do(context.Background(), args...).Err(); err != nil {
		s.tb.Fatalf("ACL SETUSER %s on %s: %v", name, s.Addr, err)
	}
}

// Kill sends SIGKILL and waits for the process to exit. The data is gone.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc.Kill()
}

// Restart starts the server again on the same port, empty (no persistence). It kills
// the running process first if there is one.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	bin, err := Binary()
	if err != nil {
		s.tb.Fatal(err)
	}
	var lastErr error
	// The port was ours a moment ago; a short retry covers a slow socket teardown.
	for attempt := 0; attempt < 20; attempt++ {
		if lastErr = s.launch(bin); lastErr == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.tb.Fatalf("redistest: restart on port %d: %v", s.Port, lastErr)
}

// Pause freezes the server with SIGSTOP: connections stay open, nothing answers.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP, true) }

// Resume undoes Pause with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT, false) }

func (s *Server) signal(sig syscall.Signal, paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.proc.Signal(sig); errors.Is(err, redisproc.ErrNotRunning) {
		s.tb.Fatalf("redistest: signal %v to a server that is not running", sig)
	} else if err != nil {
		s.tb.Fatalf("redistest: signal %v: %v", sig, err)
	}
	s.paused = paused
}

// Running reports whether the process is alive (paused counts as alive).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.Running()
}

func (s *Server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused {
		_ = s.proc.Signal(syscall.SIGCONT)
	}
	s.proc.Kill()
}

// Pid is the process id of the running redis-server (0 when none runs), e.g. to read its
// CPU time from /proc.
func (s *Server) Pid() int { return s.proc.Pid() }

// Dir is the server's working directory (its log files are there).
func (s *Server) Dir() string { return s.dir }
