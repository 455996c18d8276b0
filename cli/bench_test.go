package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/scanner"
)

// lsRun is what one run of the built binary cost: wall time, the time to its first line of
// output, its CPU time, its peak resident set, and the lines it wrote.
type lsRun struct {
	wall, first time.Duration
	cpu         time.Duration // user + system
	rss         int64         // bytes
	lines       int
}

// runLsBinary runs the binary with args, its output to a pipe drained as fast as it comes.
func runLsBinary(b *testing.B, bin string, args ...string) lsRun {
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var r lsRun
	out := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := out.ReadSlice('\n')
		if len(line) > 0 && r.lines == 0 {
			r.first = time.Since(start)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		r.lines++
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	}
	r.wall = time.Since(start)
	r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	r.rss = cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // Linux reports KiB
	return r
}

// lsBefore is a lockscope binary to compare with (e.g. built from the commit before a change):
// when set, its `ls --json` and `ls` run in the same rounds.
var lsBefore = flag.String("ls.before", "", "BenchmarkLsMillion: another lockscope binary whose ls --json and ls run in the same rounds")

// BenchmarkLsMillion runs what a user runs: the built lockscope binary, `ls` in four forms,
// on one server holding 1,000,000 lock keys (redistest.LoadLocks), its output to a pipe
// drained as it comes, against the pipelined floor (redistest.PipelinedFloor: SCAN + PTTL +
// GETRANGE, nothing decoded) in the same rounds, in turn. For each form: wall time and its
// ratio to the floor of the same round, peak RSS of the process, time to the first line.
// Every run is printed to stderr as it ends (b.Log truncates). Opt-in: it runs only when
// -bench names it (-bench=LsMillion). docs/benchmarks/cli.md has the command and results.
func BenchmarkLsMillion(b *testing.B) {
	if !strings.Contains(flag.Lookup("test.bench").Value.String(), "Million") {
		b.Skip("opt-in: run with -bench=LsMillion")
	}
	const n = 1_000_000
	bin := filepath.Join(b.TempDir(), "lockscope")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lockscope/lockscope").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	srv := redistest.Start(b)
	c := srv.Client()
	redistest.LoadLocks(b, c, n)
	url := redisURL(srv.Addr)
	type form struct {
		name  string
		bin   string
		args  []string
		lines int // lines of output: n locks (+ header and summary for the table)
	}
	forms := []form{
		{"json", bin, []string{"ls", "--json"}, n},
		{"json-sort-key", bin, []string{"ls", "--json", "--sort", "key"}, n},
		{"table", bin, []string{"ls"}, n + 2},
		{"table-sort-none", bin, []string{"ls", "--sort", "none"}, n + 2},
		{"ttl-limit-10", bin, []string{"ls", "--sort", "ttl", "--limit", "10"}, 10 + 2},
	}
	if *lsBefore != "" {
		forms = append(forms, form{"before-json", *lsBefore, []string{"ls", "--json"}, n}, form{"before-table", *lsBefore, []string{"ls"}, n + 2})
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(os.Stderr, "load before: %s\n", strings.TrimSpace(string(load)))
	var floor time.Duration
	ratios := make([]float64, len(forms))
	peaks := make([]int64, len(forms))
	firsts := make([]time.Duration, len(forms))
	walls := make([]time.Duration, len(forms))
	rounds := 0
	b.ResetTimer()
	for b.Loop() {
		rounds++
		start := time.Now()
		if got, err := redistest.PipelinedFloor(context.Background(), c, scanner.DefaultPattern, true); err != nil || got != n {
			b.Fatalf("floor: %d keys, %v", got, err)
		}
		roundFloor := time.Since(start)
		floor += roundFloor
		fmt.Fprintf(os.Stderr, "round %d: floor %v\n", rounds, roundFloor.Round(time.Millisecond))
		for i, f := range forms {
			r := runLsBinary(b, f.bin, append(f.args, "--redis", url)...)
			if r.lines != f.lines {
				b.Fatalf("%s: %d lines, want %d", f.name, r.lines, f.lines)
			}
			ratios[i] += float64(r.wall) / float64(roundFloor)
			peaks[i] = max(peaks[i], r.rss)
			firsts[i] += r.first
			walls[i] += r.wall
			fmt.Fprintf(os.Stderr, "round %d: %-16s %v (%.2fx floor), first line %v, peak RSS %d MB\n", rounds, f.name, r.wall.Round(time.Millisecond),
				float64(r.wall)/float64(roundFloor), r.first.Round(time.Millisecond), r.rss>>20)
		}
	}
	b.StopTimer()
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Fprintf(os.Stderr, "load after: %s\n", strings.TrimSpace(string(load)))
	runs := float64(rounds)
	b.ReportMetric(floor.Seconds()/runs, "floor-s")
	for i, f := range forms {
		b.ReportMetric(walls[i].Seconds()/runs, f.name+"-s")
		b.ReportMetric(ratios[i]/runs, f.name+"-x-floor")
		b.ReportMetric(float64(peaks[i]>>20), f.name+"-peak-rss-MB")
		b.ReportMetric(firsts[i].Seconds()*1000/runs, f.name+"-first-line-ms")
	}
}
