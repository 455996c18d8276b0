package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

// From the census to Redis: the operator opens a read-write lock's details, moves the cursor
// to a reader, presses d, types the key (the reader has long to live) and confirms; that
// reader's levels alone are removed and the audit trail names it. A reader that re-entered
// after the census is refused, and the D dialog of a multi-key lock deletes both its keys.
func TestReleaseHolderFromTheConsole(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	member := func(op, owner string) string {
		return protocol.LeaseMember{Mode: protocol.ModeRead, Op: "6f1c0a9e3b2d4c51:" + op,
			Value: protocol.Value{Node: "api-" + op, AcquiredAt: time.Now(), Rand: owner}}.String()
	}
	a, b, c := member("1", "aaaaaaaaaaaaaaaa"), member("2", "bbbbbbbbbbbbbbbb"), member("3", "cccccccccccccccc")
	deadline := func(d time.Duration) float64 { return float64(time.Now().Add(d).UnixMilli()) }
	rdb.ZAdd(ctx, "lock:doc", redis.Z{Score: deadline(time.Minute), Member: a}, redis.Z{Score: deadline(50 * time.Second), Member: b},
		redis.Z{Score: deadline(40 * time.Second), Member: c})
	rdb.Set(ctx, "lock:{o}:a", multiValue, time.Minute)
	rdb.Set(ctx, "lock:{o}:b", multiValue, time.Minute)

	target := connect.Target{Mode: connect.Standalone, Clients: []redis.UniversalClient{rdb}, Addrs: []string{srv.Addr}}
	census, err := scanner.New(target, scanner.Options{}).Census(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Now()}
	m := newModel(ctx, Options{Target: target, Admin: actions.New(target, actions.Options{Operator: "tester"}), Now: clk.now}, nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: census.Locks})
	feed(m, scanner.Update{Kind: scanner.UpdatePassDone, Gen: 1, Census: scanner.Census{FetchedAt: clk.t}})

	// release runs the dialog of the holder under the cursor after moving it by tabs, and the
	// action it starts.
	release := func(key string, tabs int, openKey string) actionDoneMsg {
		t.Helper()
		selectKey(t, m, key)
		runSync(m, typeKeys(m, "enter"))
		for range tabs {
			typeKeys(m, "tab")
		}
		typeKeys(m, openKey)
		if m.dialog == nil {
			t.Fatalf("no dialog; notice %q", m.notice.text)
		}
		clk.advance(time.Second) // past the dialog's input guard
		if m.dialog.typed {
			typeKeys(m, key)
		}
		cmd := typeKeys(m, "enter")
		if cmd == nil {
			t.Fatalf("no action started; notice %q", m.notice.text)
		}
		msg := cmd().(actionDoneMsg)
		m.Update(msg)
		typeKeys(m, "esc")
		return msg
	}

	if got := release("lock:doc", 1, "d"); got.err != nil || got.result.Outcome != actions.Released {
		t.Fatalf("release of the reader: %+v %v", got.result, got.err)
	}
	mustContain(t, m.notice.text, "released holder ")
	left := rdb.ZRange(ctx, "lock:doc", 0, -1).Val()
	if len(left) != 2 {
		t.Fatalf("left %q, want two readers", left)
	}
	recs, err := actions.New(target, actions.Options{}).Audit(ctx, 1)
	if err != nil || len(recs) != 1 || recs[0].Action != actions.ActionReleaseHolder || recs[0].Holder == "" || recs[0].Operator != "tester" {
		t.Fatalf("audit %+v %v", recs, err)
	}
	released := recs[0].Holder
	for _, mem := range left {
		if strings.HasSuffix(mem, released) {
			t.Fatalf("the released holder %s still has %q", released, mem)
		}
	}

	// The census still shows the other reader (its lease just extended) and it re-enters now:
	// refused, nothing removed.
	var other scanner.SharedHolder
	for _, h := range lockOf(t, m, "lock:doc").Shared.Live() {
		if h.ID != released {
			other = h
			break
		}
	}
	// e on the other reader: its lease gets the TTL typed (2m), nobody else's changes.
	selectKey(t, m, "lock:doc")
	runSync(m, typeKeys(m, "enter"))
	for m.detail.holder = 0; ; m.detail.holder++ {
		if h, _ := m.detail.selectedHolder(lockOf(t, m, "lock:doc")); h.ID == other.ID {
			break
		}
	}
	typeKeys(m, "e")
	clk.advance(time.Second)
	typeKeys(m, "backspace", "backspace", "backspace", "backspace", "2m", "tab")
	cmd := typeKeys(m, "enter")
	if cmd == nil {
		t.Fatalf("no extend started; notice %q, dialog %+v", m.notice.text, m.dialog)
	}
	if got := cmd().(actionDoneMsg); got.err != nil || got.result.Outcome != actions.Extended || got.result.TTL != 2*time.Minute {
		t.Fatalf("extend of the reader: %+v %v", got.result, got.err)
	}
	typeKeys(m, "esc")
	if left := time.Until(time.UnixMilli(int64(rdb.ZScore(ctx, "lock:doc", other.Leases[0].Member).Val()))); left < 110*time.Second {
		t.Fatalf("the reader's lease has %v left after the extend", left)
	}
	rdb.ZAdd(ctx, "lock:doc", redis.Z{Score: deadline(time.Minute), Member: member("9", other.ID)})
	l := lockOf(t, m, "lock:doc")
	msg := holderCmd(ctx, m.admin, 99, l, other, actions.ActionReleaseHolder, 0, "test")().(actionDoneMsg)
	if msg.err != nil || msg.result.Outcome != actions.ChangedHands || rdb.ZCard(ctx, "lock:doc").Val() != 3 {
		t.Fatalf("a re-entered reader: %+v %v, %d members", msg.result, msg.err, rdb.ZCard(ctx, "lock:doc").Val())
	}

	if got := release("lock:{o}:a", 0, "D"); got.err != nil || got.result.Outcome != actions.Released {
		t.Fatalf("release together: %+v %v", got.result, got.err)
	}
	if n := rdb.Exists(ctx, "lock:{o}:a", "lock:{o}:b").Val(); n != 0 {
		t.Fatalf("%d keys of the multi-key lock left", n)
	}
}

// lockOf is key's record in m's census.
func lockOf(t *testing.T, m *Model, key string) *scanner.Lock {
	t.Helper()
	l := m.locks.get(key)
	if l == nil {
		t.Fatalf("%s not in the census", key)
	}
	return l
}
