package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

var (
	tuiBefore = flag.String("tui.before", "", "BenchmarkTUIMillion: another lockscope binary (e.g. an older commit's) to measure in alternating rounds with this one")
	tuiSample = flag.Duration("tui.sample", 60*time.Second, "BenchmarkTUIMillion: how long each console is left open while its memory is sampled")
	tuiKeys   = flag.Bool("tui.keys", true, "BenchmarkTUIMillion: time the key presses after sampling")
	tuiLocks  = flag.Int("tui.locks", 1_000_000, "BenchmarkTUIMillion: how many locks the server holds")
)

// BenchmarkTUIMillion measures what a user of the console gets on a server holding
// 1,000,000 locks: the built binary in a 120x40 tmux pane, as a process. Per round and
// binary: the time from starting it to the first rows on screen; the process's peak RSS
// (VmHWM) and CPU while it is left open for -tui.sample (several full scan passes); then the
// latency of key presses, from send-keys until the pane shows the key's effect, and the peak
// and final RSS after them. A key has two times: "echo", the screen acknowledges it (the header's sort
// arrow, the prompt's text), and "rows", the rows are the ones it asks for. The floor of
// both measurements is tmux itself, timed the same way in the same round: a pane that
// prints one row, and a pane that echoes one key. With -tui.before, rounds alternate
// between that binary and this one. Opt-in (-bench=TUIMillion); docs/benchmarks/tui.md
// has the command and results.
func BenchmarkTUIMillion(b *testing.B) {
	if !strings.Contains(flag.Lookup("test.bench").Value.String(), "Million") {
		b.Skip("opt-in: run with -bench=TUIMillion")
	}
	n := *tuiLocks
	srv := redistest.Start(b)
	loadStart := time.Now()
	redistest.LoadLocks(b, srv.Client(), n)
	// The last ttlProbes locks expire first, the last one soonest: the head of the TTL order.
	for j := range ttlProbes {
		if err := srv.Client().Expire(context.Background(), redistest.LockKey(n-1-j), 30*time.Minute+time.Duration(j)*time.Second).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("loaded %d keys in %v", n, time.Since(loadStart).Round(time.Millisecond))
	bins := []struct{ name, path string }{{"this", cliBinary(b)}}
	if *tuiBefore != "" {
		bins = append([]struct{ name, path string }{{"before", *tuiBefore}}, bins...)
	}
	results := map[string][]consoleRun{}
	b.ResetTimer()
	for b.Loop() {
		floorRows, floorKey := tmuxFloor(b)
		b.Logf("tmux floor: a printed row after %v, an echoed key after %v", ms(floorRows), ms(floorKey))
		for _, bin := range bins {
			r := measureConsole(b, bin.path, srv.Addr, n)
			r.floorRows, r.floorKey = floorRows, floorKey
			results[bin.name] = append(results[bin.name], r)
			b.Logf("%s: %s", bin.name, r)
		}
	}
	b.StopTimer()
	for name, runs := range results {
		var worst consoleRun
		for _, r := range runs {
			worst.firstRows = max(worst.firstRows, r.firstRows)
			worst.hwm = max(worst.hwm, r.hwm)
			worst.openHWM = max(worst.openHWM, r.openHWM)
			worst.cpu = max(worst.cpu, r.cpu)
			worst.echo = max(worst.echo, r.maxEcho())
			worst.rows = max(worst.rows, r.maxRows())
		}
		b.ReportMetric(float64(worst.openHWM)/(1<<20), name+"-open-peak-rss-MB")
		b.ReportMetric(float64(worst.hwm)/(1<<20), name+"-peak-rss-MB")
		b.ReportMetric(worst.firstRows.Seconds()*1000, name+"-first-rows-ms")
		b.ReportMetric(worst.cpu*100, name+"-cpu-%")
		b.ReportMetric(worst.echo.Seconds()*1000, name+"-max-key-echo-ms")
		b.ReportMetric(worst.rows.Seconds()*1000, name+"-max-key-rows-ms")
	}
}

// consoleRun is one binary's figures in one round.
type consoleRun struct {
	firstRows           time.Duration
	openHWM             uint64  // bytes: the peak resident set while left open
	hwm, rss            uint64  // bytes: peak (keys included) and final resident set
	cpu                 float64 // CPU seconds per second while left open
	keys                []keyTiming
	echo, rows          time.Duration // the slowest key (summary only)
	floorRows, floorKey time.Duration
}

type keyTiming struct {
	name       string
	echo, rows time.Duration
}

func (r consoleRun) maxEcho() time.Duration {
	var m time.Duration
	for _, k := range r.keys {
		m = max(m, k.echo)
	}
	return m
}

func (r consoleRun) maxRows() time.Duration {
	var m time.Duration
	for _, k := range r.keys {
		m = max(m, k.rows)
	}
	return m
}

func (r consoleRun) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "first rows %v; peak RSS left open %d MB, with the keys %d MB, final %d MB; CPU %.0f%%; keys (echo/rows):",
		ms(r.firstRows), r.openHWM>>20, r.hwm>>20, r.rss>>20, r.cpu*100)
	for _, k := range r.keys {
		fmt.Fprintf(&sb, " %s %v/%v;", k.name, ms(k.echo), ms(k.rows))
	}
	return sb.String()
}

func ms(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }

// ttlProbes is how many locks the benchmark gives a shorter TTL than the others.
const ttlProbes = 10

var dataRow = regexp.MustCompile(`lock:bench:\d{7}`)

// measureConsole runs bin against addr holding n LoadLocks locks and takes its figures.
func measureConsole(b *testing.B, bin, addr string, n int) consoleRun {
	var r consoleRun
	start := time.Now()
	s := startConsole(b, bin, "--redis", redisURL(addr))
	defer func() { _, _ = s.tmux("kill-server") }()
	s.pollFor("the first rows", func(scr string) bool { return dataRow.MatchString(scr) })
	r.firstRows = time.Since(start)

	pid := s.programPID()
	cpu0 := cpuTime(b, pid)
	sampleStart := time.Now()
	for time.Since(sampleStart) < *tuiSample {
		time.Sleep(100 * time.Millisecond)
		r.rss = procStatus(b, pid, "VmRSS:")
	}
	r.cpu = (cpuTime(b, pid) - cpu0).Seconds() / time.Since(sampleStart).Seconds()
	r.openHWM = procStatus(b, pid, "VmHWM:")
	s.waitForText(fmt.Sprintf("%d locks", n), time.Minute) // the whole census is in
	// The selection starts on the first row of the first batch; the keys start from the top.
	s.keys("g")
	s.waitFor("the first row selected", time.Minute, func(string) bool { return selectedKey(s.styledScreen()) == redistest.LockKey(0) })

	if *tuiKeys {
		for _, k := range consoleKeys(n) {
			r.keys = append(r.keys, s.timeKey(k))
		}
	}
	r.hwm = procStatus(b, pid, "VmHWM:")
	return r
}

// consoleKey is one key press and how its effect shows on screen.
type consoleKey struct {
	name, key string // the tmux key name
	echo      func(screen string) bool
	rows      func(screen string) bool // nil: the echo is the whole effect
}

// consoleKeys is the sequence of keys timed, in the order they are sent; each one's effect
// differs from the screen before it, so a screen that already showed it cannot fool the timing.
func consoleKeys(n int) []consoleKey {
	header := func(col string) func(string) bool {
		return func(scr string) bool { return strings.Contains(scr, col) }
	}
	nthRow := func(i int, key string) func(string) bool {
		return func(scr string) bool {
			rows := dataRow.FindAllString(scr, i+1)
			return len(rows) > i && rows[i] == key
		}
	}
	selected := func(key string) func(string) bool {
		return func(scr string) bool { return selectedKey(scr) == key }
	}
	keys := []consoleKey{
		// A sort keeps the selected lock (the first) selected: reversed, it is the last row.
		{name: "K", key: "K", echo: header("KEY↓"), rows: func(scr string) bool {
			rows := dataRow.FindAllString(scr, -1)
			return len(rows) > 2 && rows[len(rows)-2] == redistest.LockKey(1) && rows[len(rows)-1] == redistest.LockKey(0)
		}},
		{name: "K", key: "K", echo: header("KEY↑"), rows: nthRow(0, redistest.LockKey(0))},
		{name: "j", key: "j", echo: selected(redistest.LockKey(1))},
		{name: "k", key: "k", echo: selected(redistest.LockKey(0))},
		{name: "pgdn", key: "NPage", echo: func(scr string) bool { k := selectedKey(scr); return k != "" && k > redistest.LockKey(10) }},
		{name: "G", key: "G", echo: selected(redistest.LockKey(n - 1))},
		{name: "g", key: "g", echo: selected(redistest.LockKey(0))},
		{name: "H", key: "H", echo: header("HOLDER↑"), rows: nthRow(1, redistest.LockKey(64))},
		{name: "A", key: "A", echo: header("AGE↑"), rows: nthRow(1, redistest.LockKey(1))},
		// The last lock expires first: with it selected, the TTL order is shown from the top.
		{name: "G", key: "G", echo: selected(redistest.LockKey(n - 1))},
		{name: "T", key: "T", echo: header("TTL↑"), rows: func(scr string) bool {
			return nthRow(0, redistest.LockKey(n-1))(scr) && nthRow(1, redistest.LockKey(n-2))(scr)
		}},
		{name: "/", key: "/", echo: func(scr string) bool { return strings.HasPrefix(promptLine(scr), "/substring") }},
	}
	typed := ""
	for _, c := range "0000064" {
		typed += string(c)
		prompt := "/" + typed
		want := fmt.Sprintf("%d/%d locks", filterCount(n, typed), n)
		keys = append(keys, consoleKey{name: "type " + string(c), key: string(c),
			echo: func(scr string) bool { return promptLine(scr) == prompt },
			rows: func(scr string) bool { return strings.Contains(scr, want) }})
	}
	keys = append(keys,
		consoleKey{name: "enter (filter)", key: "Enter", echo: header("filter: 0000064")},
		consoleKey{name: "enter (detail)", key: "Enter", echo: header(detailPane)},
		consoleKey{name: "esc (detail)", key: "Escape", echo: func(scr string) bool { return !strings.Contains(scr, detailPane) }},
		consoleKey{name: "esc (filter)", key: "Escape", echo: func(scr string) bool { return !strings.Contains(scr, "filter: ") },
			rows: func(scr string) bool { return strings.Contains(scr, fmt.Sprintf(" %d locks", n)) }},
	)
	return keys
}

// detailPane is the detail pane's title bar.
const detailPane = "╭─ details"

// filterCount is how many LoadLocks locks the filter text matches (key, holder or trace).
func filterCount(n int, text string) int {
	c := 0
	for i := range n {
		if strings.Contains(redistest.LockKey(i), text) || strings.Contains("worker-"+strconv.Itoa(i%64), text) || strings.Contains("-", text) {
			c++
		}
	}
	return c
}

// promptLine is the filter prompt's text ("/..." while typing), "" when it is not shown. The
// prompt is above the help line, which starts with "/ filter".
func promptLine(scr string) string {
	for _, ln := range strings.Split(scr, "\n") {
		if strings.HasPrefix(ln, "/") {
			return strings.TrimRight(ln, " ")
		}
	}
	return ""
}

// selectedKey is the key on the highlighted table row ("" if none), read from the styled
// screen captured with escapes (see timeKey).
func selectedKey(scr string) string {
	for _, ln := range strings.Split(scr, "\n") {
		if strings.Contains(ln, selectedMark) {
			return dataRow.FindString(ln)
		}
	}
	return ""
}

// selectedMark is the selection's background in the 256-colour pane (dark theme).
const selectedMark = "\x1b[48;5;23m"

// timeKey sends k.key and times its echo and rows on the styled screen.
func (s *tuiSession) timeKey(k consoleKey) keyTiming {
	s.t.Helper()
	t := keyTiming{name: k.name}
	capture := s.styledScreen
	plain := func(styled string) string { return ansi.ReplaceAllString(styled, "") }
	// A pause between keys: an escape right after another one would read as alt+escape.
	time.Sleep(300 * time.Millisecond)
	if scr := capture(); k.echo(plain(scr)) && k.echo(scr) {
		s.t.Fatalf("%s: the screen shows its effect before the key:\n%s", k.name, plain(scr))
	}
	start := time.Now()
	s.keys(k.key)
	deadline := start.Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		styled := capture()
		scr := plain(styled)
		if t.echo == 0 && (k.echo(scr) || k.echo(styled)) {
			t.echo = time.Since(start)
		}
		if t.echo != 0 && (k.rows == nil || k.rows(scr)) {
			t.rows = time.Since(start)
			return t
		}
	}
	s.t.Fatalf("%s: no effect within 3 minutes; screen:\n%s", k.name, s.screen())
	return t
}

// styledScreen is the screen with its escape sequences.
func (s *tuiSession) styledScreen() string {
	out, err := s.tmux("capture-pane", "-p", "-e", "-t", "tui")
	if err != nil {
		s.t.Fatalf("tmux capture-pane: %v: %s", err, out)
	}
	return out
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;:]*[A-Za-z]`)

// programPID is the process the pane runs (the child of the pane's shell).
func (s *tuiSession) programPID() int {
	s.t.Helper()
	out, err := s.tmux("display-message", "-p", "-t", "tui", "#{pane_pid}")
	if err != nil {
		s.t.Fatalf("tmux display-message: %v: %s", err, out)
	}
	shell := strings.TrimSpace(out)
	children, err := os.ReadFile("/proc/" + shell + "/task/" + shell + "/children")
	if err != nil {
		s.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(children) + " 0")[0])
	if err != nil || pid == 0 {
		s.t.Fatalf("no program under the pane's shell %s: %q", shell, children)
	}
	return pid
}

// procStatus is a size field of /proc/<pid>/status in bytes.
func procStatus(b *testing.B, pid int, field string) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("%s %q: %v", field, rest, err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// cpuTime is the user plus system CPU time pid has used (/proc/<pid>/stat, 100 ticks/s).
func cpuTime(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses: utime and stime are 14 and 15.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// pollFor captures the pane without pausing until ok holds, as timeKey does: waitFor's 50 ms
// pauses made every first-rows time a multiple of its period (117-123 ms for 12 starts).
func (s *tuiSession) pollFor(what string, ok func(screen string) bool) {
	s.t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(s.screen()); {
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s.screen())
		}
	}
}

// tmuxFloor times tmux alone: a pane that prints a row, and a key echoed by a pane's tty.
func tmuxFloor(b *testing.B) (firstRow, key time.Duration) {
	start := time.Now()
	s := startConsole(b, "printf", `lock:bench:0000000\n`)
	s.pollFor("the printed row", func(scr string) bool { return dataRow.MatchString(scr) })
	firstRow = time.Since(start)
	_, _ = s.tmux("kill-server")

	s = startConsole(b, "cat")
	s.waitForText("", time.Minute)
	t := s.timeKey(consoleKey{name: "x", key: "x", echo: func(scr string) bool { return strings.Contains(scr, "x") }})
	_, _ = s.tmux("kill-server")
	return firstRow, t.echo
}
