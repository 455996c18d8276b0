package demo_test

import (
	"fmt"
	"time"

	"github.com/lockscope/lockscope/demo"
)

// The Controller is what the console drives: start a run on embedded servers, read
// Snapshot for the demo pane, provoke faults by worker id, Stop for the summary. Which
// worker holds what when, and how many sections ran, vary from run to run; what is printed
// here does not.
func ExampleStart() {
	e, err := demo.StartEmbedded(1) // or demo.OnServers(target) for the user's servers
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	c, err := demo.Start(demo.Config{Servers: e.Servers(false), Scenario: demo.Healthy, // default Mixed
		Workers: 2, Resources: 1, TTL: 500 * time.Millisecond, Duration: time.Second}) // defaults 8, 3, 2s, until Stop
	if err != nil {
		fmt.Println(err) // wraps demo.ErrBadConfig, or says why no lock can be taken
		return
	}
	view := e.Inspect(false) // a connect.Target on the embedded servers, for the scanner and the console
	defer view.Close()

	s := c.Snapshot() // workers (id, state, holds, wait p50/p99, stale), counters, events
	fmt.Println(s.Resources, len(s.Workers), "workers,", s.Protection, "on", view.Mode)

	if err := c.PauseWorker(1); err != nil { // a stop-the-world pause: no traffic, no renewals
		fmt.Println(err)
	}
	w1 := c.Snapshot().Workers[0]
	fmt.Println(w1.Name, w1.State)
	if err := c.ResumeWorker(1); err != nil {
		fmt.Println(err)
	}
	if err := c.CrashWorker(2); err != nil { // never renews nor releases; restarted 3 TTLs later
		fmt.Println(err)
	}
	w2 := c.Snapshot().Workers[1]
	fmt.Println(w2.Name, w2.State)
	id, err := c.AddWorker()
	fmt.Println("added worker", id, err)

	<-c.Done()          // closed after Config.Duration
	summary := c.Stop() // releases, undoes faults, waits for every goroutine
	fmt.Println("overlaps", summary.Overlaps, "crashes", summary.Crashes, "pauses", summary.Pauses)
	// Output:
	// [lock:demo:orders] 2 workers, fencing-tokens on standalone
	// demo-w1 paused
	// demo-w2 crashed
	// added worker 3 <nil>
	// overlaps 0 crashes 1 pauses 1
}
