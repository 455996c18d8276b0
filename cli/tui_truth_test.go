package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/present"
)

// TestTUIStaleWhileServerFrozen: a server frozen with SIGSTOP stops answering the heartbeats;
// within a few seconds the status bar says how old the data is ("stale Ns") instead of
// "● live", and after SIGCONT it is live again.
func TestTUIStaleWhileServerFrozen(t *testing.T) {
	redistest.Slow(t)
	srv := redistest.Start(t)
	setLock(t, srv, "lock:e2e:frozen", "frozen-node", "-", 60*time.Second)

	s := startTUI(t, "--redis", "redis://"+srv.Addr)
	s.waitFor("the live lock row", 30*time.Second, func(scr string) bool {
		return strings.Contains(scr, "lock:e2e:frozen") && strings.Contains(scr, "● live")
	})
	srv.Pause()
	frozen := time.Now()
	scr := s.waitFor("the stale status", 15*time.Second, func(scr string) bool {
		return strings.Contains(scr, "stale ") && !strings.Contains(scr, "● live")
	})
	// Three heartbeats of a second each: late after 3 s, a tick to draw it.
	if took := time.Since(frozen); took > 6*time.Second {
		t.Errorf("stale shown %v after the server froze, want within 6s:\n%s", took, scr)
	}
	if !strings.Contains(scr, "lock:e2e:frozen") {
		t.Errorf("the row left the table while the server was frozen:\n%s", scr)
	}
	srv.Resume()
	s.waitFor("recovery", 20*time.Second, func(scr string) bool {
		return strings.Contains(scr, "● live") && !strings.Contains(scr, "stale ") && strings.Contains(scr, "lock:e2e:frozen")
	})
	s.quit()
}

// demoRow is a lock row of the demo's table: its AGE and TTL cells, before the TTL bar.
var demoRow = regexp.MustCompile(`lock:demo:\S+\s+demo-w\d+\s+\S+\s+(\S+)\s+(\S+) [█▉▊▋▌▍▎▏░ ]{6}`)

// TestTUIDemoAgesAndTTLsArePlausible: in the demo (embedded miniredis, 2 s locks) a lock's
// age is never negative and its TTL never more than the 2 s it was taken with (the embedded
// server's TTLs lagged the clock that stamped the values, and the console's clock lagged the
// rows: fresh locks read -199ms old with 2.2s left). It opens on no warning either: the
// console once warned, on every demo, that miniredis refuses CLIENT TRACKING.
func TestTUIDemoAgesAndTTLsArePlausible(t *testing.T) {
	redistest.Slow(t)
	s := startTUI(t, "demo")
	rows := 0
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		scr := s.screen()
		if strings.Contains(scr, "⚠") {
			t.Fatalf("a warning in the demo:\n%s", scr)
		}
		for _, m := range demoRow.FindAllStringSubmatch(scr, -1) {
			rows++
			age, ttl := m[1], m[2]
			if strings.HasPrefix(age, "-") || age == present.Skewed {
				t.Fatalf("AGE %q in the demo:\n%s", age, scr)
			}
			if d, err := time.ParseDuration(ttl); err == nil && d > 2*time.Second {
				t.Fatalf("TTL %q on a 2s lock:\n%s", ttl, scr)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rows == 0 {
		t.Fatalf("no lock row of the demo seen:\n%s", s.screen())
	}
	s.quit()
}
