package ui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/present/presenttest"
)

// TestTableAgreesWithCLI renders the shared fixture in the lock table: the same order, holder,
// age, TTL and flags as cli's TestLsTableAgreesWithTUI finds in `ls`.
func TestTableAgreesWithCLI(t *testing.T) {
	for sort, order := range presenttest.Orders {
		v := buildView(presenttest.Locks(), viewQuery{filter: newMatcher(""), sort: sort}, presenttest.Now, presenttest.StuckAfter)
		rc := rowContext{now: presenttest.Now, stuckAfter: presenttest.StuckAfter,
			span: func(string) time.Duration { return 0 }, st: monoStyles()}
		cols := layoutColumns(200, v.rows)
		var keys []string
		for _, l := range v.rows {
			keys = append(keys, l.Key)
			row := []rune(ansi.Strip(cols.row(l, false, rc)))
			flags, f := string(row[:2]), strings.Fields(string(row[2:]))
			want := presenttest.Want[l.Key]
			if f[1] != want.Holder || f[3] != want.Age || f[4] != want.TTL {
				t.Errorf("%s: holder %q age %q ttl %q, want %+v", l.Key, f[1], f[3], f[4], want)
			}
			wantFlags := map[bool]string{true: present.FlagStuck.Mark(), false: " "}[want.Stuck] +
				map[bool]string{true: present.FlagNoExpiry.Mark(), false: " "}[want.NoExpiry]
			if flags != wantFlags {
				t.Errorf("%s: flags %q, want %q", l.Key, flags, wantFlags)
			}
		}
		if !slices.Equal(keys, order) {
			t.Errorf("sort %s: %v, want %v", sort, keys, order)
		}
	}
}
