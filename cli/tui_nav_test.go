package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// TestTUIDetailViewShowsEveryField opens the detail view of a Redisson lock whose owner and
// TTL line are longer than the old side pane's 46 columns: both are on screen whole. A value
// longer than the scanner reads says how much of it is shown against its real size, and c
// copies the key to the clipboard with OSC 52 (tmux keeps it as a paste buffer).
func TestTUIDetailViewShowsEveryField(t *testing.T) {
	redistest.Slow(t)
	srv := redistest.Start(t)
	ctx := context.Background()
	owner := "8743c9c0-0795-4907-87fd-6c719a6b4586:1234567"
	if err := srv.Client().HSet(ctx, "lock:nav:redisson", owner, 1).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Client().PExpire(ctx, "lock:nav:redisson", time.Hour)
	srv.Client().Set(ctx, "lock:nav:huge", strings.Repeat("x", 100_000), time.Hour)

	s := startTUI(t, "--redis", "redis://"+srv.Addr)
	if out, err := s.tmux("set-option", "-s", "set-clipboard", "on"); err != nil {
		t.Fatalf("tmux set-clipboard: %v: %s", err, out)
	}
	s.waitForText("lock:nav:redisson", 15*time.Second)
	s.keys("/")
	s.typeText("redisson")
	s.keys("Enter")
	s.waitForText("1/2 locks", 5*time.Second)
	s.keys("Enter")
	scr := s.waitForText("owners", 5*time.Second)
	if !strings.Contains(scr, owner+" ×1") {
		t.Fatalf("the detail view cuts the owner %q:\n%s", owner, scr)
	}
	s.waitFor("the whole TTL line", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "left (read ") && strings.Contains(scr, "Z)")
	})

	s.keys("c")
	s.waitForText("copied the key lock:nav:redisson to the clipboard", 5*time.Second)
	s.waitFor("the OSC 52 paste buffer", 5*time.Second, func(string) bool {
		buf, err := s.tmux("show-buffer")
		return err == nil && buf == "lock:nav:redisson"
	})

	// The huge value: its real size, read when the view opens.
	s.keys("Escape")
	s.waitFor("the table", 5*time.Second, func(scr string) bool { return !strings.Contains(scr, "owners") })
	s.keys("Escape")
	s.waitFor("the filter cleared", 5*time.Second, func(scr string) bool { return strings.Contains(scr, "│ 2 locks") })
	s.keys("/")
	s.typeText("huge")
	s.keys("Enter")
	s.waitForText("1/2 locks", 5*time.Second)
	s.keys("Enter")
	s.waitForText(fmt.Sprintf("showing first 4096 of %d bytes", 100_000), 5*time.Second)
	s.quit()
}

// TestTUIFilterAndSortByMeaning: on a 200-column screen a Redisson holder is shown whole
// beside a 150-character key; format: and is: filters keep the locks of that meaning; T puts
// the lock that never expires first.
func TestTUIFilterAndSortByMeaning(t *testing.T) {
	redistest.Slow(t)
	srv := redistest.Start(t)
	ctx := context.Background()
	owner := "8743c9c0-0795-4907-87fd-6c719a6b4586:1234567"
	longKey := "lock:nav:" + strings.Repeat("k", 150)
	srv.Client().HSet(ctx, longKey, owner, 1)
	srv.Client().PExpire(ctx, longKey, time.Hour)
	setLock(t, srv, "lock:nav:soon", "node-soon", "-", time.Minute)
	setLock(t, srv, "lock:nav:forever", "node-forever", "-", 0)

	s := startTUI(t, "--redis", "redis://"+srv.Addr)
	if out, err := s.tmux("resize-window", "-t", "tui", "-x", "200", "-y", "40"); err != nil {
		t.Fatalf("tmux resize-window: %v: %s", err, out)
	}
	s.waitForText("lock:nav:soon", 15*time.Second)
	scr := s.waitFor("the Redisson row", 5*time.Second, func(scr string) bool { return strings.Contains(scr, "lock:nav:kkk") })
	if !strings.Contains(scr, owner) {
		t.Fatalf("the holder %q is cut beside a long key:\n%s", owner, scr)
	}

	s.keys("/")
	s.typeText("format:redisson")
	s.keys("Enter")
	s.waitFor("the format filter", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "1/3 locks") && strings.Contains(scr, owner) && !strings.Contains(scr, "lock:nav:soon")
	})
	s.keys("/")
	s.keys("C-u")
	s.typeText("is:noexpiry")
	s.keys("Enter")
	s.waitFor("the flag filter", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "1/3 locks") && strings.Contains(scr, "lock:nav:forever") && !strings.Contains(scr, "lock:nav:soon")
	})
	s.keys("Escape")
	s.waitFor("the filter cleared", 5*time.Second, func(scr string) bool { return strings.Contains(scr, "│ 3 locks") })

	s.keys("T")
	s.waitFor("never-expiring first", 5*time.Second, func(scr string) bool {
		forever, soon := strings.Index(scr, "lock:nav:forever"), strings.Index(scr, "lock:nav:soon")
		return strings.Contains(scr, "TTL↑") && forever >= 0 && soon > forever
	})
	s.quit()
}

// TestTUISwitchesContextAndPattern: the console started with --context, `:` with tab
// completion switches to another context of the config file (another server), and
// `:pattern` re-scans under another pattern.
func TestTUISwitchesContextAndPattern(t *testing.T) {
	redistest.Slow(t)
	srvs := redistest.StartN(t, 2)
	setLock(t, srvs[0], "lock:ctx:first", "node-first", "-", time.Hour)
	setLock(t, srvs[1], "lock:ctx:second", "node-second", "-", time.Hour)
	setLock(t, srvs[1], "job:ctx:other", "node-other", "-", time.Hour)
	xdg := writeConfig(t, "contexts:\n  alpha:\n    redis: [redis://"+srvs[0].Addr+"]\n  bravo-eu:\n    redis: [redis://"+srvs[1].Addr+"]\n")

	s := startConsole(t, "/usr/bin/env", xdg, cliBinary(t), "--context", "alpha")
	s.waitFor("alpha's lock", 15*time.Second, func(scr string) bool {
		return strings.Contains(scr, "lock:ctx:first") && strings.Contains(scr, "context alpha")
	})
	s.keys(":")
	s.typeText("con")
	s.keys("Tab")
	s.typeText("b")
	s.keys("Tab")
	s.waitForText(":context bravo-eu", 5*time.Second)
	s.keys("Enter")
	s.waitFor("bravo's lock", 15*time.Second, func(scr string) bool {
		return strings.Contains(scr, "lock:ctx:second") && !strings.Contains(scr, "lock:ctx:first") &&
			strings.Contains(scr, "switched to context bravo-eu, lock:*")
	})
	s.keys(":")
	s.typeText("pattern job:*")
	s.keys("Enter")
	s.waitFor("the other pattern", 15*time.Second, func(scr string) bool {
		return strings.Contains(scr, "job:ctx:other") && !strings.Contains(scr, "lock:ctx:second")
	})
	s.quit()
}
