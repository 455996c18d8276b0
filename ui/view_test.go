package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// Golden files of whole screens at fixed sizes with the clock frozen (update with
// `go test ./ui -run TestGolden -update`). The escape sequences are part of the comparison.

func TestGoldenMain120x30(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	m.Update(eventMsg{event: protocol.Event{Type: string(locklib.EventAcquired), Key: "lock:order:1001", Node: "api-7", Trace: "req-42", Token: 1042, TTLMs: 30000, WaitMs: 12, AtMs: t0.Add(-90 * time.Second).UnixMilli()}})
	m.Update(eventMsg{event: protocol.Event{Type: string(locklib.EventWaiting), Key: "lock:order:1001", Node: "api-9", Waiters: 2, AtMs: t0.Add(-time.Second).UnixMilli()}})
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenSmall60x15(t *testing.T) {
	m, _ := newTestModel(t, 60, 15)
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenTiny20x10(t *testing.T) {
	m, _ := newTestModel(t, 20, 10)
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenNoColor80x24(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	m.Update(tea.ColorProfileMsg{Profile: colorprofile.ASCII})
	out := m.View().Content
	if strings.Contains(out, "38;2;") || strings.Contains(out, "48;2;") || strings.Contains(out, "38;5;") {
		t.Fatal("colours in a no-colour view")
	}
	golden.RequireEqual(t, out)
}

func TestGoldenLightBackground80x24(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	m.Update(tea.BackgroundColorMsg{Color: lipgloss.Color("#ffffff")})
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenReleaseDialog80x24(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	selectKey(t, m, "lock:order:1001")
	typeKeys(m, "d")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenReleaseDialog60x15(t *testing.T) {
	m, _ := newTestModel(t, 60, 15)
	selectKey(t, m, "lock:order:1001")
	typeKeys(m, "d")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenDetailFull140x30(t *testing.T) {
	m, _ := newTestModel(t, 140, 30)
	selectKey(t, m, "lock:order:1001")
	typeKeys(m, "enter")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenDetailNarrow60x15(t *testing.T) {
	m, _ := newTestModel(t, 60, 15)
	selectKey(t, m, "lock:cart:7")
	typeKeys(m, "enter")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenHelp80x24(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	typeKeys(m, "?")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenReadOnly80x24(t *testing.T) {
	m, _ := newTestModel(t, 80, 24, readOnly)
	golden.RequireEqual(t, m.View().Content)
}

// TestEverySizeFits renders every screen state at sizes from 1x1 to 130x40 and checks
// that the frame has exactly the terminal's height and no line wider than its width: no
// panic, no wrapped or stray lines, down to 20 columns and below.
func TestEverySizeFits(t *testing.T) {
	states := map[string]func(*Model){
		"table":  func(*Model) {},
		"filter": func(m *Model) { typeKeys(m, "/", "ord") },
		"dialog": func(m *Model) { selectKey(t, m, "lock:order:1001"); typeKeys(m, "d") },
		"extend": func(m *Model) { selectKey(t, m, "lock:order:1001"); typeKeys(m, "e") },
		"detail": func(m *Model) { typeKeys(m, "enter") },
		"help":   func(m *Model) { typeKeys(m, "?") },
		"audit":  func(m *Model) { typeKeys(m, "a") },
		"overview": func(m *Model) { // a hand-off, so that sparklines have something
			typeKeys(m, "o")
			next := fixture()[0]
			next.Value = "api-8:req-43:1796029110000:1111111111111111"
			feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{next}})
		},
		"jumped": func(m *Model) { // a wider FENCE column, a longer detail view
			switchMaster(m, oldMaster, newMaster)
			feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{orderAt(jumpedToken, t0)}})
		},
		"jumped detail": func(m *Model) {
			switchMaster(m, oldMaster, newMaster)
			feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: []scanner.Lock{orderAt(jumpedToken, t0)}})
			selectKey(t, m, "lock:order:1001")
			typeKeys(m, "enter")
		},
	}
	// Shared primitives (sharedFixture): the table, a detail view with holders and waiters, the
	// per-holder dialog, a multi-key lock's detail view and the dialog releasing its keys.
	shared := map[string]func(*Model){
		"shared table":  func(*Model) {},
		"shared detail": func(m *Model) { selectKey(t, m, "lock:pool:db"); runSync(m, typeKeys(m, "enter")) },
		"holder dialog": func(m *Model) { selectKey(t, m, "lock:doc:7"); runSync(m, typeKeys(m, "enter")); typeKeys(m, "d") },
		"together dialog": func(m *Model) {
			selectKey(t, m, "lock:{order-1}:payment")
			runSync(m, typeKeys(m, "enter"))
			typeKeys(m, "D")
		},
	}
	for name, setup := range shared {
		states[name] = setup
	}
	for name, setup := range states {
		locks := fixture()
		if _, ok := shared[name]; ok {
			locks = sharedFixture()
		}
		m, _ := newModelOf(t, 80, 24, locks)
		setup(m)
		for _, w := range []int{1, 2, 5, 10, 15, 19, 20, 21, 30, 40, 59, 60, 61, 80, 109, 110, 130} {
			for _, h := range []int{1, 2, 3, 5, 7, 8, 10, 14, 15, 16, 20, 24, 31, 40} {
				m.Update(tea.WindowSizeMsg{Width: w, Height: h})
				out := m.View().Content
				lines := strings.Split(out, "\n")
				if len(lines) != h {
					t.Fatalf("%s at %dx%d: %d lines", name, w, h, len(lines))
				}
				for i, l := range lines {
					if lw := lipgloss.Width(l); lw > w {
						t.Fatalf("%s at %dx%d: line %d is %d wide: %q", name, w, h, i, lw, l)
					}
				}
			}
		}
	}
}

func TestResizeKeepsCursorVisible(t *testing.T) {
	m, _ := newTestModel(t, 120, 40)
	typeKeys(m, "G") // last row
	for _, h := range []int{40, 15, 8, 5, 3, 30} {
		m.Update(tea.WindowSizeMsg{Width: 60, Height: h})
		if m.table.height > 0 && (m.table.cursor < m.table.offset || m.table.cursor >= m.table.offset+m.table.height) {
			t.Fatalf("height %d: cursor %d outside window [%d,%d)", h, m.table.cursor, m.table.offset, m.table.offset+m.table.height)
		}
		if !strings.Contains(screen(m), "lock:queue") && m.table.height > 0 {
			t.Fatalf("height %d: the selected row is not on screen:\n%s", h, screen(m))
		}
	}
}
