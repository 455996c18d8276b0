package cli

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// heldWriter passes its first write to first and blocks it until release closes: a consumer
// that has seen the first output and holds the command there.
type heldWriter struct {
	first   chan []byte
	release chan struct{}
	rest    bytes.Buffer
	held    bool
}

func (w *heldWriter) Write(p []byte) (int, error) {
	if !w.held {
		w.held = true
		w.first <- bytes.Clone(p)
		<-w.release
		return len(p), nil
	}
	return w.rest.Write(p)
}

// loadKeys writes n lockscope locks lock:s:0 ... with a fresh holder value.
func loadKeys(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	ctx := context.Background()
	pipe := c.Pipeline()
	for i := range n {
		pipe.Set(ctx, fmt.Sprintf("lock:s:%d", i), fmt.Sprintf("worker-1:-:%d:%016x", time.Now().UnixMilli(), i), time.Hour)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// pttlCalls is how many PTTL the server has run since its stats were reset.
func pttlCalls(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	return int(redistest.CommandStats(info)["pttl"].Calls)
}

// TestLsStreamsBeforeTheCensusEnds: without an order, `ls --json` and `ls --sort none` write
// their first lines while most keys are still unread (the server has run fewer PTTL than
// there are keys), and in the end every key exactly once.
func TestLsStreamsBeforeTheCensusEnds(t *testing.T) {
	const n = 30_000
	s := redistest.Start(t)
	c := s.Client()
	loadKeys(t, c, n)
	for _, args := range [][]string{{"ls", "--json"}, {"ls", "--json", "--sort", "none"}, {"ls", "--sort", "none"}} {
		if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		w := &heldWriter{first: make(chan []byte), release: make(chan struct{})}
		done := make(chan int)
		go func() {
			done <- run(append(args, "--redis", redisURL(s.Addr)), IOStreams{Out: w, ErrOut: &bytes.Buffer{}}, func(string) string { return "" })
		}()
		var first []byte
		select {
		case first = <-w.first:
		case code := <-done:
			t.Fatalf("%v: exit %d before any output", args, code)
		}
		if read := pttlCalls(t, c); read >= n {
			t.Errorf("%v: first output after %d of %d keys were read: not streamed", args, read, n)
		}
		close(w.release)
		if code := <-done; code != exitOK {
			t.Fatalf("%v: exit %d", args, code)
		}
		out := string(first) + w.rest.String()
		var keys []string
		if args[1] == "--json" {
			for _, obj := range jsonLines(t, out) {
				keys = append(keys, obj["key"].(string))
			}
		} else {
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if got := strings.Fields(lines[0]); !slices.Equal(got, lsColumns) {
				t.Errorf("%v: header %q", args, lines[0])
			}
			if summary := lines[len(lines)-1]; !strings.HasPrefix(summary, fmt.Sprintf("%d locks, 0 without expiry", n)) {
				t.Errorf("%v: summary %q", args, summary)
			}
			for _, line := range lines[1 : len(lines)-1] {
				keys = append(keys, strings.Fields(line)[0])
			}
		}
		slices.Sort(keys)
		if len(keys) != n || len(slices.Compact(keys)) != n {
			t.Errorf("%v: %d keys, %d distinct, want %d once each", args, len(keys), len(slices.Compact(keys)), n)
		}
	}
}

// TestLsSortNoneAndLimit: --sort none with --limit writes the first N as read, the summary
// counts every lock; an unknown order names none among the choices.
func TestLsSortNoneAndLimit(t *testing.T) {
	s := redistest.Start(t)
	seedLocks(t, s.Client())
	url := redisURL(s.Addr)
	r := runCLI(t, cliOpts{}, "ls", "--sort", "none", "--limit", "2", "--redis", url)
	expectExit(t, r, exitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[3], "2 of 5 keys shown (--limit 2); in all: 4 locks, 1 other key") {
		t.Errorf("--sort none --limit 2:\n%s", r.stdout)
	}
	r = runCLI(t, cliOpts{}, "ls", "--json", "--limit", "3", "--redis", url)
	if objs := jsonLines(t, r.stdout); len(objs) != 3 {
		t.Errorf("--json --limit 3: %d lines", len(objs))
	}
	r = runCLI(t, cliOpts{}, "ls", "--sort", "size", "--redis", url)
	expectExit(t, r, exitUsage)
	if !strings.Contains(r.stderr, "none") {
		t.Errorf("--sort size: %q does not offer none", r.stderr)
	}
}
