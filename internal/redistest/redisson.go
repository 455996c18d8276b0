package redistest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RedissonPeer is a real Redisson 3.52.0 client (redissonpeer/, see its README.md) holding
// its nine kinds of lock under lock:redisson:* on a server, as Redisson users' services do.
type RedissonPeer struct {
	Events string // its event file: one line per event (CLIENT-ID, HOLDER, READY, B-ACQUIRED, ...)
}

// StartRedissonPeer starts the peer on srv and returns once every lock is in place; the JVM
// is stopped when the test ends, or when the test binary does (killed on its -timeout). A JVM
// start takes seconds: share one peer within a test. It
// needs a JDK and Debian's Java libraries, which scripts/deps.sh installs as root: without
// them it skips as an unprivileged user (who may not install them) and fails as root (where
// `make test` installs them, as in CI).
func StartRedissonPeer(tb testing.TB, srv *Server, opts ...RedissonPeerOption) *RedissonPeer {
	tb.Helper()
	if missing := redissonNeeds(); missing != "" {
		if os.Geteuid() != 0 {
			tb.Skipf("the real Redisson client needs %s: run `make test` as root once (scripts/deps.sh installs them)", missing)
		}
		tb.Fatalf("the real Redisson client needs %s: scripts/deps.sh installs them", missing)
	}
	_, here, _, _ := runtime.Caller(0)
	events := filepath.Join(tb.TempDir(), "redisson-events")
	cmd := exec.Command(filepath.Join(filepath.Dir(here), "redissonpeer", "run.sh"), strconv.Itoa(srv.Port))
	// WATCH_PID: the JVM also stops when this process ends without its cleanup (a test timeout).
	cmd.Env = append(os.Environ(), "OUT="+events, "TMPDIR="+tb.TempDir(), "WATCH_PID="+strconv.Itoa(os.Getpid()))
	for _, o := range opts {
		cmd.Env = append(cmd.Env, string(o))
	}
	out, err := cmd.Output()
	if err != nil {
		detail := ""
		if ee, ok := err.(*exec.ExitError); ok {
			detail = string(ee.Stderr)
		}
		tb.Fatalf("starting the Redisson peer: %v\n%s", err, detail)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		tb.Fatalf("the Redisson peer printed %q, not its PID", out)
	}
	tb.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	})
	return &RedissonPeer{Events: events}
}

// RedissonPeerOption adds a case to what the peer holds (its README lists them).
type RedissonPeerOption string

// RedissonWriterWaits adds case 10: a thread blocked in writeLock().lock() on
// lock:redisson:rw-read behind its two readers; the event RW-WRITER-ACQUIRED says when it got in.
const RedissonWriterWaits RedissonPeerOption = "PEER_RW_WRITER=1"

// redissonNeeds names what the peer needs and this machine lacks ("" when nothing).
func redissonNeeds() string {
	if _, err := exec.LookPath("javac"); err != nil {
		return "a JDK (javac)"
	}
	if _, err := os.Stat("/usr/share/java/netty-common.jar"); err != nil {
		return "Debian's Java libraries (libnetty-java, ...)"
	}
	return ""
}

// Event returns the first line of the peer's event file that starts with prefix, waiting up
// to within for it; ok is false when none came.
func (p *RedissonPeer) Event(prefix string, within time.Duration) (line string, ok bool) {
	deadline := time.Now().Add(within)
	for {
		if f, err := os.Open(p.Events); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), prefix) {
					f.Close()
					return sc.Text(), true
				}
			}
			f.Close()
		}
		if time.Now().After(deadline) {
			return "", false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
