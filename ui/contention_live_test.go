package ui

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/lockscope/lockscope/locklib"
	"github.com/lockscope/lockscope/scanner"
)

// TestLiveContentionRanking runs the console's model and commands on a real redis-server
// while locklib clients contend: three wait on lock:queue:1, held throughout (3 waiters, no
// hand-off); two take turns on lock:churn:1 (at most 1 waiter, a hand-off every few
// milliseconds); lock:idle:1 is held by one (neither). The overview must rank queue, churn,
// idle, count churn's hand-offs as its acquisitions (each a new holder, the first one a first
// sighting), and enter on churn must filter the table to its lock.
func TestLiveContentionRanking(t *testing.T) {
	redistest.Slow(t)
	srv := redistest.Start(t)
	rdb := srv.Client()
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	target := connect.Target{Mode: connect.Standalone, Clients: []redis.UniversalClient{rdb}, Addrs: []string{srv.Addr}}
	sc := scanner.New(target, scanner.Options{Interval: 200 * time.Millisecond})
	follower := sc.Follow(ctx)
	m := newModel(ctx, Options{Target: target, Scanner: sc}, follower.Updates(), subscribeEvents(ctx, target.Clients))
	m.focus = follower.Focus
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	console := newLiveConsole(t, m)

	client := func(node string) *locklib.Client {
		c := locklib.New(srv.Client(), locklib.WithNode(node))
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	hold := func(c *locklib.Client, key string) {
		if _, err := c.Obtain(ctx, key, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	hold(client("idle-1"), "lock:idle:1")
	hold(client("queue-0"), "lock:queue:1")
	console.waitFor("the held locks", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "lock:idle:1") && strings.Contains(s, "lock:queue:1")
	})

	var workers sync.WaitGroup
	for i := range 3 {
		c := client("queue-" + itoa(int64(i+1)))
		workers.Go(func() { _, _ = c.Obtain(ctx, "lock:queue:1", time.Minute) }) // waits until the test ends
	}
	var acquisitions atomic.Int64
	churnFor, stopChurn := context.WithTimeout(ctx, 3*time.Second)
	defer stopChurn()
	for i := range 2 {
		c := client("churn-" + itoa(int64(i+1)))
		workers.Go(func() {
			for churnFor.Err() == nil {
				l, err := c.Obtain(churnFor, "lock:churn:1", 5*time.Second)
				if errors.Is(err, locklib.ErrNotObtained) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				acquisitions.Add(1)
				time.Sleep(5 * time.Millisecond)
				_ = l.Release(context.Background())
			}
		})
	}
	t.Cleanup(func() { cancel(); workers.Wait() })

	typeKeys(m, "o")
	console.waitFor("the churn to end", 10*time.Second, func(string) bool { return churnFor.Err() != nil })
	workersDone := acquisitions.Load()
	// Each acquisition is a new holder; the first is a first sighting. The console may still
	// have the last events to read.
	want := int(workersDone) - 1
	counted := func() int {
		n := 0
		for _, f := range m.contention.ranked(time.Now()) {
			if f.name != "churn" {
				continue
			}
			for _, h := range f.handLine {
				if !math.IsNaN(h) { // no data: before the console started
					n += int(h)
				}
			}
		}
		return n
	}
	console.waitFor("churn's hand-offs counted", 15*time.Second, func(string) bool { return counted() >= want })
	m.Update(tickMsg(time.Now())) // a sample of the event waiters
	s := screen(m)
	var order []string
	for _, f := range m.contention.ranked(time.Now()) {
		order = append(order, f.name)
	}
	if strings.Join(order, " ") != "queue churn idle" {
		t.Fatalf("ranked %v, want queue churn idle:\n%s", order, s)
	}
	figures := func(name string) groupFigures {
		for _, f := range m.contention.ranked(time.Now()) {
			if f.name == name {
				return f
			}
		}
		return groupFigures{}
	}
	if q := figures("queue"); q.waiters != 3 || q.rate != 0 {
		t.Fatalf("queue: %d waiters, %.2f hand-offs/s; want 3, 0:\n%s", q.waiters, q.rate, s)
	}
	// A few events racing the census's first reads may be counted from both ends.
	t.Logf("churn: %d acquisitions, %d hand-offs counted", want+1, counted())
	if want < 20 || counted() > want+3 {
		t.Fatalf("churn: %d hand-offs counted, want %d (its acquisitions but the first):\n%s", counted(), want, s)
	}
	mustContain(t, s, "Contention by key group")

	typeKeys(m, "g", "down", "enter")
	console.waitFor("the table filtered to churn", 5*time.Second, func(s string) bool {
		return strings.Contains(s, "group:churn") && strings.Contains(s, "lock:churn:1") && !strings.Contains(s, "lock:queue:1")
	})
}
