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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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
	proc    *exec.Cmd
	exited  chan struct{}
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
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("redis-server not found on PATH: run `make test` (installs it) or `apt-get install redis-server`")
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

// FreePort asks the kernel for a loopback port that is free right now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redistest: no free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) launch(bin string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started++
	logPath := filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", s.started))
	args := append(append([]string(nil), s.conf...),
		"--port", strconv.Itoa(s.Port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--dir", s.dir,
		"--logfile", logPath)
	args = append(args, s.args...)
	cmd := exec.Command(bin, args...)
	// Kill the server if the test binary dies without running its cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.proc, s.exited, s.paused = cmd, exited, false

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
	_ = cmd.Process.Kill()
	<-exited
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

// Kill sends SIGKILL and waits for the process to exit. The data is gone.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *Server) killLocked() {
	if s.proc == nil {
		return
	}
	select {
	case <-s.exited:
	default:
		_ = s.proc.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
	s.proc = nil
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
	if s.proc == nil {
		s.tb.Fatalf("redistest: signal %v to a server that is not running", sig)
	}
	if err := s.proc.Process.Signal(sig); err != nil {
		s.tb.Fatalf("redistest: signal %v: %v", sig, err)
	}
	s.paused = paused
}

// Running reports whether the process is alive (paused counts as alive).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *Server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && s.paused {
		_ = s.proc.Process.Signal(syscall.SIGCONT)
	}
	s.killLocked()
}

// Dir is the server's working directory (its log files are there).
func (s *Server) Dir() string { return s.dir }
