package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/present/presenttest"
	"github.com/lockscope/lockscope/scanner"
)

// renderFixture is every kind of lock the renderers meet: the shared fixture, hostile and
// non-ASCII text in every string field, a Redlock lock with a missing instance, big numbers.
func renderFixture() []*scanner.Lock {
	locks := presenttest.Locks()
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for i, s := range []string{hostile, `back\slash`, `"quoted" <html> & co`, "é ü 日本 \u2028 \u2029 \t", "\xff\xfe", ""} {
		locks = append(locks, &scanner.Lock{Key: "lock:" + s, Format: scanner.FormatOpaque, Node: s, Trace: s, Value: s + s,
			AcquiredAt: at, TTL: time.Duration(i) * time.Hour, FetchedAt: at.Add(time.Minute), Addr: "10.0.0.1:6379",
			Reentry: i, Fence: int64(i) << 60, HasFence: i%2 == 0, Truncated: i == 1})
	}
	locks = append(locks, &scanner.Lock{Key: "lock:redlock", Format: scanner.FormatLockscope, Value: "v", NoExpiry: true,
		Quorum: &scanner.Quorum{Agree: 1, Needed: 2, Total: 3, Instances: []scanner.Instance{
			{Addr: "a:1", Value: "v", Present: true, NoExpiry: true}, {Addr: "b:2", Missing: true}, {Addr: "c:3"}}}})
	// Shared primitives: hostile text in a holder, its lease and a waiter; a permit's raw bytes.
	rw := &scanner.Shared{Kind: scanner.KindRWLock, Mode: protocol.ModeRead, InUse: 2, Expired: 1, Truncated: true,
		Holders: []scanner.SharedHolder{
			{ID: "00000000000000aa", Mode: protocol.ModeRead, Count: 2, TTL: 1500 * time.Millisecond, Node: hostile, Trace: "t", AcquiredAt: at,
				Leases: []scanner.Lease{{Member: "r|" + hostile, Deadline: 1764400000123, TTL: time.Second}, {Member: "r|x", Deadline: 1764400000999, TTL: 1500 * time.Millisecond}}},
			{ID: "00000000000000bb", Mode: protocol.ModeRead, Count: 1, Expired: true, Leases: []scanner.Lease{{Member: "r|y", Deadline: 1}}}},
		Waiters: []scanner.SharedWaiter{{ID: "c:1", Mode: protocol.ModeWrite, TTL: time.Minute, Value: hostile, Entry: "c:1|60000|w|" + hostile}}}
	psem := &scanner.Shared{Kind: scanner.KindPermitSemaphore, Mode: protocol.ModePermit, Limit: 3, HasLimit: true, Available: 2, HasAvailable: true, InUse: 1,
		Holders: []scanner.SharedHolder{{ID: "68b48de6", Mode: protocol.ModePermit, Count: 1, TTL: time.Minute, Leases: []scanner.Lease{{Member: "\x68\xb4\x8d\xe6", Deadline: 1764400060000, TTL: time.Minute}}},
			{ID: "ff", Mode: protocol.ModePermit, Count: 1, NoExpiry: true}}}
	locks = append(locks,
		&scanner.Lock{Key: "lock:rw", Format: scanner.FormatLockscope, Type: "zset", Value: "r|x", TTL: time.Second, FetchedAt: at, Addr: "10.0.0.1:6379", Shared: rw},
		&scanner.Lock{Key: "lock:psem", Format: scanner.FormatRedisson, Type: "string", Value: "2", NoExpiry: true, FetchedAt: at, Addr: "10.0.0.1:6379", Shared: psem})
	return locks
}

func TestLockJSONAppendsAsEncodingJSON(t *testing.T) {
	for _, l := range renderFixture() {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(toLockJSON(l, l.FetchedAt)); err != nil {
			t.Fatal(err)
		}
		if got := appendLockJSON(nil, l, l.FetchedAt); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%q:\n got %s\nwant %s", l.Key, got, want.Bytes())
		}
	}
}

// TestTableAlignsAsTabwriter: the ls table is laid out as text/tabwriter laid it out
// (minwidth 0, padding 2, spaces), runes counted, the last column unpadded.
func TestTableAlignsAsTabwriter(t *testing.T) {
	locks := renderFixture()
	var want bytes.Buffer
	tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\n", strings.Join(lsColumns, "\t"))
	for _, l := range locks {
		fmt.Fprintf(tw, "%s\n", appendRow(nil, l, l.FetchedAt, time.Minute))
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := writeLocksTable(&got, locks, time.Minute); err != nil {
		t.Fatal(err)
	}
	if table, _, _ := strings.Cut(got.String(), fmt.Sprintf("%d locks", len(locks))); table != want.String() {
		t.Errorf("table:\n%s\nwant (tabwriter):\n%s", table, want.String())
	}
}

// TestTableCellsAsSprintf: every cell is what present.Sprintf made of it before rows were
// rendered in bulk (escaped, cut at the column's width).
func TestTableCellsAsSprintf(t *testing.T) {
	for _, l := range renderFixture() {
		want := present.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s",
			present.Cut{Text: l.Key, Max: keyWidth}, present.Cut{Text: present.HolderText(l), Max: holderWidth},
			present.Cut{Text: present.OrUnknown(l.Trace), Max: traceWidth}, present.Age(l, l.FetchedAt), present.TTL(l, l.FetchedAt),
			present.Ordinal(int64(l.Reentry), l.Reentry > 0), present.Ordinal(l.Fence, l.HasFence), present.FormatText(l),
			present.FlagsText(l, l.FetchedAt, time.Minute))
		if got := appendRow(nil, l, l.FetchedAt, time.Minute); string(got) != string(want) {
			t.Errorf("%q:\n got %q\nwant %q", l.Key, got, want)
		}
	}
}

// TestLockRecordsRenderAsTheLock: a lock kept as a record (sorted ls --json) renders the same
// line as the lock itself.
func TestLockRecordsRenderAsTheLock(t *testing.T) {
	locks := renderFixture()
	far := time.Date(3000, 1, 1, 0, 0, 0, 1, time.UTC) // past UnixNano's range
	locks = append(locks, &scanner.Lock{Key: "lock:far", Format: scanner.FormatLockscope, AcquiredAt: far,
		FetchedAt: far.Add(-time.Hour), TTL: -time.Second, Addr: "10.0.0.2:6379", Gone: true, HasFence: true, Fence: -7})
	records := newLockRecords()
	kept := make([]recordRef, len(locks))
	for i, l := range locks {
		kept[i] = records.keep(l)
	}
	var instances []scanner.Instance
	for i, l := range locks {
		back := records.lock(records.record(kept[i]), instances)
		if got, want := appendLockJSON(nil, &back, back.FetchedAt), appendLockJSON(nil, l, l.FetchedAt); !bytes.Equal(got, want) {
			t.Errorf("%q:\n got %s\nwant %s", l.Key, got, want)
		}
	}
}

// TestPipelinedYieldsEveryRowInOrder: across batches, and a loop that breaks stops the walk.
func TestPipelinedYieldsEveryRowInOrder(t *testing.T) {
	const n = 2*pipelinedBatch + 3
	rows := func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
	next := 0
	for batch := range pipelined(rows) {
		for _, r := range batch {
			if r != next {
				t.Fatalf("row %d, want %d", r, next)
			}
			next++
		}
	}
	if next != n {
		t.Fatalf("%d rows, want %d", next, n)
	}
	walked := 0
	for range pipelined(func(yield func(int) bool) {
		for i := range 64 * pipelinedBatch {
			walked = i
			if !yield(i) {
				return
			}
		}
	}) {
		break
	}
	if walked >= 8*pipelinedBatch { // a few batches ahead at most

		t.Errorf("the walk went on to row %d after the loop broke", walked)
	}
}

// TestLockRecordSize: a lock of the million-lock benchmark (redistest.LoadLocks) kept for
// sorted JSON takes a third of its rendered line or less (docs/cli.md; -v prints the sizes).
func TestLockRecordSize(t *testing.T) {
	fetched := time.UnixMilli(1764400000123).Add(time.Minute)
	l := &scanner.Lock{Key: redistest.LockKey(42), Format: scanner.FormatLockscope, Type: "string",
		Node: "worker-42", Value: "worker-42:-:1764400000123:000000000000002a",
		AcquiredAt: time.UnixMilli(1764400000123), TTL: time.Hour, FetchedAt: fetched, Addr: "127.0.0.1:6379"}
	records := newLockRecords()
	record := records.record(records.keep(l))
	line := appendLockJSON(nil, l, l.FetchedAt)
	t.Logf("record %d bytes, line %d bytes", len(record), len(line))
	if 3*len(record) > len(line) {
		t.Errorf("the record takes %d bytes for a %d-byte line: more than a third", len(record), len(line))
	}
}
