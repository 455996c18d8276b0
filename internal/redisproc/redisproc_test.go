package redisproc

import (
	"errors"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Kill ends a stopped (SIGSTOP) process and reaps it; a second Start kills the process the
// first one left; after Kill nothing runs and Signal says so.
func TestProcessKillStoppedAndRestart(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Fatal(err) // make test installs it
	}
	dir := t.TempDir()
	var p Process
	defer p.Kill()
	start := func(n int) (int, <-chan struct{}) {
		t.Helper()
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		exited, err := p.Start(Config{Bin: bin, Port: strconv.Itoa(port), Dir: dir,
			LogFile: filepath.Join(dir, "redis-"+strconv.Itoa(n)+".log")})
		if err != nil {
			t.Fatal(err)
		}
		return p.Pid(), exited
	}
	first, firstExited := start(1)
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	second, _ := start(2)
	select {
	case <-firstExited:
	default:
		t.Fatalf("Start left the stopped process %d running", first)
	}
	if second == first || !p.Running() {
		t.Fatalf("after the second Start: pid %d (first %d), running %v", second, first, p.Running())
	}
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if err := syscall.Kill(second, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists after Kill (kill 0: %v)", second, err)
	}
	if p.Running() || p.Pid() != 0 {
		t.Errorf("after Kill: running %v, pid %d", p.Running(), p.Pid())
	}
	if err := p.Signal(syscall.SIGCONT); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Signal after Kill: %v, want ErrNotRunning", err)
	}
}
