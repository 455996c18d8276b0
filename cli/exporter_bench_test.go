package cli

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

var (
	exporterLocks  = flag.Int("exporter.locks", 1_000_000, "BenchmarkExporterMillion: locks on the server (redistest.Mixed)")
	exporterWindow = flag.Duration("exporter.window", 60*time.Second, "BenchmarkExporterMillion: the steady-state window after the first census")
	exporterScrape = flag.Duration("exporter.scrape", 15*time.Second, "BenchmarkExporterMillion: scrape interval in the window (Prometheus' default)")
)

// BenchmarkExporterMillion measures the built `lockscope exporter` on one redis-server holding
// 1,000,000 locks of eight groups in five formats (redistest.Mixed: TTLs of 5 to 120 minutes,
// 1% without expiry, 2% stuck, three waiters each on 1%), as a process:
//   - the time from its start until /metrics reports the first complete census with every lock,
//     against the one-shot census of `lockscope ls --json --sort none` just before;
//   - over a window after that (-exporter.window, 60 s), scraped every -exporter.scrape (15 s):
//     its CPU time (utime+stime from /proc) as a share of one core, the server's, and the
//     server's over a window of the same length before the exporter ran (the idle floor);
//   - its peak RSS (VmHWM) and its RSS at the end of the window (VmRSS);
//   - each scrape's latency and body size.
//
// It is opt-in: it runs only when -bench names it (-bench=ExporterMillion). A smoke run in
// seconds: -exporter.locks 20000 -exporter.window 3s -exporter.scrape 1s. The command and
// results are in docs/benchmarks.md.
func BenchmarkExporterMillion(b *testing.B) {
	if !strings.Contains(flag.Lookup("test.bench").Value.String(), "ExporterMillion") {
		b.Skip("opt-in: run with -bench=ExporterMillion")
	}
	n, window := *exporterLocks, *exporterWindow
	bin := cliBinary(b)
	srv := redistest.Start(b)
	c := srv.Client()
	loadStart := time.Now()
	tally := redistest.LoadMixedLocks(b, c, n, loadStart)
	fmt.Fprintf(os.Stderr, "loaded %d locks (%d without expiry) in %v\n", n, n-tally.WithTTL, time.Since(loadStart).Round(time.Millisecond))
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(os.Stderr, "load before: %s\n", strings.TrimSpace(string(load)))
	for b.Loop() {
		idle0, idleStart := cpuTime(b, srv.Pid()), time.Now()
		time.Sleep(window)
		idle := float64(cpuTime(b, srv.Pid())-idle0) / float64(time.Since(idleStart))
		ls := runLsBinary(b, bin, "ls", "--json", "--sort", "none", "--redis", redisURL(srv.Addr))
		if ls.lines != n {
			b.Fatalf("ls --json: %d lines, want %d", ls.lines, n)
		}
		floor := ls.wall
		start := time.Now()
		exp := startExporterProcess(b, bin, "--redis", redisURL(srv.Addr))
		pid := exp.cmd.Process.Pid
		// /healthz answers 200 once the first census pass has ended (a cheap poll: a scrape
		// walks the whole census, and scrapes every 50 ms would slow the pass they time).
		for {
			if _, err := exp.get("/healthz"); err == nil {
				break
			}
			if time.Since(start) > 5*time.Minute {
				b.Fatalf("no complete census after 5 minutes\n%s", exp.stderr)
			}
			time.Sleep(50 * time.Millisecond)
		}
		census := time.Since(start)
		body, err := exp.get("/metrics")
		if err != nil {
			b.Fatal(err)
		}
		if passes, locks := exposed(body, "lockscope_census_passes_total"), exposed(body, "lockscope_locks"); passes < 1 || locks != float64(n) {
			b.Fatalf("healthy after the first census: %v passes, %v locks, want 1 and %d", passes, locks, n)
		}
		censusCPU := cpuTime(b, pid)
		var scrapes []time.Duration
		var last []byte
		exporter0, server0, windowStart := cpuTime(b, pid), cpuTime(b, srv.Pid()), time.Now()
		for next := windowStart; time.Since(windowStart) < window; next = next.Add(*exporterScrape) {
			time.Sleep(time.Until(next))
			t0 := time.Now()
			body, err := exp.get("/metrics")
			if err != nil {
				b.Fatal(err)
			}
			scrapes = append(scrapes, time.Since(t0))
			last = body
		}
		time.Sleep(window - time.Since(windowStart))
		elapsed := float64(time.Since(windowStart))
		exporterShare := float64(cpuTime(b, pid)-exporter0) / elapsed
		serverShare := float64(cpuTime(b, srv.Pid())-server0) / elapsed
		peak, steady := procStatus(b, pid, "VmHWM:"), procStatus(b, pid, "VmRSS:")
		exp.kill() // the next round's exporter runs alone
		slices.Sort(scrapes)
		b.ReportMetric(census.Seconds(), "first-census-s")
		b.ReportMetric(census.Seconds()/floor.Seconds(), "first-census-x-ls")
		b.ReportMetric(censusCPU.Seconds(), "cpu-to-first-census-s")
		b.ReportMetric(ls.cpu.Seconds(), "ls-cpu-s")
		b.ReportMetric(100*exporterShare, "exporter-cpu-%")
		b.ReportMetric(100*serverShare, "server-cpu-%")
		b.ReportMetric(100*idle, "server-idle-cpu-%")
		b.ReportMetric(float64(peak>>20), "peak-rss-MB")
		b.ReportMetric(float64(steady>>20), "steady-rss-MB")
		b.ReportMetric(scrapes[len(scrapes)/2].Seconds()*1000, "scrape-p50-ms")
		b.ReportMetric(scrapes[len(scrapes)-1].Seconds()*1000, "scrape-max-ms")
		b.ReportMetric(float64(len(last)), "body-bytes")
		// Complete passes by the window's end: the first, then the paced background re-scans.
		passes := exposed(last, "lockscope_census_passes_total")
		b.ReportMetric(passes, "passes-at-end")
		fmt.Fprintf(os.Stderr, "first census %v, %.2fx ls --json's %v (exporter CPU %v, ls --json's %v); over %v: exporter %.2f%% of a core, redis-server %.2f%% (idle %.2f%%); RSS peak %d MB, at the end %d MB; %d scrapes p50 %v max %v, %d bytes; %.0f passes ended\n",
			census.Round(time.Millisecond), census.Seconds()/floor.Seconds(), floor.Round(time.Millisecond), censusCPU, ls.cpu.Round(10*time.Millisecond), window, 100*exporterShare, 100*serverShare, 100*idle,
			peak>>20, steady>>20, len(scrapes), scrapes[len(scrapes)/2].Round(time.Microsecond), scrapes[len(scrapes)-1].Round(time.Microsecond), len(last), passes)
	}
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Fprintf(os.Stderr, "load after: %s\n", strings.TrimSpace(string(load)))
}

// exposed sums the samples of family name (without a suffix) in a text exposition.
func exposed(exposition []byte, name string) float64 {
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(exposition))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		if v, err := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}
