package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/lockscope/lockscope/demo"
	"github.com/lockscope/lockscope/scanner"
	"github.com/lockscope/lockscope/ui"
)

// exitUnsafe: the demo saw two critical sections interleave (docs/demo.md).
const exitUnsafe = 10

// defaultHeadlessDuration is the length of a --headless run without --duration.
const defaultHeadlessDuration = 20 * time.Second

// demoFlags are the demo's own flags.
type demoFlags struct {
	scenario  string
	workers   int
	resources int
	redlock   int
	ttl       time.Duration
	duration  time.Duration
	headless  bool
	json      bool
}

func newDemoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch workers fight over locks, crash, expire and get fenced off (embedded Redis unless --redis)",
		Long: "Workers contend for a few lock:demo:* keys with locklib while the scenario provokes faults: slow work\n" +
			"kept alive by the watchdog, holders that crash, holders frozen past their TTL whose late writes the\n" +
			"protected resource refuses, and (Redlock) an instance lost and restarted empty. A checker records\n" +
			"every write and counts overlaps: two critical sections interleaving on one resource.\n\n" +
			"Without --redis the demo runs its own in-process Redis (miniredis) and never touches $REDIS_URL or\n" +
			"127.0.0.1:6379. --headless prints a summary instead of opening the console, and exits " +
			fmt.Sprint(exitUnsafe) + " if any overlap was seen.",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd, f) },
	}
	names := make([]string, len(demo.Scenarios))
	for i, s := range demo.Scenarios {
		names[i] = string(s)
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scenario, "scenario", string(demo.Mixed), "faults to provoke: "+strings.Join(names, ", "))
	fl.IntVar(&f.workers, "workers", demo.DefaultWorkers, "contending workers")
	fl.IntVar(&f.resources, "resources", demo.DefaultResources, "protected resources (lock keys lock:demo:<name>)")
	fl.IntVar(&f.redlock, "redlock", 0, "Redlock over N instances: N embedded servers, or the N --redis URLs given")
	fl.DurationVar(&f.ttl, "ttl", demo.DefaultTTL, "lock TTL; work and fault timings scale with it")
	fl.DurationVar(&f.duration, "duration", 0, fmt.Sprintf("run length (default: until you quit; %v with --headless)", defaultHeadlessDuration))
	fl.BoolVar(&f.headless, "headless", false, "no console: run, print a summary, exit non-zero on any overlap")
	fl.BoolVar(&f.json, "json", false, "with --headless: the summary as JSON")
	return cmd
}

func runDemo(cmd *cobra.Command, f demoFlags) error {
	// go-redis logs failed dials to stderr, which would garble the console during a failover.
	silenceRedisLog.Do(func() { redis.SetLogger(discardLogger{}) })
	scenario, err := demo.ParseScenario(f.scenario)
	if err != nil {
		return withExit(exitUsage, err)
	}
	if f.json && !f.headless {
		return withExit(exitUsage, errors.New("--json needs --headless"))
	}
	if f.workers < 1 || f.resources < 1 {
		return withExit(exitUsage, fmt.Errorf("--workers %d --resources %d: want at least 1 of each", f.workers, f.resources))
	}
	if f.redlock < 0 {
		return withExit(exitUsage, fmt.Errorf("--redlock %d: want the number of instances", f.redlock))
	}
	if f.headless && f.duration == 0 {
		f.duration = defaultHeadlessDuration
	}
	target, view, closeTarget, err := demoTarget(cmd, f.redlock)
	if err != nil {
		return err
	}
	defer closeTarget()

	ctrl, err := demo.Start(demo.Config{
		Target:    target,
		Scenario:  scenario,
		Workers:   f.workers,
		Resources: f.resources,
		TTL:       f.ttl,
		Duration:  f.duration,
	})
	if errors.Is(err, demo.ErrBadConfig) {
		return withExit(exitUsage, err)
	}
	if err != nil {
		return describeError(err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.headless {
		return runHeadless(ctx, cmd, ctrl, f.json)
	}
	defer ctrl.Stop()
	uiCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ctrl.Done(): // --duration given: the console closes with the run
			cancel()
		case <-uiCtx.Done():
		}
	}()
	err = ui.Run(uiCtx, ui.Options{
		Target:      view,
		Scanner:     scanner.New(view, scanner.Options{Pattern: patternFlag(cmd)}),
		Admin:       newAdmin(cmd, view),
		ReadOnly:    readOnlyFlag(cmd),
		StuckAfter:  stuckAfterFlag(cmd),
		TargetLabel: "demo on " + ctrl.Label(),
		Demo:        ctrl,
	})
	return describeError(err)
}

// runHeadless waits for the run (or Ctrl-C), prints the summary and fails on any overlap.
func runHeadless(ctx context.Context, cmd *cobra.Command, ctrl *demo.Controller, asJSON bool) error {
	select {
	case <-ctrl.Done():
	case <-ctx.Done():
	}
	summary := ctrl.Stop()
	out := cmd.OutOrStdout()
	var err error
	if asJSON {
		err = summary.WriteJSON(out)
	} else {
		err = summary.WriteText(out)
	}
	if err != nil {
		return err
	}
	if summary.Overlaps > 0 {
		return withExit(exitUnsafe, fmt.Errorf("demo: %d unsafe overlaps: mutual exclusion failed", summary.Overlaps))
	}
	return nil
}

// demoTarget is where the demo runs and what the console shows: the embedded servers unless
// --redis was given explicitly (never $REDIS_URL or 127.0.0.1:6379 by default).
func demoTarget(cmd *cobra.Command, redlock int) (demo.Target, scanner.Target, func(), error) {
	if !redisFlagGiven(cmd) {
		return embeddedDemoTarget(redlock)
	}
	view, closeView, err := openTarget(cmd)
	if err != nil {
		return demo.Target{}, scanner.Target{}, func() {}, err
	}
	if redlock > 0 && redlock != len(view.Clients) || redlock > 1 && view.Mode == scanner.Cluster {
		closeView()
		return demo.Target{}, scanner.Target{}, func() {}, withExit(exitUsage,
			fmt.Errorf("--redlock %d with --redis: give %d --redis URLs of independent servers (got %d)", redlock, redlock, len(view.Addrs)))
	}
	dials := make([]func() redis.UniversalClient, len(view.Clients))
	for i, c := range view.Clients {
		if dials[i], err = cloner(c); err != nil {
			closeView()
			return demo.Target{}, scanner.Target{}, func() {}, err
		}
	}
	t := demo.Target{
		Label:   view.Mode.String() + " " + strings.Join(view.Addrs, ","),
		Addrs:   view.Addrs,
		Redlock: view.Mode == scanner.Redlock,
		Dial:    func(i int) redis.UniversalClient { return dials[i]() },
	}
	if view.Mode == scanner.Cluster {
		t.Addrs = []string{strings.Join(view.Addrs, ",")} // one cluster client, seeded with every address
	}
	return t, view, closeView, nil
}

func embeddedDemoTarget(redlock int) (demo.Target, scanner.Target, func(), error) {
	e, err := demo.StartEmbedded(max(redlock, 1))
	if err != nil {
		return demo.Target{}, scanner.Target{}, func() {}, err
	}
	t := e.Target(redlock > 1)
	view := scanner.Target{Mode: scanner.Standalone, Addrs: t.Addrs}
	if t.Redlock {
		view.Mode = scanner.Redlock
	}
	for _, addr := range t.Addrs {
		view.Clients = append(view.Clients, redis.NewClient(demo.EmbeddedClientOptions(addr)))
	}
	closeAll := func() {
		for _, c := range view.Clients {
			_ = c.Close()
		}
		e.Close()
	}
	return t, view, closeAll, nil
}

// cloner makes new clients with c's options: each demo worker needs clients of its own.
func cloner(c redis.UniversalClient) (func() redis.UniversalClient, error) {
	switch c := c.(type) {
	case *redis.ClusterClient:
		o := *c.Options()
		return func() redis.UniversalClient { o := o; return redis.NewClusterClient(&o) }, nil
	case *redis.Client:
		o := *c.Options()
		return func() redis.UniversalClient { o := o; return redis.NewClient(&o) }, nil
	}
	return nil, fmt.Errorf("demo: cannot copy a client of type %T", c)
}
