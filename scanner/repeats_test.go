package scanner

import (
	"fmt"
	"slices"
	"testing"
)

// TestDropRepeats: a key SCAN returned twice is kept once, at its first place; distinct
// keys all stay, in order.
func TestDropRepeats(t *testing.T) {
	var locks []Lock
	for i := range 2000 {
		locks = append(locks, Lock{Key: fmt.Sprintf("lock:%d", i%1500), Value: fmt.Sprint(i)})
	}
	got := dropRepeats(locks, false)
	if len(got) != 1500 {
		t.Fatalf("%d records, want 1500", len(got))
	}
	for i, l := range got {
		if want := fmt.Sprintf("lock:%d", i); l.Key != want || l.Value != fmt.Sprint(i) {
			t.Fatalf("record %d is %q=%q, want %q=%d (the first occurrence)", i, l.Key, l.Value, want, i)
		}
	}
	distinct := []Lock{{Key: "a"}, {Key: "b"}, {Key: "c"}}
	if got := dropRepeats(slices.Clone(distinct), false); len(got) != 3 || got[0].Key != "a" || got[2].Key != "c" {
		t.Fatalf("distinct keys changed: %v", got)
	}
}

// TestDropRepeatsByServer: on independent servers the same key on two servers is two locks;
// only a repeat on one server is dropped, by dropRepeats and by digestSet alike.
func TestDropRepeatsByServer(t *testing.T) {
	locks := []Lock{{Key: "k", Addr: "a"}, {Key: "k", Addr: "b"}, {Key: "k", Addr: "a", Value: "repeat"}}
	if got := dropRepeats(slices.Clone(locks), true); len(got) != 2 || got[0].Addr != "a" || got[1].Addr != "b" || got[0].Value != "" {
		t.Fatalf("dropRepeats by server: %+v", got)
	}
	if got := newDigestSet(true).dropSeen(slices.Clone(locks)); len(got) != 2 || got[1].Addr != "b" {
		t.Fatalf("digestSet by server: %+v", got)
	}
	if got := dropRepeats(slices.Clone(locks), false); len(got) != 1 {
		t.Fatalf("by key: %d records, want 1", len(got))
	}
}
