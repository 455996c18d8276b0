package cli

import (
	"bufio"
	"io"
	"slices"
	"time"

	"github.com/lockscope/lockscope/scanner"
)

// writeLocksTable writes locks, in their order, as ls writes a sorted table of a census of
// them.
func writeLocksTable(w io.Writer, locks []*scanner.Lock, stuckAfter time.Duration) error {
	rows := make([]tableRow, len(locks))
	set := tableSettings{stuckAfter: stuckAfter}
	widths := newColumnWidths(set)
	var summary censusSummary
	for i, l := range locks {
		rows[i] = newTableRow(nil, l, l.FetchedAt, set)
		widths.widen(rows[i].cells)
		summary.count(l, l.FetchedAt, stuckAfter)
	}
	out := bufio.NewWriter(w)
	if err := writeTable(out, slices.Values(rows), widths, &summary, set); err != nil {
		return err
	}
	return out.Flush()
}

// writeLocksJSON writes locks, in their order, as ls --json writes them.
func writeLocksJSON(w io.Writer, locks []*scanner.Lock) error {
	var b []byte
	for _, l := range locks {
		b = appendLockJSON(b, l, l.FetchedAt)
	}
	_, err := w.Write(b)
	return err
}
