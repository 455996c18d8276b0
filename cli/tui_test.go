package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
)

// End-to-end tests of the console: the real binary in a real terminal (tmux), against a real
// redis-server. They poll the screen for text instead of sleeping.

// tuiSession is one lockscope console running in a private tmux server.
type tuiSession struct {
	t    testing.TB
	sock string
}

var tmuxSeq atomic.Int64

// startTUI runs `lockscope args...` in a 120x40 tmux pane. The pane keeps the exit status
// on screen ("EXITED <code>") when the program ends, for the assertions and for diagnosis.
func startTUI(t *testing.T, args ...string) *tuiSession {
	t.Helper()
	return startConsole(t, cliBinary(t), args...)
}

// startConsole runs the lockscope binary bin as startTUI does.
func startConsole(t testing.TB, bin string, args ...string) *tuiSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not on PATH (apt-get install tmux)")
	}
	s := &tuiSession{t: t, sock: fmt.Sprintf("lockscope-tui-%d-%d", os.Getpid(), tmuxSeq.Add(1))}
	quoted := []string{shellQuote(bin)}
	for _, a := range args {
		quoted = append(quoted, shellQuote(a))
	}
	// The tmux server's environment, not the test's, reaches the command: set it explicitly.
	command := "env -u REDIS_URL -u LOCKSCOPE_PASSWORD TERM=xterm-256color " + strings.Join(quoted, " ") +
		"; echo EXITED $?; sleep 60"
	if out, err := s.tmux("new-session", "-d", "-s", "tui", "-x", "120", "-y", "40", command); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = s.tmux("kill-server") })
	return s
}

func (s *tuiSession) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", s.sock}, args...)...).CombinedOutput()
	return string(out), err
}

func (s *tuiSession) screen() string {
	out, err := s.tmux("capture-pane", "-p", "-t", "tui")
	if err != nil {
		s.t.Fatalf("tmux capture-pane: %v: %s", err, out)
	}
	return out
}

// keys sends tmux key names (Enter, Tab, Escape, ...) or single characters.
func (s *tuiSession) keys(keys ...string) {
	s.t.Helper()
	if out, err := s.tmux(append([]string{"send-keys", "-t", "tui"}, keys...)...); err != nil {
		s.t.Fatalf("tmux send-keys: %v: %s", err, out)
	}
}

// typeText sends text literally.
func (s *tuiSession) typeText(text string) {
	s.t.Helper()
	if out, err := s.tmux("send-keys", "-t", "tui", "-l", text); err != nil {
		s.t.Fatalf("tmux send-keys -l: %v: %s", err, out)
	}
}

// waitFor polls the screen until ok accepts it, and fails with the last screen otherwise.
func (s *tuiSession) waitFor(what string, timeout time.Duration, ok func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		scr := s.screen()
		if ok(scr) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out after %v waiting for %s; screen:\n%s", timeout, what, scr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// typeConfirmation types key into a freshly opened dialog's input. The dialog drops keys for
// its first moments (ui's input guard), so text typed too early may be lost in part: it
// retypes until the line under the prompt shows exactly key, instead of sleeping for a
// guessed time.
func (s *tuiSession) typeConfirmation(key string) {
	s.t.Helper()
	const prompt = "Type its key to confirm:"
	shown := func(scr string) bool {
		lines := strings.Split(scr, "\n")
		for i, ln := range lines {
			if strings.Contains(ln, prompt) && i+1 < len(lines) {
				return strings.Contains(lines[i+1], key)
			}
		}
		return false
	}
	for range 20 {
		s.typeText(key)
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if shown(s.screen()) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		for range len(key) {
			s.keys("BSpace")
		}
	}
	s.t.Fatalf("the dialog never showed %q as typed; screen:\n%s", key, s.screen())
}

func (s *tuiSession) waitForText(text string, timeout time.Duration) string {
	s.t.Helper()
	return s.waitFor(strconv.Quote(text), timeout, func(scr string) bool { return strings.Contains(scr, text) })
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ttlCell finds the TTL, in whole seconds, on the table row of key: the number right before
// the TTL bar.
func ttlCell(screen, key string) (int, bool) {
	re := regexp.MustCompile(`(\d+)s [█▉▊▋▌▍▎▏░]{6}`)
	for _, line := range strings.Split(screen, "\n") {
		if !strings.Contains(line, key) {
			continue
		}
		if m := re.FindStringSubmatch(line); m != nil {
			n, err := strconv.Atoi(m[1])
			return n, err == nil
		}
	}
	return 0, false
}

// setLock writes a lock in locklib's value format with a TTL, as a live holder would.
func setLock(t *testing.T, srv *redistest.Server, key, node, trace string, ttl time.Duration) string {
	t.Helper()
	value := fmt.Sprintf("%s:%s:%d:%016x", node, trace, time.Now().UnixMilli(), time.Now().UnixNano())
	if err := srv.Client().Set(context.Background(), key, value, ttl).Err(); err != nil {
		t.Fatal(err)
	}
	return value
}

func TestTUIEndToEnd(t *testing.T) {
	redistest.Slow(t)
	srv := redistest.Start(t)
	setLock(t, srv, "lock:e2e:order", "e2e-node", "trace-e2e", 60*time.Second)
	setLock(t, srv, "lock:e2e:other", "other-node", "-", 60*time.Second)
	setLock(t, srv, "lock:e2e:third", "third-node", "-", 60*time.Second)
	setLock(t, srv, "lock:e2e:bin\xff", "bin-node", "-", 60*time.Second)

	s := startTUI(t, "--redis", "redis://"+srv.Addr, "--scan-budget", "1%")
	scr := s.waitFor("the lock row", 15*time.Second, func(scr string) bool {
		_, ok := ttlCell(scr, "lock:e2e:order")
		return ok && strings.Contains(scr, "e2e-node") && strings.Contains(scr, "trace-e2e")
	})
	// The status bar says the census is followed by CLIENT TRACKING (no config was changed).
	s.waitForText("following tracking", 10*time.Second)

	// locklib's events reach the event log.
	ev, _ := json.Marshal(protocol.Event{Type: string(locklib.EventRenewFailed), Key: "lock:e2e:order", Node: "e2e-node",
		Reason: "e2e-probe", AtMs: time.Now().UnixMilli()})
	s.waitFor("the published event", 10*time.Second, func(scr string) bool {
		// PUBLISH until the console's subscription is up (a message before it is lost).
		_ = srv.Client().Publish(context.Background(), protocol.EventsChannel, ev).Err()
		return strings.Contains(scr, "renew_failed") && strings.Contains(scr, "reason=e2e-probe")
	})

	// The TTL counts down on screen.
	first, _ := ttlCell(scr, "lock:e2e:order")
	s.waitFor("the TTL to count down", 10*time.Second, func(scr string) bool {
		now, ok := ttlCell(scr, "lock:e2e:order")
		return ok && now <= first-2
	})

	// Filter down to the one lock.
	s.keys("/")
	s.typeText("e2e:ord")
	s.keys("Enter")
	s.waitFor("the filter to apply", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "1/4 locks") && strings.Contains(scr, "lock:e2e:order") &&
			!strings.Contains(scr, "lock:e2e:other")
	})

	// Extend: the dialog's default keeps the TTL it has; a shorter one is asked about again
	// (enter there is No). Then the dialog is answered No, which the audit trail records.
	s.keys("e")
	s.waitForText("Extend this lock's TTL?", 5*time.Second)
	time.Sleep(600 * time.Millisecond) // past ui's input guard
	scr = s.screen()
	left := regexp.MustCompile(`ttl +(\d+)s left`).FindStringSubmatch(scr)
	prefill := regexp.MustCompile(`New TTL.*\n.*> (\S+) `).FindStringSubmatch(scr)
	if left == nil || prefill == nil || durationOf(prefill[1]) < durationOf(left[1]+"s") {
		t.Fatalf("the extend dialog's default TTL is not what the lock has left (or more):\n%s", scr)
	}
	s.keys("BSpace", "BSpace", "BSpace", "BSpace")
	s.typeText("5s")
	s.keys("Tab", "Enter")
	s.waitFor("the shorten question", 5*time.Second, func(scr string) bool {
		return regexp.MustCompile(`shorten \d+s to 5\.0s\? \[y/N\]`).MatchString(scr)
	})
	s.keys("Enter")
	s.waitForText("tab switch", 5*time.Second)
	s.keys("Escape")
	s.waitForText("not extended: lock:e2e:order (answered No", 5*time.Second)
	if ttl := srv.Client().PTTL(context.Background(), "lock:e2e:order").Val(); ttl < 10*time.Second {
		t.Fatalf("the declined extend changed the TTL to %v", ttl)
	}

	// Force-release it through the dialog: it has a minute left, so the key must be typed;
	// then enter releases (no tab), with the reason typed below it.
	s.keys("d")
	s.waitForText("Type its key to confirm", 5*time.Second)
	s.typeConfirmation("lock:e2e:order")
	s.keys("Down")
	s.typeText("INC-1 stuck")
	s.waitForText("> INC-1 stuck", 5*time.Second)
	s.keys("Enter")
	s.waitForText("released lock:e2e:order", 10*time.Second)
	n, err := srv.Client().Exists(context.Background(), "lock:e2e:order").Result()
	if err != nil || n != 0 {
		t.Fatalf("lock:e2e:order still in Redis after the release (exists=%d, err=%v)", n, err)
	}
	if n, _ := srv.Client().Exists(context.Background(), "lock:e2e:other").Result(); n != 1 {
		t.Fatal("the release removed another lock")
	}
	// A binary key is confirmed by typing it as the console shows it.
	s.keys("/")
	s.keys("BSpace", "BSpace", "BSpace") // e2e:ord -> e2e:
	s.typeText("bin")
	s.keys("Enter")
	s.waitForText(`lock:e2e:bin\xff`, 5*time.Second)
	s.keys("d")
	s.waitForText("Type its key to confirm", 5*time.Second)
	s.typeConfirmation(`lock:e2e:bin\xff`)
	s.keys("Enter")
	s.waitForText(`released lock:e2e:bin\xff`, 10*time.Second)
	if n, _ := srv.Client().Exists(context.Background(), "lock:e2e:bin\xff").Result(); n != 0 {
		t.Fatal("the binary key is still in Redis after its release")
	}
	// The audit trail shows the action.
	s.keys("a")
	s.waitFor("the audit records", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "Audit trail") && strings.Contains(scr, "released") && strings.Contains(scr, "lock:e2e:order") &&
			strings.Contains(scr, "INC-1 stuck") && strings.Contains(scr, "declined")
	})
	s.quit()
}

// durationOf parses a Go duration, 0 when it is not one.
func durationOf(s string) time.Duration {
	d, _ := time.ParseDuration(s)
	return d
}

// quit presses q until the program exits with status 0 (a q may first close the help).
func (s *tuiSession) quit() {
	s.t.Helper()
	for range 5 {
		s.keys("q")
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if strings.Contains(s.screen(), "EXITED") {
				s.waitForText("EXITED 0", time.Second)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	s.t.Fatalf("q did not quit; screen:\n%s", s.screen())
}

func TestTUIReadOnlyCannotRelease(t *testing.T) {
	redistest.Slow(t)
	srv := redistest.Start(t)
	value := setLock(t, srv, "lock:e2e:ro", "ro-node", "-", 60*time.Second)

	s := startTUI(t, "--redis", "redis://"+srv.Addr, "--read-only")
	scr := s.waitForText("lock:e2e:ro", 30*time.Second)
	if !strings.Contains(scr, "READ-ONLY") || !strings.Contains(scr, "│ 1 lock │") {
		t.Fatalf("no read-only badge:\n%s", scr)
	}
	if strings.Contains(scr, "force-release") {
		t.Fatalf("read-only shows the release key:\n%s", scr)
	}
	s.keys("d")
	s.waitForText("locks cannot be released or extended", 5*time.Second) // says why nothing happens
	s.keys("e")
	s.keys("?")
	scr = s.waitForText("sort by holder", 5*time.Second) // the help, drawn after d and e were handled
	if strings.Contains(scr, "Force-release") || strings.Contains(scr, "force-release") || strings.Contains(scr, "Extend this") {
		t.Fatalf("read-only offered an action:\n%s", scr)
	}
	got, err := srv.Client().Get(context.Background(), "lock:e2e:ro").Result()
	if err != nil || got != value {
		t.Fatalf("the lock changed under --read-only: %q, %v", got, err)
	}
	s.quit()
}

func TestTUIReconnectsAfterServerRestart(t *testing.T) {
	redistest.Slow(t)
	srv := redistest.Start(t)
	setLock(t, srv, "lock:e2e:kept", "kept-node", "-", 60*time.Second)

	s := startTUI(t, "--redis", "redis://"+srv.Addr)
	s.waitForText("lock:e2e:kept", 30*time.Second)
	setLock(t, srv, "lock:e2e:brief", "brief-node", "-", 4*time.Second)
	s.waitForText("lock:e2e:brief", 3*time.Second)
	srv.Kill()
	// The banner says first that the table is the last census (a long error is cut after it),
	// and the brief lock, whose end nobody can confirm now, reads `expired` in full.
	scr := s.waitForText("reconnecting… the table shows the last census", 30*time.Second)
	if !strings.Contains(scr, "lock:e2e:kept") {
		t.Fatalf("the table was not kept while reconnecting:\n%s", scr)
	}
	s.waitFor("the expired TTL", 10*time.Second, func(scr string) bool {
		return regexp.MustCompile(`lock:e2e:brief .* expired `).MatchString(scr)
	})
	srv.Restart() // same port, empty: the holder writes its lock again
	setLock(t, srv, "lock:e2e:kept", "kept-node", "-", 60*time.Second)
	s.waitFor("recovery", 20*time.Second, func(scr string) bool {
		return strings.Contains(scr, "● live") && !strings.Contains(scr, "reconnecting…") && strings.Contains(scr, "lock:e2e:kept")
	})
	s.quit()
}
