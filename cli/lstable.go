package cli

import (
	"bufio"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// Column widths of the table: long keys and values are cut with a marker, never wrapped.
const (
	keyWidth    = 48
	holderWidth = 28
	traceWidth  = 20
)

// lsColumns are the ls table's titles.
var lsColumns = []string{present.ColumnKey, present.ColumnHolder, present.ColumnTrace, present.ColumnAge,
	present.ColumnTTL, present.ColumnReentry, present.ColumnFence, present.ColumnFormat, present.ColumnFlags}

// columnGap is the space between two columns.
const columnGap = 2

// streamWidths are the widths of the columns before FLAGS (the last, never padded) in a table
// written as it is read (--sort none), before the rows to come are known: KEY, HOLDER and
// TRACE are cut at theirs, and the others fit every usual value ("-12m05s", "expired",
// "not-a-lock"); a longer count or fence shifts the rest of its row.
var streamWidths = columnWidths{keyWidth, holderWidth, traceWidth, 7, 7, 3, 10, 10}

// serverWidth is a streamed table's SERVER column: an IPv4 address and port
// ("255.255.255.255:65535"); a longer address shifts the rest of its row.
const serverWidth = 21

// tableRow is a lock's row of the ls table, rendered: its cells joined by tabs (no cell holds
// one: SafeText escapes them).
type tableRow struct {
	cells []byte
}

// appendRow appends l's cells joined by tabs: made safe and cut as present renders them. A lock
// is shown as it was when read: its TTL at FetchedAt (the census is a snapshot), its age at at,
// that moment on its server's clock (scanner.Clocks.Now).
func appendRow(b []byte, l *scanner.Lock, at time.Time, stuckAfter time.Duration) []byte {
	cells := [...]string{
		present.SafeText(l.Key, keyWidth), present.SafeText(present.HolderText(l), holderWidth),
		present.SafeText(present.OrUnknown(l.Trace), traceWidth), present.Age(l, at), present.TTL(l, l.FetchedAt),
		present.Ordinal(int64(l.Reentry), l.Reentry > 0), present.Ordinal(l.Fence, l.HasFence),
		present.SafeText(present.FormatText(l), 0), present.SafeText(present.FlagsText(l, at, stuckAfter), 0),
	}
	for i, c := range cells {
		if i > 0 {
			b = append(b, '\t')
		}
		b = append(b, c...)
	}
	return b
}

// newTableRow is l's row (appendRow; at as there), behind its server when set says so.
func newTableRow(b []byte, l *scanner.Lock, at time.Time, set tableSettings) tableRow {
	if set.servers {
		b = append(append(b, present.SafeText(l.Addr, 0)...), '\t')
	}
	return tableRow{cells: appendRow(b, l, at, set.stuckAfter)}
}

// columnWidths are the widths in runes of the columns but the last (FLAGS, never padded).
type columnWidths []int

func newColumnWidths(set tableSettings) columnWidths { return make(columnWidths, len(set.columns())-1) }

// widen makes the columns as wide as cells (joined by tabs, valid UTF-8 as SafeText makes
// it: a rune is a byte that does not continue one).
func (w columnWidths) widen(cells []byte) {
	col, runes := 0, 0
	for _, c := range cells {
		switch {
		case c == '\t':
			w[col] = max(w[col], runes)
			if col++; col == len(w) {
				return
			}
			runes = 0
		case c&0xc0 != 0x80:
			runes++
		}
	}
}

// appendAligned appends cells (joined by tabs) padded to widths (plus the gap) and a newline,
// as text/tabwriter aligns them: by runes, the last cell unpadded.
func appendAligned(b, cells []byte, widths columnWidths) []byte {
	for col := 0; ; col++ {
		end, runes := 0, 0
		for ; end < len(cells) && cells[end] != '\t'; end++ {
			if cells[end]&0xc0 != 0x80 {
				runes++
			}
		}
		b = append(b, cells[:end]...)
		if end == len(cells) {
			return append(b, '\n')
		}
		b = append(b, blanks[:max(widths[col]+columnGap-runes, 0)]...)
		cells = cells[end+1:]
	}
}

// blanks pad cells: more than the widest column and its gap (a KEY cut at keyWidth runes
// plus SafeText's marker, "…(+123 bytes)").
var blanks = []byte(strings.Repeat(" ", 2*keyWidth+columnGap))

// header is the table's title row, its cells joined by tabs.
func header(set tableSettings) []byte { return []byte(strings.Join(set.columns(), "\t")) }

// columns are the table's titles: SERVER first for independent servers, where a key names
// one lock on each server that has it.
func (set tableSettings) columns() []string {
	if set.servers {
		return append([]string{present.ColumnServer}, lsColumns...)
	}
	return lsColumns
}

// streamWidths are the widths of a streamed table (see streamWidths).
func (set tableSettings) streamWidths() columnWidths {
	if set.servers {
		return append(columnWidths{serverWidth}, streamWidths...)
	}
	return streamWidths
}

// censusSummary is the line under the table. It describes the whole census, whatever --limit
// shows: the locks, the other keys under the pattern (a list, a set: not locks), and of the
// locks those without expiry, stuck, and stamped in the future of their server's clock.
type censusSummary struct {
	locks, other, noExpiry, stuck, skew int
}

// count counts l, read at at on its server's clock (scanner.Clocks.Now).
func (s *censusSummary) count(l *scanner.Lock, at time.Time, stuckAfter time.Duration) {
	if l.Format == scanner.FormatNotALock {
		s.other++
		return
	}
	s.locks++
	if present.NeverFrees(l) {
		s.noExpiry++
	}
	if present.Stuck(l, at, stuckAfter) {
		s.stuck++
	}
	if present.Skew(l, at) > 0 {
		s.skew++
	}
}

// write writes the summary of a table that shows shown rows (limit: --limit, 0 for none).
func (s *censusSummary) write(out *bufio.Writer, shown, limit int, stuckAfter time.Duration) error {
	text := present.Count(s.locks, "lock")
	if s.other > 0 {
		text += ", " + present.Count(s.other, "other key") + " (not locks)"
	}
	text += fmt.Sprintf(", %d without expiry, %d stuck (held > %s)", s.noExpiry, s.stuck, present.Duration(stuckAfter))
	if s.skew > 0 {
		text += fmt.Sprintf(", %d with clock skew", s.skew)
	}
	if total := s.locks + s.other; shown < total {
		text = fmt.Sprintf("%d of %d keys shown (--limit %d); in all: %s", shown, total, limit, text)
	}
	return printf(out, "%s\n", text)
}

// tableSettings are what an ls table is rendered with.
type tableSettings struct {
	limit      int // --limit; 0: all
	stuckAfter time.Duration
	clocks     scanner.Clocks // the servers' clocks: ages are measured on them
	servers    bool           // independent servers: a SERVER column first
}

// tableStream writes rows as their batch is read (--sort none), in fixed-width columns.
type tableStream struct {
	out       *bufio.Writer
	set       tableSettings
	widths    columnWidths
	shown     int
	summary   censusSummary
	row, line []byte // reused from lock to lock
}

func newTableStream(out *bufio.Writer, set tableSettings) *tableStream {
	widths := set.streamWidths()
	return &tableStream{out: out, set: set, widths: widths, line: appendAligned(nil, header(set), widths)}
}

func (s *tableStream) add(locks []scanner.Lock) error {
	for i := range locks {
		at := s.set.clocks.Now(&locks[i], locks[i].FetchedAt) // once a lock: a Redlock one's is a median
		s.summary.count(&locks[i], at, s.set.stuckAfter)
		if s.set.limit > 0 && s.shown == s.set.limit {
			continue
		}
		r := newTableRow(s.row[:0], &locks[i], at, s.set)
		s.row = r.cells
		s.line = appendAligned(s.line, r.cells, s.widths)
		s.shown++
	}
	err := writeRendered(s.out, s.line)
	s.line = s.line[:0]
	if err != nil {
		return err
	}
	return s.out.Flush() // a batch's rows go out as it is read, not when the buffer fills
}

func (s *tableStream) finish() error {
	if err := writeRendered(s.out, s.line); err != nil { // the header, when no lock came
		return err
	}
	return s.summary.write(s.out, s.shown, s.set.limit, s.set.stuckAfter)
}

// tableRanked keeps the rendered rows and their places in the order until the census ends,
// then writes them in columns as wide as their widest cell.
type tableRanked struct {
	out     *bufio.Writer
	set     tableSettings
	ranking *present.Ranking[tableRow]
	widths  columnWidths // without a limit every row is shown: widened as rows come
	summary censusSummary
	rows    arena
	row     []byte
}

func newTableRanked(out *bufio.Writer, by present.Sort, set tableSettings) *tableRanked {
	ranking := present.NewRanking[tableRow](by, false, set.limit)
	if set.servers {
		ranking.ByServer() // the same key on two servers: always in the same order
	}
	return &tableRanked{out: out, set: set, ranking: ranking, widths: newColumnWidths(set)}
}

func (s *tableRanked) add(locks []scanner.Lock) error {
	for i := range locks {
		at := s.set.clocks.Now(&locks[i], locks[i].FetchedAt) // once a lock: a Redlock one's is a median
		s.summary.count(&locks[i], at, s.set.stuckAfter)
		r := newTableRow(s.row[:0], &locks[i], at, s.set)
		s.row = r.cells
		r.cells = s.rows.keep(r.cells)
		if s.set.limit == 0 {
			s.widths.widen(r.cells)
		}
		s.ranking.Add(&locks[i], r)
	}
	return nil
}

func (s *tableRanked) finish() error {
	rows := s.ranking.Sorted()
	if s.set.limit > 0 { // only the rows kept count
		for r := range rows {
			s.widths.widen(r.cells)
		}
	}
	return writeTable(s.out, rows, s.widths, &s.summary, s.set)
}

// writeTable writes the header, rows and the summary line (of the whole census), in columns
// as wide as their widest cell (widths: the rows' widths; the header's are added here).
func writeTable(out *bufio.Writer, rows iter.Seq[tableRow], widths columnWidths, summary *censusSummary, set tableSettings) error {
	head := header(set)
	widths.widen(head)
	line := appendAligned(nil, head, widths)
	shown := 0
	for batch := range pipelined(rows) {
		for _, r := range batch {
			line = appendAligned(line, r.cells, widths)
		}
		shown += len(batch)
		if err := writeRendered(out, line); err != nil {
			return err
		}
		line = line[:0]
	}
	if err := writeRendered(out, line); err != nil {
		return err
	}
	return summary.write(out, shown, set.limit, set.stuckAfter)
}
