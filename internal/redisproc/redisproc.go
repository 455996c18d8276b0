// Package redisproc owns a redis-server process that lockscope started itself: the demo's
// replica set and the test harness (internal/redistest) both start theirs through it, so the
// process dies with its starter and is signalled, killed and reaped the same way in both.
package redisproc

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"syscall"
)

// ErrNoBinary: redis-server is not on PATH. Each caller says how to get it.
var ErrNoBinary = errors.New("redis-server not found on PATH")

// ErrNotRunning: Signal to a Process never started, or killed.
var ErrNotRunning = errors.New("no redis-server process")

// Binary returns the path of redis-server, or ErrNoBinary.
func Binary() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", ErrNoBinary
	}
	return p, nil
}

// FreePort asks the kernel for a loopback port that is free right now (another process may
// take it before redis-server binds it: a caller checks it started its own server there).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("no free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Config is how to start one redis-server.
type Config struct {
	Bin     string   // the redis-server binary (Binary)
	Conf    []string // before every option: a config file (and --sentinel)
	Port    string   // it binds 127.0.0.1:Port
	Dir     string   // its working directory
	LogFile string
	Args    []string // after the common options, so they can override them
}

// Process is a redis-server we start, and may kill and start again. The zero value has none
// running. Its methods are safe for concurrent use.
type Process struct {
	mu     sync.Mutex
	cmd    *exec.Cmd // nil before Start and after Kill
	exited chan struct{}
}

// Start starts redis-server in the foreground, on loopback, without persistence, logging to
// c.LogFile, killing the process p still holds if there is one. It does not wait until the
// server answers (the caller knows what ready means); exited is closed when it has exited.
func (p *Process) Start(c Config) (exited <-chan struct{}, err error) {
	args := append(append([]string(nil), c.Conf...),
		"--port", c.Port,
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", c.Dir,
		"--logfile", c.LogFile)
	args = append(args, c.Args...)
	cmd := exec.Command(c.Bin, args...)
	// The server dies with its starter, however that ends (a kill -9, or a test binary that
	// dies without running its cleanups).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killLocked()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := make(chan struct{})
	go func() { _ = cmd.Wait(); close(ch) }()
	p.cmd, p.exited = cmd, ch
	return ch, nil
}

// Pid is the process id (0 when there is no process).
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Signal sends sig to the process: ErrNotRunning when there is none, an error too once it
// has exited by itself.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return ErrNotRunning
	}
	return p.cmd.Process.Signal(sig)
}

// Running reports whether the process was started and has not exited (a stopped one runs).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL (which ends a stopped process too) and waits until the process has
// exited. The data is gone with it.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killLocked()
}

func (p *Process) killLocked() {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
	p.cmd = nil
}
