package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/exporter"
	"github.com/lockscope/lockscope/scanner"
	"github.com/spf13/cobra"
)

// exporterOptions is `lockscope exporter`.
type exporterOptions struct {
	IO           IOStreams
	Conn         connection
	Listen       string        // host:port of the HTTP server
	Group        string        // keygroup.Parse's rule
	MaxGroups    int           // distinct group labels before _other
	CensusMaxAge time.Duration // /healthz fails when the last complete pass is older
}

// defaultListen is the exporter's address unless --listen says otherwise: loopback only, a
// port of its own (docs/exporter.md).
const defaultListen = "127.0.0.1:9838"

// shutdownGrace is how long a shutdown waits for scrapes in flight.
const shutdownGrace = 5 * time.Second

func newExporterCmd(ios IOStreams, getenv func(string) string) *cobra.Command {
	opts := &exporterOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "exporter",
		Short: "Serve the live census as Prometheus metrics (/metrics, /healthz)",
		Long: "Serve the live census as Prometheus metrics: locks, locks without expiry, stuck locks, oldest age, waiters and\n" +
			"the TTL distribution per key group, and the census's and servers' health. It follows the census as the console\n" +
			"does, so a scrape never starts a SCAN. Read-only: it never writes to Redis. Stops on SIGINT or SIGTERM.\n" +
			"docs/exporter.md lists the metrics.",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Conn = connectionFlags(cmd, getenv)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runExporter(ctx, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Listen, "listen", defaultListen, "host:port to serve /metrics and /healthz on")
	addGroupFlag(f, &opts.Group, "the group label")
	f.IntVar(&opts.MaxGroups, "max-groups", exporter.DefaultMaxGroups, "distinct group labels at most; later new groups count as group=\"_other\"")
	f.DurationVar(&opts.CensusMaxAge, "census-max-age", exporter.DefaultCensusMaxAge, "/healthz fails when the last complete census pass ended longer ago")
	return cmd
}

// maxGroupsLimit bounds --max-groups: every group is a dozen series.
const maxGroupsLimit = 10000

func runExporter(ctx context.Context, opts *exporterOptions) error {
	rule, err := groupRule(opts.Group)
	if err != nil {
		return err
	}
	if opts.MaxGroups < 1 || opts.MaxGroups > maxGroupsLimit {
		return withExit(exitUsage, fmt.Errorf("--max-groups %d: want 1 to %d", opts.MaxGroups, maxGroupsLimit))
	}
	if opts.CensusMaxAge <= 0 {
		return withExit(exitUsage, fmt.Errorf("--census-max-age %v: want a duration above 0", opts.CensusMaxAge))
	}
	if _, _, err := net.SplitHostPort(opts.Listen); err != nil {
		return withExit(exitUsage, fmt.Errorf("--listen %q: want host:port (%w)", opts.Listen, err))
	}
	// The census, the failover follower and this function all write to stderr.
	stderr := &lockedWriter{w: opts.IO.ErrOut}
	t, err := opts.Conn.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer t.Close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", opts.Listen, err)
	}
	exp := exporter.New(t, exporter.Options{Rule: rule, MaxGroups: opts.MaxGroups, StuckAfter: opts.Conn.StuckAfter,
		CensusMaxAge: opts.CensusMaxAge, Version: buildVersion(),
		Log: func(msg string) { printf(stderr, "lockscope: exporter: %s\n", msg) }})

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var following sync.WaitGroup
	refused := make(chan error, 1) // the first pass was refused an ACL permission
	following.Go(func() {
		first := true
		for u := range opts.Conn.scanner(t).Watch(watchCtx) {
			exp.Apply(u)
			switch {
			case !first:
			case u.Kind == scanner.UpdatePassDone:
				first = false
			case u.Kind == scanner.UpdateError && errors.Is(t.Classify(u.Err), connect.ErrPermission):
				// A user that may not read the census will not be allowed to later: say so
				// now (exit code 8) rather than serve a failing /healthz forever.
				first = false
				refused <- u.Err
			}
		}
	})
	// Through Sentinel the census reads the master of the moment, but names the servers by
	// the master last heard of: hear of every failover (a no-op on other targets).
	following.Go(func() {
		for sw := range t.FollowMaster(watchCtx) {
			printf(stderr, "lockscope: exporter: the master moved from %s to %s\n", sw.From, sw.To)
		}
	})
	srv := &http.Server{Handler: exp.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	printf(stderr, "lockscope: exporter: serving http://%s/metrics and /healthz for %s\n", ln.Addr(), t.Label())

	var denied error
	select {
	case <-ctx.Done():
		err = nil
	case err = <-served: // the listener failed: stop the rest
	case denied = <-refused:
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if shutErr := srv.Shutdown(shutdownCtx); err == nil && shutErr != nil {
		err = shutErr
	}
	stopWatch()
	following.Wait() // the Watch closes its channel once its goroutines have ended
	if denied != nil {
		return describeError(t, denied)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving %s: %w", ln.Addr(), err)
	}
	return nil
}
