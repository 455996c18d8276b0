package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/scanner"
)

const (
	redissonID = "6841f7a9-1c2d-4e5f-8a9b-83751ef2f06b"
	multiValue = "api-7:req-9:1796029100000:00112233445566ff"
)

// lease is a lockscope lease set member of owner in mode, acquired ago before t0, for holder
// records (a holder's leases as the scanner reads them).
func lease(mode protocol.Mode, op, node, owner string, ago, left time.Duration) scanner.Lease {
	m := protocol.LeaseMember{Mode: mode, Op: "6f1c0a9e3b2d4c51:" + op,
		Value: protocol.Value{Node: node, AcquiredAt: t0.Add(-ago), Rand: owner}}
	return scanner.Lease{Member: m.String(), Deadline: t0.Add(left).UnixMilli(), TTL: left}
}

// sharedFixture is a census of shared primitives and a multi-key lock, read at t0: a lockscope
// read-write lock with two readers and a writer waiting, a Redisson write lock, a lockscope
// semaphore with 3 of 5 permits out and two waiters, a Redisson permit semaphore, a Redisson
// RSemaphore, and two keys taken together.
func sharedFixture() []scanner.Lock {
	readerA := []scanner.Lease{lease(protocol.ModeRead, "17", "api-7", "aaaaaaaaaaaaaaaa", 12*time.Second, 20*time.Second),
		lease(protocol.ModeRead, "18", "api-7", "aaaaaaaaaaaaaaaa", 2*time.Second, 28*time.Second)}
	readerB := []scanner.Lease{lease(protocol.ModeRead, "4", "worker-2", "bbbbbbbbbbbbbbbb", 3*time.Second, 9*time.Second)}
	permit := func(op, node, owner string, ago, left time.Duration) scanner.SharedHolder {
		l := lease(protocol.ModePermit, op, node, owner, ago, left)
		return scanner.SharedHolder{ID: owner, Mode: protocol.ModePermit, Count: 1, TTL: left, Node: node, Trace: "-",
			AcquiredAt: t0.Add(-ago), Leases: []scanner.Lease{l}}
	}
	permitID := "68b48de6cd392916141d807d6e4552b4"
	return []scanner.Lock{
		{
			Key: "lock:doc:7", Format: scanner.FormatLockscope, Type: "zset", TTL: 28 * time.Second, FetchedAt: t0,
			Waiters: 1, HasWaiters: true, Addr: "127.0.0.1:6379", Value: readerA[0].Member + "\n" + readerA[1].Member + "\n" + readerB[0].Member,
			Shared: &scanner.Shared{Kind: scanner.KindRWLock, Mode: protocol.ModeRead, InUse: 3,
				Holders: []scanner.SharedHolder{
					{ID: "aaaaaaaaaaaaaaaa", Mode: protocol.ModeRead, Count: 2, TTL: 28 * time.Second, Node: "api-7", Trace: "req-1",
						AcquiredAt: t0.Add(-12 * time.Second), Leases: readerA},
					{ID: "bbbbbbbbbbbbbbbb", Mode: protocol.ModeRead, Count: 1, TTL: 9 * time.Second, Node: "worker-2",
						AcquiredAt: t0.Add(-3 * time.Second), Leases: readerB},
				},
				Waiters: []scanner.SharedWaiter{{ID: "9a8b7c6d5e4f3a2b:4", Mode: protocol.ModeWrite, TTL: 30 * time.Second,
					Value: "deploy-1:-:1796029190000:fedcba9876543210"}},
			},
		},
		{
			Key: "lock:redisson:rw-write", Format: scanner.FormatRedisson, Type: "hash", TTL: 24 * time.Second, FetchedAt: t0,
			Reentry: 1, Value: "mode=write\n" + redissonID + ":67:write=1", Addr: "127.0.0.1:6379",
			Shared: &scanner.Shared{Kind: scanner.KindRWLock, Mode: protocol.ModeWrite, InUse: 1,
				Holders: []scanner.SharedHolder{{ID: redissonID + ":67", Mode: protocol.ModeWrite, Count: 1, TTL: 24 * time.Second,
					Field: redissonID + ":67:write"}}},
		},
		{
			Key: "lock:pool:db", Format: scanner.FormatLockscope, Type: "zset", TTL: 14 * time.Second, FetchedAt: t0,
			Waiters: 2, HasWaiters: true, Addr: "127.0.0.1:6379", Value: "p|…",
			Shared: &scanner.Shared{Kind: scanner.KindSemaphore, Mode: protocol.ModePermit, InUse: 3, Limit: 5, HasLimit: true,
				Available: 2, HasAvailable: true, Expired: 1,
				Holders: []scanner.SharedHolder{
					permit("21", "api-7", "1111111111111111", 40*time.Second, 14*time.Second),
					permit("22", "api-8", "2222222222222222", 20*time.Second, 4*time.Second),
					permit("23", "batch-1", "3333333333333333", 9*time.Second, 11*time.Second),
					{ID: "4444444444444444", Mode: protocol.ModePermit, Count: 1, Expired: true, Node: "crashed-1"},
				},
				Waiters: []scanner.SharedWaiter{
					{ID: "9a8b7c6d5e4f3a2b:7", Mode: protocol.ModePermit, TTL: 20 * time.Second, Value: "api-9:-:1796029199000:0000000000000009"},
					{ID: "0123456789abcdef:3", Mode: protocol.ModePermit, TTL: 20 * time.Second, Value: "api-3:-:1796029199500:0000000000000003"},
				},
			},
		},
		{
			Key: "lock:redisson:psem", Format: scanner.FormatRedisson, Type: "string", NoExpiry: true, FetchedAt: t0,
			Value: "2", Addr: "127.0.0.1:6379",
			Shared: &scanner.Shared{Kind: scanner.KindPermitSemaphore, Mode: protocol.ModePermit, InUse: 1, Limit: 3, HasLimit: true,
				Available: 2, HasAvailable: true,
				Holders: []scanner.SharedHolder{{ID: permitID, Mode: protocol.ModePermit, Count: 1, TTL: 9*time.Minute + 44*time.Second,
					Leases: []scanner.Lease{{Member: "\x68\xb4\x8d\xe6\xcd\x39\x29\x16\x14\x1d\x80\x7d\x6e\x45\x52\xb4",
						Deadline: t0.Add(9*time.Minute + 44*time.Second).UnixMilli(), TTL: 9*time.Minute + 44*time.Second}}}}},
		},
		{
			Key: "lock:redisson:sem", Format: scanner.FormatRedisson, Type: "string", NoExpiry: true, FetchedAt: t0,
			Value: "3", Addr: "127.0.0.1:6379",
			Shared: &scanner.Shared{Kind: scanner.KindSemaphore, Mode: protocol.ModePermit, Available: 3, HasAvailable: true, HoldersUnknown: true},
		},
		{
			Key: "lock:{order-1}:payment", Format: scanner.FormatLockscope, Type: "string", Node: "api-7", Trace: "req-9",
			AcquiredAt: t0.Add(-5 * time.Second), TTL: 25 * time.Second, FetchedAt: t0, Fence: 1796029100000001, HasFence: true,
			Value: multiValue, Addr: "127.0.0.1:6379",
		},
		{
			Key: "lock:{order-1}:stock", Format: scanner.FormatLockscope, Type: "string", Node: "api-7", Trace: "req-9",
			AcquiredAt: t0.Add(-5 * time.Second), TTL: 25 * time.Second, FetchedAt: t0, Fence: 1796029100000001, HasFence: true,
			Value: multiValue, Addr: "127.0.0.1:6379",
		},
	}
}

// detailOf opens the detail view of key in a model of the shared fixture at width x height.
func detailOf(t *testing.T, key string, width, height int) *Model {
	t.Helper()
	m, _ := newModelOf(t, width, height, sharedFixture())
	selectKey(t, m, key)
	runSync(m, typeKeys(m, "enter"))
	return m
}

func TestGoldenSharedTable120x30(t *testing.T) {
	m, _ := newModelOf(t, 120, 30, sharedFixture())
	s := screen(m)
	for _, mark := range []string{"2 readers", "(write)", "3/5 permits", "1/3 permits", "3 available"} {
		mustContain(t, s, mark)
	}
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenSharedTableNarrow40x12(t *testing.T) {
	m, _ := newModelOf(t, 40, 12, sharedFixture())
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenSharedTableTiny20x10(t *testing.T) {
	m, _ := newModelOf(t, 20, 10, sharedFixture())
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenRWReadersDetail120x30(t *testing.T) {
	m := detailOf(t, "lock:doc:7", 120, 30)
	s := screen(m)
	mustContain(t, s, "▸ aaaaaaaaaaaaaaaa  read ×2  ttl 28s  node api-7 trace req-1")
	mustContain(t, s, "1. 9a8b7c6d5e4f3a2b:4  write  ttl 30s")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenRWWriteDetail100x24(t *testing.T) {
	m := detailOf(t, "lock:redisson:rw-write", 100, 24)
	mustContain(t, screen(m), "held for write")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenSemaphoreDetail120x30(t *testing.T) {
	m := detailOf(t, "lock:pool:db", 120, 30)
	mustContain(t, screen(m), "3 of 5 permits in use, 2 available")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenPermitSemaphoreDetail100x24(t *testing.T) {
	m := detailOf(t, "lock:redisson:psem", 100, 24)
	mustContain(t, screen(m), "68b48de6cd392916141d807d6e4552b4  permit ×1  ttl 9m44s")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenRSemaphoreDetail100x24(t *testing.T) {
	m := detailOf(t, "lock:redisson:sem", 100, 24)
	mustContain(t, screen(m), "Redisson keeps no record of who holds its permits")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenMultiKeyDetail120x30(t *testing.T) {
	m := detailOf(t, "lock:{order-1}:payment", 120, 30)
	mustContain(t, screen(m), "taken together with lock:{order-1}:stock · D releases all 2 at once")
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenHolderReleaseDialog80x24(t *testing.T) {
	m := detailOf(t, "lock:doc:7", 80, 24)
	typeKeys(m, "tab", "d")
	if m.dialog == nil || m.dialog.kind != dialogReleaseHolder || m.dialog.holder.ID != "bbbbbbbbbbbbbbbb" {
		t.Fatalf("dialog %+v, want the release of reader bbbb…", m.dialog)
	}
	golden.RequireEqual(t, m.View().Content)
}

func TestGoldenHolderReleaseDialog60x15(t *testing.T) {
	m := detailOf(t, "lock:pool:db", 60, 15)
	typeKeys(m, "tab", "d") // the permit of api-8, 4s left: no key to type
	golden.RequireEqual(t, m.View().Content)
}

// The holder cursor stays among the live holders; d in the table names where to go; the
// dialog defaults to No (esc declines, and the decline is audited with the holder); e asks for
// the holder's new TTL, prefilled; an RSemaphore's count, which may as well be a naive lock
// whose EXPIRE never came (the lock the operator most needs to free), gets a lock's dialogs:
// release typed, compared with the count seen, and extend.
func TestHolderCursorAndDialog(t *testing.T) {
	m := detailOf(t, "lock:pool:db", 120, 30)
	typeKeys(m, "shift+tab", "shift+tab")
	if m.detail.holder != 0 {
		t.Fatalf("cursor %d after going up from the first", m.detail.holder)
	}
	typeKeys(m, "tab", "tab", "tab", "tab")
	if m.detail.holder != 2 { // three live permits; the expired one is not selectable
		t.Fatalf("cursor %d, want the last live permit (2)", m.detail.holder)
	}
	typeKeys(m, "d")
	if m.dialog == nil || m.dialog.holder.Node != "batch-1" {
		t.Fatalf("dialog %+v, want batch-1's permit", m.dialog)
	}
	m.clock = func() time.Time { return t0.Add(time.Second) } // past the dialog's input guard
	cmd := typeKeys(m, "esc")
	if m.dialog != nil || cmd == nil {
		t.Fatal("esc did not close the dialog with an audit record of the decline")
	}
	mustContain(t, m.notice.text, "answered No")

	typeKeys(m, "e")
	if m.dialog == nil || m.dialog.kind != dialogExtendHolder || m.dialog.holder.Node != "batch-1" || m.dialog.inputs[0].Value() != "30s" {
		t.Fatalf("e: dialog %+v, want batch-1's permit with 30s", m.dialog)
	}
	typeKeys(m, "esc")

	m2 := detailOf(t, "lock:redisson:sem", 120, 30)
	typeKeys(m2, "d")
	if m2.dialog == nil || m2.dialog.kind != dialogRelease || !m2.dialog.typed || m2.dialog.lock.Value != "3" {
		t.Fatalf("RSemaphore or naive lock: dialog %+v notice %q", m2.dialog, m2.notice.text)
	}
	m2.dialog = nil
	typeKeys(m2, "e")
	if m2.dialog == nil || m2.dialog.kind != dialogExtend {
		t.Fatalf("RSemaphore or naive lock: extend dialog %+v notice %q", m2.dialog, m2.notice.text)
	}

	m3, _ := newModelOf(t, 120, 30, sharedFixture())
	selectKey(t, m3, "lock:doc:7")
	typeKeys(m3, "d")
	if m3.dialog != nil || !strings.Contains(m3.notice.text, "open its details") {
		t.Fatalf("from the table: dialog %v notice %q", m3.dialog, m3.notice.text)
	}
}

// A search for the keys taken together that answers after another began is dropped.
func TestTogetherStaleAnswerDropped(t *testing.T) {
	m := detailOf(t, "lock:{order-1}:payment", 120, 30)
	seq := m.detail.together.seq
	m.Update(togetherMsg{seq: seq - 1, id: "lock:{order-1}:payment", value: multiValue, keys: []string{"lock:stale"}})
	if got := m.detail.together.keys; len(got) != 1 || got[0] != "lock:{order-1}:stock" {
		t.Fatalf("keys %q after a stale answer", got)
	}
}

func TestGoldenHolderExtendDialog80x24(t *testing.T) {
	m := detailOf(t, "lock:doc:7", 80, 24)
	typeKeys(m, "e")
	if m.dialog == nil || m.dialog.kind != dialogExtendHolder || m.dialog.holder.ID != "aaaaaaaaaaaaaaaa" {
		t.Fatalf("dialog %+v, want the extend of reader aaaa…", m.dialog)
	}
	golden.RequireEqual(t, m.View().Content)
}

// Every lock goes while a detail view is open (the rw-pool demo's document and pool are both
// free for a moment): the view, help line included, still renders. It dereferenced the
// missing selected lock, and the demo's console panicked.
func TestDetailWhenEveryLockWent(t *testing.T) {
	m := detailOf(t, "lock:doc:7", 120, 30)
	var gone []scanner.Lock
	for _, l := range sharedFixture() {
		gone = append(gone, scanner.Lock{Key: l.Key, Gone: true, Addr: l.Addr})
	}
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 2, Locks: gone})
	if len(m.view.rows) != 0 || !m.detail.open {
		t.Fatalf("%d rows left, detail open %v: not the case under test", len(m.view.rows), m.detail.open)
	}
	_ = screen(m)
}
