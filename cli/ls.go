package cli

import (
	"bufio"
	"context"
	"fmt"
	"iter"
	"os"
	"runtime/debug"
	"strings"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
	"github.com/spf13/cobra"
)

// lsOptions is `lockscope ls`.
type lsOptions struct {
	IO    IOStreams
	Conn  connection
	JSON  bool
	Sort  string // scanOrder or a present.Sort name; "": key for the table, scanOrder for JSON
	Limit int    // 0: all
}

// scanOrder is `--sort none`: the locks in the order the census reads them, written as they come.
const scanOrder = "none"

func newLsCmd(ios IOStreams, getenv func(string) string) *cobra.Command {
	opts := &lsOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the locks: a census of the keys matching --pattern",
		Long: "List the locks: a census of the keys matching --pattern, as a table or as JSON lines.\n" +
			"The table marks locks without expiry (they never free themselves) and locks held longer than --stuck-after.\n" +
			"Without an order, JSON lines are written as the census reads them.",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Conn = connectionFlags(cmd, getenv)
			return runLs(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "one JSON object per lock and line (JSONL), written as read unless --sort is given")
	cmd.Flags().StringVar(&opts.Sort, "sort", "", "order: key, ttl (soonest expiry first), age (oldest first), holder, or none (as read, streamed);\n"+
		"default key for the table, none for --json")
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, "show at most N locks (0: all): the first N of the order")
	return cmd
}

// lsSink is where ls puts the locks as batches of them are read: written at once (scan
// order), or rendered and ranked until the census ends.
type lsSink interface {
	add(locks []scanner.Lock) error
	// finish writes what is left once the census has ended.
	finish() error
}

func runLs(ctx context.Context, opts *lsOptions) error {
	order := opts.Sort
	if order == "" {
		order = present.SortByKey.String()
		if opts.JSON {
			order = scanOrder
		}
	}
	var by present.Sort
	if order != scanOrder {
		var err error
		if by, err = present.ParseSort(order); err != nil {
			return withExit(exitUsage, fmt.Errorf("--sort %q: %w, or %s", opts.Sort, err, scanOrder))
		}
	}
	if opts.Limit < 0 {
		return withExit(exitUsage, fmt.Errorf("--limit %d: want 0 (no limit) or more", opts.Limit))
	}
	t, err := opts.Conn.open(ctx, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer t.Close()

	sc := opts.Conn.scanner(t)
	out := bufio.NewWriterSize(opts.IO.Out, 64<<10)
	defer out.Flush() // what was written before an error still goes out
	var sink lsSink
	switch {
	case opts.JSON && order == scanOrder:
		sink = &jsonStream{out: out, limit: opts.Limit, clocks: sc.Clocks(ctx)}
	case opts.JSON:
		// The records are most of the heap and all stay until the end: with the collector's
		// usual headroom (as much again as the live heap) a million of them peaked at 450 MB.
		// A GOGC the user set stays theirs.
		if os.Getenv("GOGC") == "" {
			defer debug.SetGCPercent(debug.SetGCPercent(rankedGCPercent))
		}
		ranking := present.NewRanking[recordRef](by, false, opts.Limit)
		if t.Mode == connect.Independent {
			ranking.ByServer() // the same key on two servers: always in the same order
		}
		sink = &jsonRanked{out: out, ranking: ranking, records: newLockRecords(), clocks: sc.Clocks(ctx)}
	case order == scanOrder:
		sink = newTableStream(out, tableSettings{opts.Limit, opts.Conn.StuckAfter, sc.Clocks(ctx), t.Mode == connect.Independent})
	default:
		sink = newTableRanked(out, by, tableSettings{opts.Limit, opts.Conn.StuckAfter, sc.Clocks(ctx), t.Mode == connect.Independent})
	}
	var writeErr error // the output failed (a closed pipe): not the census's failure
	census, err := sc.CensusEach(ctx, func(locks []scanner.Lock) error {
		writeErr = sink.add(locks)
		return writeErr
	})
	if writeErr != nil {
		return writeErr
	}
	if err != nil {
		return describeError(t, err)
	}
	for _, w := range census.Warnings {
		printf(opts.IO.ErrOut, "lockscope: warning: %s\n", t.Redact(w))
	}
	if err := sink.finish(); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if len(census.Missing) > 0 {
		return withExit(exitPartial, fmt.Errorf("partial census: could not read %s", strings.Join(census.Missing, ", ")))
	}
	return nil
}

// jsonStream writes each lock's JSON line as its batch is read (ls --json without an order):
// the first lines go out after one SCAN page and one batch of reads, and nothing is kept.
type jsonStream struct {
	out     *bufio.Writer
	limit   int // 0: all
	written int
	line    []byte         // reused from lock to lock
	clocks  scanner.Clocks // the servers' clocks: ages are measured on them
}

func (s *jsonStream) add(locks []scanner.Lock) error {
	for i := range locks {
		if s.limit > 0 && s.written == s.limit {
			break
		}
		s.line = appendLockJSON(s.line[:0], &locks[i], s.clocks.Now(&locks[i], locks[i].FetchedAt))
		if err := writeRendered(s.out, s.line); err != nil {
			return err
		}
		s.written++
	}
	return s.out.Flush() // a batch's lines go out as it is read, not when the buffer fills
}

func (s *jsonStream) finish() error { return nil }

// rankedGCPercent is the collector's headroom (GOGC) while sorted JSON keeps every record.
const rankedGCPercent = 50

// jsonRanked keeps each lock's record (lockRecords: what its JSON line shows) and its place
// in the order, and renders the lines once the order is known; the census's own records are
// dropped batch by batch.
type jsonRanked struct {
	out     *bufio.Writer
	ranking *present.Ranking[recordRef]
	records *lockRecords
	clocks  scanner.Clocks
}

func (s *jsonRanked) add(locks []scanner.Lock) error {
	for i := range locks {
		s.ranking.Add(&locks[i], s.records.keep(&locks[i]))
	}
	return nil
}

func (s *jsonRanked) finish() error {
	var lines []byte
	var instances []scanner.Instance
	records := func(yield func(string) bool) {
		for ref := range s.ranking.Sorted() {
			if !yield(s.records.record(ref)) {
				return
			}
		}
	}
	for batch := range pipelined(records) {
		for _, rec := range batch {
			l := s.records.lock(rec, instances)
			if l.Quorum != nil {
				instances = l.Quorum.Instances
			}
			lines = appendLockJSON(lines, &l, s.clocks.Now(&l, l.FetchedAt))
		}
		if err := writeRendered(s.out, lines); err != nil {
			return err
		}
		lines = lines[:0]
	}
	return nil
}

// pipelinedBatch is the rows pipelined hands over at a time.
const pipelinedBatch = 4096

// pipelined walks rows in a goroutine of its own and yields them in batches, so that making
// the order (the merge of a Ranking) and rendering and writing the rows share two cores. A
// batch is reused once the loop body is done with it. Breaking the loop stops the walk.
func pipelined[T any](rows iter.Seq[T]) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		batches := make(chan []T, 2)
		free := make(chan []T, 4)
		stop := make(chan struct{})
		go func() {
			defer close(batches)
			batch := make([]T, 0, pipelinedBatch)
			for r := range rows {
				if batch = append(batch, r); len(batch) < pipelinedBatch {
					continue
				}
				// stop first: while the drain below makes room, a select of both would go
				// on sending half the time.
				select {
				case <-stop:
					return
				default:
				}
				select {
				case batches <- batch:
				case <-stop:
					return
				}
				select {
				case batch = <-free:
				default:
					batch = make([]T, 0, pipelinedBatch)
				}
			}
			if len(batch) > 0 {
				select {
				case batches <- batch:
				case <-stop:
				}
			}
		}()
		defer func() {
			close(stop)
			for range batches { // the walk has ended when batches closes
			}
		}()
		for batch := range batches {
			if !yield(batch) {
				return
			}
			select {
			case free <- batch[:0]:
			default:
			}
		}
	}
}

// arenaBlock is the size of the blocks rendered rows and lock records are kept in.
const arenaBlock = 1 << 20

// arena keeps rendered rows in large blocks: a million rows cost a few hundred allocations
// instead of a million, and the blocks hold no pointers for the collector to scan.
type arena struct {
	block []byte
}

// keep copies row into the arena and returns the copy.
func (a *arena) keep(row []byte) []byte {
	if cap(a.block)-len(a.block) < len(row) {
		a.block = make([]byte, 0, max(arenaBlock, len(row)))
	}
	start := len(a.block)
	a.block = append(a.block, row...)
	return a.block[start:len(a.block):len(a.block)]
}
