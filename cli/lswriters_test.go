package cli

import (
	"bufio"
	"io"
	"time"

	"github.com/lockscope/lockscope/scanner"
)

// writeLocksTable writes locks, in their order, as ls writes a sorted table (total: the
// locks the census found).
func writeLocksTable(w io.Writer, locks []*scanner.Lock, total int, stuckAfter time.Duration) error {
	rows := make([]tableRow, len(locks))
	for i, l := range locks {
		rows[i] = newTableRow(nil, l, stuckAfter)
	}
	out := bufio.NewWriter(w)
	if err := writeTable(out, rows, total, stuckAfter); err != nil {
		return err
	}
	return out.Flush()
}

// writeLocksJSON writes locks, in their order, as ls --json writes them.
func writeLocksJSON(w io.Writer, locks []*scanner.Lock) error {
	var b []byte
	for _, l := range locks {
		b = appendLockJSON(b, l)
	}
	_, err := w.Write(b)
	return err
}
