package present

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lockscope/lockscope/scanner"
)

// Sort is an order of the lock table, shared by `ls --sort` and the TUI's T A K H keys.
// Every order ends with the key, so it is total: the same locks always come out the same
// way. A reversed order is the exact reverse, ties and unknowns included.
type Sort int

const (
	// SortByKey orders by key, bytewise.
	SortByKey Sort = iota
	// SortByTTL puts the soonest expiry first and locks without expiry last. It compares
	// deadlines (FetchedAt + TTL), which do not move with time, so the order of a live view
	// needs no re-sort as the TTLs count down; at one instant it is the order of the
	// remaining TTLs, and it is fair to locks read at different moments of a census.
	SortByTTL
	// SortByAge puts the oldest acquisition first and unknown ages last.
	SortByAge
	// SortByHolder orders by holder node, bytewise, with unknown holders last.
	SortByHolder
)

// sorts are the orders by name, as `ls --sort` takes them.
var sorts = []Sort{SortByKey, SortByTTL, SortByAge, SortByHolder}

func (s Sort) String() string {
	switch s {
	case SortByTTL:
		return "ttl"
	case SortByAge:
		return "age"
	case SortByHolder:
		return "holder"
	default:
		return "key"
	}
}

// ParseSort is the order named name (key, ttl, age or holder).
func ParseSort(name string) (Sort, error) {
	for _, s := range sorts {
		if s.String() == name {
			return s, nil
		}
	}
	names := make([]string, len(sorts))
	for i, s := range sorts {
		names[i] = s.String()
	}
	return SortByKey, fmt.Errorf("want one of %s", strings.Join(names, ", "))
}

// sortEntry is one row's sort key, copied out of its record so the sort compares compact
// values instead of chasing a pointer to a large record on every comparison (a million
// records do not fit in the CPU caches).
type sortEntry struct {
	num     int64  // the numeric column: deadline or acquisition time in unix ns
	unknown bool   // the column's value is unknown (no holder): after every known one
	text    string // the text column: the holder node
	key     string
	lock    *scanner.Lock
}

// never is the deadline of a lock without expiry and the acquisition time of an unknown
// age: after every real time.
const never = math.MaxInt64

// SortLocks orders rows in place by s (reversed when desc), then by key.
func SortLocks(rows []*scanner.Lock, s Sort, desc bool) {
	entries := make([]sortEntry, len(rows))
	for i, l := range rows {
		e := sortEntry{key: l.Key, lock: l}
		switch s {
		case SortByTTL:
			e.num = never
			if !l.NoExpiry {
				e.num = l.FetchedAt.Add(l.TTL).UnixNano()
			}
		case SortByAge:
			e.num = never
			if !l.AcquiredAt.IsZero() {
				e.num = l.AcquiredAt.UnixNano()
			}
		case SortByHolder:
			e.text, e.unknown = l.Node, l.Node == ""
		}
		entries[i] = e
	}
	slices.SortFunc(entries, func(a, b sortEntry) int {
		c := cmp.Compare(a.num, b.num)
		if c == 0 && a.unknown != b.unknown {
			c = -1
			if a.unknown {
				c = 1
			}
		}
		if c == 0 {
			c = strings.Compare(a.text, b.text)
		}
		if c == 0 {
			c = strings.Compare(a.key, b.key)
		}
		if desc {
			return -c
		}
		return c
	})
	for i, e := range entries {
		rows[i] = e.lock
	}
}
