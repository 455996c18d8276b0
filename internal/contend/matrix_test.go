package contend

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// matrixCommand is how docs/guarantees.md's table is made.
const matrixCommand = "GUARANTEES_MATRIX=full GUARANTEES_MATRIX_OUT=matrix.md go test -race -run '^TestGuaranteesMatrix$' -count=1 -timeout 0 -v ./internal/contend/"

type cell struct {
	d Deployment
	f Fault
}

// shortCells are what `make test` runs: the holder pause that only fencing catches, a
// failover of a replicated set, and a Redlock instance that forgot its keys.
var shortCells = []cell{{Single, HolderPause}, {Sentinel, Failover}, {Redlock, RestartEmpty}}

// TestGuaranteesMatrix runs deployment × fault cells (contend.Run) and checks, in each, that
// the fenced resource accepted no stale write and that tokens only went up; in every
// holder-pause cell, that the paused holder did overlap the next one (without fencing both
// would have written) and that the resource refused its late write. GUARANTEES_MATRIX: empty
// for the three short cells, "full" for every cell, or cells such as
// "sentinel/kill,cluster/failover"; GUARANTEES_MATRIX_OUT names a file for the markdown table.
func TestGuaranteesMatrix(t *testing.T) {
	redistest.Slow(t)
	cells, err := matrixCells(os.Getenv("GUARANTEES_MATRIX"))
	if err != nil {
		t.Fatal(err)
	}
	var results []Result
	for _, c := range cells {
		t.Run(string(c.d)+"/"+string(c.f), func(t *testing.T) {
			began := time.Now()
			r := Run(t, c.d, c.f)
			t.Logf("%s in %v: %+v", cellName(r.Deployment, r.Fault), time.Since(began).Round(time.Second), r)
			checkCell(t, r)
			results = append(results, r)
		})
	}
	table := matrixTable(results)
	t.Logf("\n%s", table)
	if out := os.Getenv("GUARANTEES_MATRIX_OUT"); out != "" {
		text := fmt.Sprintf("Measured %s with\n`%s`\n\n%s", time.Now().UTC().Format("2006-01-02 15:04 UTC"), matrixCommand, table)
		if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func checkCell(t *testing.T, r Result) {
	t.Helper()
	if r.Sections == 0 {
		t.Error("no holder began a section")
	}
	if r.StaleAccepted != 0 {
		t.Errorf("the resource accepted %d writes of holders a later holder had superseded", r.StaleAccepted)
	}
	for _, v := range r.TokenOrder {
		t.Errorf("porcupine, fencing tokens: %s", v)
	}
	if r.Regressions != 0 || r.CurrentRefused != 0 {
		t.Errorf("tokens went back: %d begins not above the previous holder's token, %d writes of the newest holder refused",
			r.Regressions, r.CurrentRefused)
	}
	if r.Fault == HolderPause && (r.Overlaps == 0 || r.StaleRejected == 0) {
		t.Errorf("the paused holder overlapped %d holders and had %d writes refused; want both above 0", r.Overlaps, r.StaleRejected)
	}
}

func matrixCells(spec string) ([]cell, error) {
	switch spec {
	case "":
		return shortCells, nil
	case "full":
		var out []cell
		for _, d := range Deployments {
			for _, f := range Faults {
				if Applies(d, f) {
					out = append(out, cell{d, f})
				}
			}
		}
		return out, nil
	}
	var out []cell
	for name := range strings.SplitSeq(spec, ",") {
		d, f, _ := strings.Cut(strings.TrimSpace(name), "/")
		c := cell{Deployment(d), Fault(f)}
		if !slices.Contains(Deployments, c.d) || !slices.Contains(Faults, c.f) || !Applies(c.d, c.f) {
			return nil, fmt.Errorf("GUARANTEES_MATRIX: %q is not a cell (deployment/fault, e.g. sentinel/failover), nor \"full\"", name)
		}
		out = append(out, c)
	}
	return out, nil
}

func cellName(d Deployment, f Fault) string { return string(d) + "/" + string(f) }

// matrixTable is the markdown table of docs/guarantees.md, one row per cell, with the
// failover cells that do not apply marked n/a.
func matrixTable(results []Result) string {
	var b strings.Builder
	b.WriteString("| deployment | fault | what the fault did | sections | overlaps without fencing | stale writes accepted with fencing | stale writes refused | locks lost | one cell: `GUARANTEES_MATRIX=` |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, d := range Deployments {
		for _, f := range Faults {
			i := slices.IndexFunc(results, func(r Result) bool { return r.Deployment == d && r.Fault == f })
			switch {
			case !Applies(d, f):
				fmt.Fprintf(&b, "| %s | %s | n/a: no replica to promote (kill and restart-empty are its failovers) | | | | | | |\n", d, f)
			case i >= 0:
				r := results[i]
				accepted := fmt.Sprint(r.StaleAccepted)
				if !r.Fenced {
					accepted += " (owner compare-and-set, no token)"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %s | %d | %d | `%s` |\n",
					d, f, r.Did, r.Sections, r.Overlaps, accepted, r.StaleRejected, r.Lost, cellName(d, f))
			}
		}
	}
	return b.String()
}

// The resource's bookkeeping, without Redis: a superseded holder's write is refused, a token
// that went back is noticed, and the writes it lets through are counted as stale.
func TestResourceCountsWhatFencingCatchesAndMisses(t *testing.T) {
	r := newResource(true)
	a, ok := r.begin("k", 10, "a")
	if !ok {
		t.Fatal("the first holder's begin was refused")
	}
	tick := func() { time.Sleep(time.Millisecond) } // distinct clock readings for the overlap count
	tick()
	b, ok := r.begin("k", 20, "b")
	if !ok {
		t.Fatal("a higher token was refused")
	}
	tick()
	if r.write(a) {
		t.Fatal("the resource accepted a token lower than one it had seen")
	}
	tick()
	// A token that went back (a counter lost by a failover, without the clock floor).
	if _, ok := r.begin("k", 15, "c"); ok {
		t.Fatal("a token below the newest was accepted at begin")
	}
	tick()
	if !r.write(b) {
		t.Fatal("the highest token was refused")
	}
	if r.staleRejected != 1 || r.staleAccepted != 1 || r.currentRefused != 1 || r.regressions != 1 {
		t.Fatalf("stale rejected %d accepted %d, current refused %d, regressions %d; want 1 each",
			r.staleRejected, r.staleAccepted, r.currentRefused, r.regressions)
	}
	// a wrote last after b began, b after c began; a's write came before c began.
	if n := r.overlaps(); n != 2 {
		t.Fatalf("overlaps %d, want 2", n)
	}

	// Without tokens the holder that began last owns the resource.
	r = newResource(false)
	a, _ = r.begin("k", 0, "a")
	if _, ok := r.begin("k", 0, "b"); !ok {
		t.Fatal("a holder's own begin was refused")
	}
	if r.write(a) || r.staleRejected != 1 {
		t.Fatalf("a superseded owner's write went through (stale rejected %d)", r.staleRejected)
	}
}
