package scanner

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/redis/go-redis/v9"
)

// BenchmarkConsoleMillion measures what the console's data path (Follow, with 40 keys on
// screen) costs the server it watches, on one redis-server holding 1,000,000 lock keys: the
// server's own CPU time (INFO cpu, all threads) over a window (60 s; $LOCKSCOPE_CONSOLE_WINDOW
// changes it) after the first census, side by side in one run:
//   - idle: no console (the floor: the server's own expiry cycle and cron);
//   - full re-scans: ScanBudget 1, the behaviour before following (a full pass every
//     max(2 s, pass));
//   - following: the default (tracking, background re-scan at 2 %);
//   - churn: locklib workers making 200 changes a second (100 Obtain + 100 Release of fresh
//     keys, each held 500 ms), without a console and with one following: how long from the
//     start of the Obtain (Release) until the console's stream shows the key (gone);
//   - with $LOCKSCOPE_BINARY set to a built lockscope: the console itself in a 160x50 tmux
//     window (the UI model and its events subscription included), with --scan-budget 100%
//     and with the default.
//
// It is opt-in: it runs only when -bench names it (-bench=ConsoleMillion). The command and
// results are in docs/benchmarks/console.md.
func BenchmarkConsoleMillion(b *testing.B) {
	if !strings.Contains(flag.Lookup("test.bench").Value.String(), "ConsoleMillion") {
		b.Skip("opt-in: run with -bench=ConsoleMillion")
	}
	window := 60 * time.Second
	if v := os.Getenv("LOCKSCOPE_CONSOLE_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		window = d
	}
	const n = 1_000_000
	srv := redistest.Start(b)
	c := srv.Client()
	redistest.LoadLocks(b, c, n)
	target := standalone(c, srv.Addr)
	for b.Loop() {
		idle := serverShare(b, c, window, func() {})
		full := consoleRun(b, c, target, Options{ScanBudget: 1}, window, false)
		following := consoleRun(b, c, target, Options{}, window, false)
		churnIdle := churnOnly(b, c, window)
		churn := consoleRun(b, c, target, Options{}, window, true)
		if bin := os.Getenv("LOCKSCOPE_BINARY"); bin != "" {
			binFull := consoleBinary(b, c, bin, srv.Addr, window, "--scan-budget", "100%")
			binFollowing := consoleBinary(b, c, bin, srv.Addr, window)
			b.ReportMetric(100*binFull, "binary-full-rescans-server-%")
			b.ReportMetric(100*binFollowing, "binary-following-server-%")
			b.Logf("the lockscope binary under tmux: full re-scans %.2f%%, following %.2f%%", 100*binFull, 100*binFollowing)
		}
		b.ReportMetric(100*idle, "idle-server-%")
		b.ReportMetric(100*full.share, "full-rescans-server-%")
		b.ReportMetric(100*following.share, "following-server-%")
		b.ReportMetric((full.share-idle)/(following.share-idle), "x-full-vs-following-net")
		b.ReportMetric(100*churnIdle, "churn-no-console-server-%")
		b.ReportMetric(100*churn.share, "churn-following-server-%")
		b.ReportMetric(float64(full.passes), "full-passes-in-window")
		b.ReportMetric(following.census.Seconds(), "first-census-s")
		b.ReportMetric(ms(churn.latency(0.5)), "change-latency-p50-ms")
		b.ReportMetric(ms(churn.latency(0.99)), "change-latency-p99-ms")
		b.ReportMetric(ms(churn.latency(1)), "change-latency-max-ms")
		b.ReportMetric(float64(len(churn.latencies)), "changes-seen")
		b.ReportMetric(float64(churn.missed), "changes-missed")
		b.Logf("idle %.2f%%, full re-scans %.2f%% (%d passes), following %.2f%% (re-scan %.0f%% done), churn without console %.2f%%, churn following %.2f%%",
			100*idle, 100*full.share, full.passes, 100*following.share, 100*following.rescan, 100*churnIdle, 100*churn.share)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// consoleResult is one measured window of a console.
type consoleResult struct {
	share     float64       // server CPU time / wall time over the window
	census    time.Duration // the first census, before the window
	passes    int           // passes completed in the window
	rescan    float64       // the background re-scan's progress at the end
	latencies []time.Duration
	missed    int // changes never shown
}

func (r consoleResult) latency(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	s := slices.Clone(r.latencies)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// serverShare runs f and returns the share of the window the server's CPU was busy.
func serverShare(b *testing.B, c *redis.Client, window time.Duration, during func()) float64 {
	ctx := context.Background()
	cpu0, err := serverCPUTime(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	during()
	if rest := window - time.Since(start); rest > 0 {
		time.Sleep(rest)
	}
	cpu1, err := serverCPUTime(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	return float64(cpu1-cpu0) / float64(time.Since(start))
}

// consoleRun follows the target, waits for the first census, then measures a window.
func consoleRun(b *testing.B, c *redis.Client, target connect.Target, opts Options, window time.Duration, churn bool) consoleResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	fl := New(target, opts).Follow(ctx)
	updates := fl.Updates()
	var r consoleResult
	for u := range updates {
		if u.Kind == UpdatePassDone && u.Gen == 1 {
			break
		}
	}
	r.census = time.Since(start)
	screen := make([]string, 40)
	for i := range screen {
		screen[i] = redistest.LockKey(i)
	}
	fl.Focus(screen)
	var ch *churner
	if churn {
		ch = newChurner()
	}
	var consumed sync.WaitGroup
	stop := make(chan struct{})
	consumed.Go(func() {
		for {
			select {
			case <-stop:
				return
			case u := <-updates:
				switch u.Kind {
				case UpdatePassDone:
					r.passes++
				case UpdateFollowing:
					r.rescan = u.Following.Rescan
				case UpdateBatch:
					if ch != nil {
						ch.saw(u.Locks)
					}
				}
			}
		}
	})
	r.share = serverShare(b, c, window, func() {
		if ch != nil {
			go ch.run(c, window)
		}
	})
	close(stop)
	consumed.Wait()
	if ch != nil {
		ch.wait()
		r.latencies, r.missed = ch.result()
	}
	cancel()
	for range updates { // Watch closes the channel once it has stopped
	}
	return r
}

// churnOnly measures the server under the churn with no console.
func churnOnly(b *testing.B, c *redis.Client, window time.Duration) float64 {
	ch := newChurner()
	share := serverShare(b, c, window, func() { go ch.run(c, window) })
	ch.wait()
	return share
}

// churner makes 100 Obtain + 100 Release a second with locklib on fresh keys, each held
// 500 ms, and times how long until the console's stream shows each change.
type churner struct {
	mu        sync.Mutex
	obtained  map[string]time.Time // key -> when its Obtain started, until shown
	released  map[string]time.Time // key -> when its Release started, until shown gone
	latencies []time.Duration
	done      sync.WaitGroup
	seq       atomic.Int64
}

func newChurner() *churner {
	return &churner{obtained: map[string]time.Time{}, released: map[string]time.Time{}}
}

func (ch *churner) run(c *redis.Client, window time.Duration) {
	ch.done.Add(1)
	defer ch.done.Done()
	ctx := context.Background()
	lc := locklib.New(c)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	end := time.After(window - time.Second) // the last releases land inside the window
	for {
		select {
		case <-end:
			return
		case <-tick.C:
		}
		key := fmt.Sprintf("lock:churn:%d", ch.seq.Add(1))
		ch.mu.Lock()
		ch.obtained[key] = time.Now()
		ch.mu.Unlock()
		l, err := lc.Obtain(ctx, key, 10*time.Second)
		if err != nil {
			panic(err)
		}
		ch.done.Add(1)
		time.AfterFunc(500*time.Millisecond, func() {
			defer ch.done.Done()
			ch.mu.Lock()
			ch.released[key] = time.Now()
			ch.mu.Unlock()
			if err := l.Release(ctx); err != nil {
				panic(err)
			}
		})
	}
}

// saw notes the changes a batch shows.
func (ch *churner) saw(locks []Lock) {
	now := time.Now()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for i := range locks {
		l := &locks[i]
		pending := ch.obtained
		if l.Gone {
			pending = ch.released
		}
		if at, ok := pending[l.Key]; ok {
			ch.latencies = append(ch.latencies, now.Sub(at))
			delete(pending, l.Key)
		}
	}
}

func (ch *churner) wait() { ch.done.Wait() }

// result is the latencies, and how many changes were never shown (a key shown gone before it
// was seen held counts as one).
func (ch *churner) result() ([]time.Duration, int) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.latencies, len(ch.obtained) + len(ch.released)
}

// consoleBinary opens the lockscope binary's console on addr in tmux, waits until its status
// bar ages the first complete pass ("oldest"), and returns the server's share over a window.
func consoleBinary(b *testing.B, c *redis.Client, bin, addr string, window time.Duration, args ...string) float64 {
	sock := fmt.Sprintf("lockscope-bench-%d", os.Getpid())
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			b.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	command := "env TERM=xterm-256color " + bin + " --redis redis://" + addr + " " + strings.Join(args, " ")
	tmux("new-session", "-d", "-s", "console", "-x", "160", "-y", "50", command)
	defer exec.Command("tmux", "-L", sock, "kill-server").Run()
	deadline := time.Now().Add(5 * time.Minute)
	for !strings.Contains(tmux("capture-pane", "-p", "-t", "console"), "oldest ") {
		if time.Now().After(deadline) {
			b.Fatalf("the console did not finish its census:\n%s", tmux("capture-pane", "-p", "-t", "console"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return serverShare(b, c, window, func() {})
}
