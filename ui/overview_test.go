package ui

import (
	"fmt"
	"math"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/scanner"
)

// contendedModel is a model whose census went through five minutes of contention, one
// census pass a bucket: orders the hottest (many waiters, a hand-off a second), payments
// (fewer waiters, more hand-offs late), inventory (no waiters, a hand-off now and then), carts
// (one idle lock), and three more groups past a cap of 4 folded into _other (one of them with
// a waiter). It ends at the clock's now.
func contendedModel(t testing.TB, width, height int) (*Model, *fakeClock) {
	t.Helper()
	m, clk := emptyModel(t)
	m.contention.folder = keygroup.NewFolder(4) // _other after four groups
	clk.advance(-contentionWindow + contentionBucket)
	holder := map[string]int{}
	next := func(key string, handoffs int) []scanner.Lock { // the key's records, one a hand-off
		var out []scanner.Lock
		for range max(handoffs, 1) {
			holder[key] += btoi(handoffs > 0)
			out = append(out, heldBy(key, holderValue("api", holder[key]+len(key)*1000, 0), clk.t))
		}
		return out
	}
	withWaiters := func(locks []scanner.Lock, n int) []scanner.Lock {
		last := &locks[len(locks)-1]
		last.Waiters, last.HasWaiters = n, true
		return locks
	}
	for step := range contentionBuckets {
		phase := float64(step) / contentionBuckets
		var batch []scanner.Lock
		batch = append(batch, withWaiters(next("lock:orders:1001", 5), int(4+3*math.Sin(phase*2*math.Pi*3)))...)
		batch = append(batch, withWaiters(next("lock:orders:1002", step%2), 1)...)
		batch = append(batch, withWaiters(next("lock:payments:7", int(phase*4)), int(phase*3))...)
		batch = append(batch, next("lock:inventory:9", btoi(step%6 == 0))...)
		batch = append(batch, next("lock:carts:3", 0)...)
		batch = append(batch, next("lock:sessions:1", btoi(step%20 == 0))...)
		batch = append(batch, withWaiters(next("lock:jobs:1", 0), 1)...)
		batch = append(batch, next("lock:mail:1", 0)...)
		census(m, uint64(step+1), batch...)
		if step < contentionBuckets-1 {
			clk.advance(contentionBucket)
		}
	}
	m.building = false
	m.Update(tickMsg(clk.t))
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	return m, clk
}

func TestGoldenOverview120x30(t *testing.T) {
	m, _ := contendedModel(t, 120, 30)
	typeKeys(m, "o")
	out := m.View().Content
	golden.RequireEqual(t, out)
	// The ranking: waiters now, then hand-offs/s.
	var order []string
	for _, line := range strings.Split(screen(m), "\n")[3:] {
		if strings.TrimSpace(line) == "" {
			break
		}
		order = append(order, strings.Fields(line)[0])
	}
	if want := "[orders payments _other inventory carts]"; fmt.Sprint(order[:5]) != want {
		t.Fatalf("groups in the order %v, want %s:\n%s", order, want, screen(m))
	}
}

func TestGoldenOverview60x15(t *testing.T) {
	m, _ := contendedModel(t, 60, 15)
	typeKeys(m, "o", "down")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenOverviewTiny20x10(t *testing.T) {
	m, _ := contendedModel(t, 20, 10)
	typeKeys(m, "o")
	golden.RequireEqual(t, m.View().Content)
}

// TestOverviewSelectsGroup: enter on a group shows the table filtered to it, with the filter's
// own word for it; esc clears it as any filter.
func TestOverviewSelectsGroup(t *testing.T) {
	m, _ := contendedModel(t, 120, 30)
	typeKeys(m, "o", "down", "enter")
	if m.overview.open || m.filter.value() != "group:payments" {
		t.Fatalf("overview open %v, filter %q; want closed, group:payments", m.overview.open, m.filter.value())
	}
	if keys := visibleKeys(m); fmt.Sprint(keys) != "[lock:payments:7]" {
		t.Fatalf("table shows %v, want the payments lock only", keys)
	}
	typeKeys(m, "o", "g", "down", "down", "enter") // _other: the groups past the cap
	if keys := visibleKeys(m); len(keys) != 3 || !strings.Contains(fmt.Sprint(keys), "lock:jobs:1") {
		t.Fatalf("group:_other shows %v, want the three folded groups' locks", keys)
	}
	typeKeys(m, "esc")
	if n := len(visibleKeys(m)); n != 8 {
		t.Fatalf("%d locks after esc, want all 8", n)
	}
}

func TestOverviewKeys(t *testing.T) {
	m, _ := contendedModel(t, 120, 30)
	typeKeys(m, "o")
	mustContain(t, screen(m), "Contention by key group")
	typeKeys(m, "G")
	if m.overview.selected != "carts" {
		t.Fatalf("G selected %q, want the last group, carts", m.overview.selected)
	}
	typeKeys(m, "g", "up")
	if m.overview.selected != "orders" {
		t.Fatalf("g, up selected %q, want orders", m.overview.selected)
	}
	typeKeys(m, "o")
	if m.overview.open {
		t.Fatal("o did not close the overview")
	}
	typeKeys(m, "o", "esc")
	if m.overview.open || !strings.Contains(screen(m), "lock:orders:1001") {
		t.Fatalf("esc did not go back to the table:\n%s", screen(m))
	}
}

// TestGroupFilterWord: a group name with a space or a percent sign survives the filter word.
func TestGroupFilterWord(t *testing.T) {
	m, clk := emptyModel(t)
	census(m, 1, heldBy("lock:my orders:1", "v1", clk.t), heldBy("lock:50%:1", "v2", clk.t), heldBy("lock:my:1", "v3", clk.t))
	for _, group := range []string{"my orders", "50%"} {
		typeKeys(m, "/", groupFilter(group), "enter")
		if keys := visibleKeys(m); len(keys) != 1 || m.contention.groupOf(keys[0]) != group {
			t.Fatalf("filter %q shows %v", m.filter.value(), keys)
		}
		typeKeys(m, "esc")
	}
}
