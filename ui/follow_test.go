package ui

import (
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/lockscope/lockscope/scanner"
)

// following is the scanner's report of a standalone server followed by tracking, its
// background re-scan 37 % done at a 2 % budget.
func following(mech scanner.Mechanism) scanner.Update {
	return scanner.Update{Kind: scanner.UpdateFollowing, Following: scanner.Following{
		Servers: []scanner.ServerFollow{{Addr: "127.0.0.1:6379", Mechanism: mech}},
		Budget:  0.02,
		Rescan:  0.37,
	}}
}

// followingModel is the test model told how it is followed, 48 s after its last pass.
func followingModel(t *testing.T, width, height int, mech scanner.Mechanism) *Model {
	m, clk := newTestModel(t, width, height)
	feed(m, following(mech))
	clk.advance(48 * time.Second)
	m.Update(tickMsg(clk.now()))
	return m
}

// TestStatusBarSaysHowFresh: the status bar names the mechanism, the re-scan's progress and
// budget, and how old the last complete pass is; a server followed by events only is said.
func TestStatusBarSaysHowFresh(t *testing.T) {
	m := followingModel(t, 180, 30, scanner.FollowTracking)
	top := strings.SplitN(screen(m), "\n", 2)[0]
	mustContain(t, top, "following tracking")
	mustContain(t, top, "oldest 48s │ re-scan 37% at 2% budget")
	mustNotContain(t, top, "scan 12:") // the pass time gives way to the freshness

	m = followingModel(t, 160, 30, scanner.FollowEvents)
	mustContain(t, strings.SplitN(screen(m), "\n", 2)[0], "following events")
}

// TestStatusBarFollowingFitsNarrowScreens: the freshness segments are dropped before the
// line overflows, down to 20 columns.
func TestStatusBarFollowingFitsNarrowScreens(t *testing.T) {
	for _, w := range []int{20, 40, 60, 80, 120} {
		m := followingModel(t, w, 10, scanner.FollowTracking)
		top := strings.SplitN(m.View().Content, "\n", 2)[0]
		if got := lipgloss.Width(top); got > w {
			t.Errorf("width %d: status line is %d columns: %q", w, got, top)
		}
	}
}

func TestGoldenFollowing120x30(t *testing.T) {
	golden.RequireEqual(t, followingModel(t, 120, 30, scanner.FollowTracking).View().Content)
}

func TestGoldenFollowingTiny20x10(t *testing.T) {
	golden.RequireEqual(t, followingModel(t, 20, 10, scanner.FollowTracking).View().Content)
}

// TestFocusNamesVisibleRows: on a tick the console tells the scanner the keys on screen,
// from a command, and only when they changed.
func TestFocusNamesVisibleRows(t *testing.T) {
	m, clk := newTestModel(t, 120, 30)
	var told [][]string
	m.focus = func(keys []string) { told = append(told, keys) }
	var run func(cmd tea.Cmd)
	run = func(cmd tea.Cmd) { // runs the commands of a tick (its own next tick included)
		if cmd == nil {
			return
		}
		if batch, ok := cmd().(tea.BatchMsg); ok {
			for _, c := range batch {
				run(c)
			}
		}
	}
	_, cmd := m.Update(tickMsg(clk.now()))
	run(cmd)
	if len(told) != 1 || !slices.Equal(told[0], visibleKeys(m)) {
		t.Fatalf("told %v, want the visible rows %v", told, visibleKeys(m))
	}
	clk.advance(time.Second)
	_, cmd = m.Update(tickMsg(clk.now()))
	run(cmd)
	if len(told) != 1 {
		t.Fatalf("told again though nothing changed: %v", told)
	}
	typeKeys(m, "/", "order", "enter")
	_, cmd = m.Update(tickMsg(clk.now()))
	run(cmd)
	if len(told) != 2 || len(told[1]) >= len(told[0]) || !slices.Equal(told[1], visibleKeys(m)) {
		t.Fatalf("after filtering told %v, want %v", told, visibleKeys(m))
	}
}
