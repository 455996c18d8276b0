package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/demo"
	"github.com/lockscope/lockscope/keygroup"
	"github.com/lockscope/lockscope/scanner"
	"github.com/lockscope/lockscope/ui"
)

// defaultHeadlessDuration is the length of a --headless run without --duration.
const defaultHeadlessDuration = 20 * time.Second

// demoOptions is `lockscope demo`: its own flags, and the connection flags (used only when
// --redis is given: the demo runs on embedded servers otherwise).
type demoOptions struct {
	IO        IOStreams
	Conn      connection
	Scenario  string
	Lock      string
	Workers   int
	Resources int
	Permits   int
	Redlock   int
	TTL       time.Duration
	Duration  time.Duration
	Headless  bool
	JSON      bool
	Compare   bool
	Group     string // --group: the console's key groups (keygroup.Parse)
}

func newDemoCmd(ios IOStreams, getenv func(string) string) *cobra.Command {
	opts := &demoOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch workers fight over locks, crash, expire and get fenced off (embedded Redis unless --redis)",
		Long: "Workers contend for a few lock:demo:* keys with locklib while the scenario provokes faults: slow work\n" +
			"kept alive by the watchdog, holders that crash, holders frozen past their TTL whose late writes the\n" +
			"protected resource refuses, (Redlock) an instance lost and restarted empty, and (failover-replica,\n" +
			"its own redis-server master, replica and sentinel) a master killed before its replica copied the\n" +
			"locks. A checker records every write and counts overlaps: two critical sections interleaving on one\n" +
			"resource. --scenario rw-pool has workers read and write a document under a read-write lock and use\n" +
			"a pool of --permits slots under a lease semaphore, while holders crash and freeze: the checker proves\n" +
			"no writer acted beside another holder and no more than --permits used the pool at once.\n\n" +
			"--lock naive runs the same workers on the textbook lock (SETNX then EXPIRE, DEL without an owner\n" +
			"check, no fencing token) under lock:naive:* keys, to show the checker catching it; --compare runs\n" +
			"both at once, side by side.\n\n" +
			"Without --redis the demo runs its own in-process Redis (miniredis) and never touches $REDIS_URL or\n" +
			"127.0.0.1:6379. --headless prints a summary instead of opening the console, and exits " +
			fmt.Sprint(exitUnsafe) + " if locklib's run\nwas unsafe (an overlap, or a stale write accepted); the naive lock's overlaps are expected.",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Conn = connectionFlags(cmd, getenv)
			return runDemo(cmd.Context(), opts)
		},
	}
	names := make([]string, len(demo.Scenarios))
	for i, s := range demo.Scenarios {
		names[i] = string(s)
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Scenario, "scenario", string(demo.Mixed), "faults to provoke: "+strings.Join(names, ", "))
	fl.StringVar(&opts.Lock, "lock", string(demo.LockLib), "the workers' lock: locklib, or naive (the textbook mistakes: SETNX then EXPIRE, DEL without an owner check, no fencing token)")
	fl.IntVar(&opts.Workers, "workers", demo.DefaultWorkers, "contending workers")
	fl.IntVar(&opts.Resources, "resources", demo.DefaultResources, "protected resources (lock keys lock:demo:<name>; rw-pool has its two)")
	fl.IntVar(&opts.Permits, "permits", demo.DefaultPermits, "rw-pool: the pool's semaphore's permits")
	fl.IntVar(&opts.Redlock, "redlock", 0, "Redlock over N instances: N embedded servers, or the N --redis URLs given")
	fl.DurationVar(&opts.TTL, "ttl", demo.DefaultTTL, "lock TTL; work and fault timings scale with it")
	fl.DurationVar(&opts.Duration, "duration", 0, fmt.Sprintf("run length (default: until you quit; %v with --headless)", defaultHeadlessDuration))
	fl.BoolVar(&opts.Headless, "headless", false, "no console: run, print a summary, exit 10 when locklib's run was unsafe")
	fl.BoolVar(&opts.JSON, "json", false, "with --headless: the summary as JSON")
	fl.BoolVar(&opts.Compare, "compare", false, "run locklib and the naive lock side by side (same scenario and seed, at the same time)")
	addGroupFlag(fl, &opts.Group, "the console's contention overview (o; segment:3: one group per resource)")
	return cmd
}

func runDemo(ctx context.Context, opts *demoOptions) error {
	scenario, err := demo.ParseScenario(opts.Scenario)
	if err != nil {
		return withExit(exitUsage, err)
	}
	lock, err := demo.ParseLock(opts.Lock)
	if err != nil {
		return withExit(exitUsage, err)
	}
	switch {
	case opts.Compare && lock == demo.Naive:
		return withExit(exitUsage, errors.New("--compare with --lock naive: --compare runs both locks already"))
	case opts.Compare && scenario == demo.FailoverReplica:
		return withExit(exitUsage, errors.New("--compare with --scenario failover-replica: the two runs would each fail over the one master"))
	case (opts.Compare || lock == demo.Naive) && scenario == demo.RWPool:
		return withExit(exitUsage, errors.New("--scenario rw-pool with --compare or --lock naive: the naive lock has no read-write lock nor semaphore"))
	case opts.Compare && opts.Redlock > 0:
		return withExit(exitUsage, errors.New("--compare with --redlock: the naive lock is a single-instance lock"))
	case lock == demo.Naive && opts.Redlock > 0:
		return withExit(exitUsage, errors.New("--lock naive with --redlock: the naive lock is a single-instance lock"))
	}
	if opts.Conn.ReadOnly {
		return withExit(exitUsage, errors.New("demo cannot run with --read-only: its workers write lock:demo:* keys and their fences"))
	}
	if opts.JSON && !opts.Headless {
		return withExit(exitUsage, errors.New("--json needs --headless"))
	}
	if opts.Workers < 1 || opts.Resources < 1 || opts.Permits < 1 {
		return withExit(exitUsage, fmt.Errorf("--workers %d --resources %d --permits %d: want at least 1 of each", opts.Workers, opts.Resources, opts.Permits))
	}
	if opts.Redlock < 0 {
		return withExit(exitUsage, fmt.Errorf("--redlock %d: want the number of instances", opts.Redlock))
	}
	group, err := groupRule(opts.Group)
	if err != nil {
		return err
	}
	duration := opts.Duration
	if opts.Headless && duration == 0 {
		duration = defaultHeadlessDuration
	}
	servers, view, closeServers, err := demoServers(ctx, opts, scenario)
	if err != nil {
		return err
	}
	defer closeServers()

	run, err := startDemo(opts.Compare, demo.Config{
		Servers:   servers,
		Scenario:  scenario,
		Lock:      lock,
		Workers:   opts.Workers,
		Resources: opts.Resources,
		Permits:   opts.Permits,
		TTL:       opts.TTL,
		Duration:  duration,
	})
	if errors.Is(err, demo.ErrBadConfig) {
		return withExit(exitUsage, err)
	}
	if err != nil {
		return describeError(view, err)
	}
	// A closed terminal (SIGHUP) ends the run as ^C does: the failover-replica scenario's
	// servers die with the process anyway, but its directory goes only in closeServers.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if opts.Headless {
		select {
		case <-run.ctrl.Done():
		case <-ctx.Done():
		}
	} else if err := runDemoConsole(ctx, opts, run, view, demoScanner(opts, scenario, view), group); err != nil {
		run.stop()
		removeDemoKeys(opts, run.remover)
		return err
	}
	return finishDemo(opts, run)
}

// demoRun is the run of `lockscope demo`, or the two of --compare.
type demoRun struct {
	ctrl    *demo.Controller // the run the console drives: locklib's under --compare
	naive   *demo.Controller // --compare's naive run, nil otherwise
	remover interface{ RemoveKeys() error }
	// stop ends the run(s) and returns what to print and the summary whose verdict is the
	// exit code: locklib's.
	stop func() (result demoResult, judged demo.Summary)
}

// demoResult is what a stopped run prints: a demo.Summary, or a demo.ComparisonSummary.
type demoResult interface {
	WriteJSON(io.Writer) error
	WriteText(io.Writer) error
}

func startDemo(compare bool, cfg demo.Config) (demoRun, error) {
	if compare {
		pair, err := demo.StartComparison(cfg)
		if err != nil {
			return demoRun{}, err
		}
		return demoRun{ctrl: pair.LockLib, naive: pair.Naive, remover: pair,
			stop: func() (demoResult, demo.Summary) {
				s := pair.Stop()
				return s, s.LockLib
			}}, nil
	}
	ctrl, err := demo.Start(cfg)
	if err != nil {
		return demoRun{}, err
	}
	return demoRun{ctrl: ctrl, remover: ctrl,
		stop: func() (demoResult, demo.Summary) {
			s := ctrl.Stop()
			return s, s
		}}, nil
}

// runDemoConsole shows the run on the console until the operator quits (or --duration ends).
func runDemoConsole(ctx context.Context, opts *demoOptions, run demoRun, view connect.Target, census *scanner.Scanner, group keygroup.Rule) error {
	uiCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-run.ctrl.Done(): // --duration given: the console closes with the run
			cancel()
		case <-uiCtx.Done():
		}
	}()
	o := ui.Options{
		Target:      view,
		Scanner:     census,
		Admin:       opts.Conn.admin(view),
		ReadOnly:    opts.Conn.ReadOnly,
		StuckAfter:  opts.Conn.StuckAfter,
		TargetLabel: "demo on " + run.ctrl.Label(),
		Demo:        run.ctrl,
		Group:       &group,
	}
	if run.naive != nil { // not a typed nil in the interface
		o.DemoCompare = run.naive
	}
	return describeError(view, ui.Run(uiCtx, o))
}

// demoScanner is the console's census of the run. The embedded miniredis has neither keyspace
// notifications nor CLIENT TRACKING: the console follows locklib's events there without
// trying them, so that it does not open on a warning about nothing wrong.
func demoScanner(opts *demoOptions, scenario demo.Scenario, view connect.Target) *scanner.Scanner {
	if opts.Conn.RedisGiven || scenario == demo.FailoverReplica { // not the embedded servers
		return opts.Conn.scanner(view)
	}
	return scanner.New(view, scanner.Options{Pattern: opts.Conn.Pattern, EventsOnly: true})
}

// finishDemo stops the run, removes its keys from servers it shares, prints the summary and
// its verdict (after the console too: the run's result outlives its screen) and fails when
// locklib's run was unsafe (a naive run's overlaps are its expected result).
func finishDemo(opts *demoOptions, run demoRun) error {
	result, judged := run.stop()
	removeDemoKeys(opts, run.remover)
	var err error
	if opts.JSON {
		err = result.WriteJSON(opts.IO.Out)
	} else {
		err = result.WriteText(opts.IO.Out)
	}
	if err != nil {
		return err
	}
	if err := judged.Verdict(); err != nil && judged.Lock == demo.LockLib {
		return withExit(exitUnsafe, err)
	}
	return nil
}

// removeDemoKeys deletes what a stopped run left on servers given with --redis (the embedded
// ones go with the process), with a warning when it cannot.
func removeDemoKeys(opts *demoOptions, run interface{ RemoveKeys() error }) {
	if !opts.Conn.RedisGiven {
		return
	}
	if err := run.RemoveKeys(); err != nil {
		printf(opts.IO.ErrOut, "lockscope: warning: %s\n", err.Error())
	}
}

// demoServers is where the demo runs and what the console shows: the embedded servers unless
// --redis was given explicitly (never $REDIS_URL or 127.0.0.1:6379 by default).
func demoServers(ctx context.Context, opts *demoOptions, scenario demo.Scenario) (demo.Servers, connect.Target, func(), error) {
	if scenario == demo.FailoverReplica {
		return replicaServers(ctx, opts)
	}
	if !opts.Conn.RedisGiven {
		e, err := demo.StartEmbedded(max(opts.Redlock, 1))
		if err != nil {
			return demo.Servers{}, connect.Target{}, func() {}, err
		}
		view := e.Inspect(opts.Redlock > 1)
		return e.Servers(opts.Redlock > 1), view, func() { view.Close(); e.Close() }, nil
	}
	switch urls := len(opts.Conn.Config.URLs); {
	case opts.Conn.Config.Mode == connect.Independent:
		return demo.Servers{}, connect.Target{}, func() {}, withExit(exitUsage,
			errors.New("--independent: the demo's workers share one lock deployment (one server, --cluster or --redlock N)"))
	case opts.Redlock > 0 && opts.Conn.Config.Mode == connect.Sentinel:
		return demo.Servers{}, connect.Target{}, func() {}, withExit(exitUsage,
			errors.New("--redlock with --sentinel-master: a Redlock set is N independent servers, a Sentinel deployment one master"))
	case opts.Redlock > 0 && opts.Conn.Config.Mode == connect.Standalone:
		opts.Conn.Config.Mode = connect.Redlock
	case urls > 1 && opts.Conn.Config.Mode == connect.Standalone:
		return demo.Servers{}, connect.Target{}, func() {}, withExit(exitUsage,
			fmt.Errorf("%d --redis URLs: give --redlock %d for a Redlock set of them, or --cluster for cluster seeds", urls, urls))
	}
	view, err := opts.Conn.open(ctx, opts.IO.ErrOut)
	if err != nil {
		return demo.Servers{}, connect.Target{}, func() {}, err
	}
	if redlock := opts.Redlock; redlock > 0 && redlock != len(view.Clients) { // a cluster is one client
		view.Close()
		return demo.Servers{}, connect.Target{}, func() {}, withExit(exitUsage,
			fmt.Errorf("--redlock %d with --redis: give %d --redis URLs of independent servers (got %d)", redlock, redlock, len(view.Addrs)))
	}
	t, err := demo.OnServers(view)
	if err != nil {
		view.Close()
		return demo.Servers{}, connect.Target{}, func() {}, err
	}
	return t, view, view.Close, nil
}

// replicaServers are the failover-replica scenario's own master, replica and sentinel: it
// kills the master, so it runs only on servers it started (never --redis, never Redlock).
func replicaServers(ctx context.Context, opts *demoOptions) (demo.Servers, connect.Target, func(), error) {
	if opts.Conn.RedisGiven || opts.Redlock > 0 {
		return demo.Servers{}, connect.Target{}, func() {}, withExit(exitUsage, errors.New(
			"--scenario failover-replica starts and kills its own master, replica and sentinel: it cannot run with --redis or --redlock"))
	}
	rs, err := demo.StartReplicaSet(ctx)
	if errors.Is(err, demo.ErrNoRedisServer) {
		return demo.Servers{}, connect.Target{}, func() {}, withExit(exitUsage, err)
	}
	if err != nil {
		return demo.Servers{}, connect.Target{}, func() {}, err
	}
	view, err := rs.Inspect(ctx)
	if err != nil {
		rs.Close()
		return demo.Servers{}, connect.Target{}, func() {}, err
	}
	return rs.Servers(), view, func() { view.Close(); rs.Close() }, nil
}
