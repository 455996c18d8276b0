package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// readHolderAndConfirm is readAndConfirm for `release KEY --holder ID` and `extend KEY --holder
// ID`: it reads every holder of the shared lock at KEY, shows the one named (what the action
// will compare) beside the others, and asks. It returns that holder's Seen. Attempts that stop here are audited too.
func readHolderAndConfirm(ctx context.Context, t connect.Target, admin *actions.Admin, opts *actionOptions) (string, error) {
	stderr := opts.IO.ErrOut
	key, holder := present.Escape(opts.Key), present.Escape(opts.Holder)
	verb := "release"
	if opts.Action.Extends() {
		verb = "extend"
	}
	stop := func(seen string, outcome actions.Outcome, cause, err error) (string, error) {
		attempt := actions.Result{Action: opts.Action, Key: opts.Key, Holder: opts.Holder, Seen: seen, TTL: opts.TTL, Outcome: outcome}
		if auditErr := admin.RecordStopped(ctx, attempt, cause, opts.Reason); auditErr != nil {
			printf(stderr, "lockscope: warning: the audit record was not written: %s\n", t.Redact(auditErr.Error()))
		}
		return "", err
	}
	l, err := admin.PeekHolders(ctx, opts.Key)
	switch {
	case errors.Is(err, actions.ErrNoHolders):
		return stop("", actions.Failed, err, withExit(exitUsage, fmt.Errorf("%s is a Redisson semaphore (%d permits available), or a lock whose EXPIRE never came: %w; "+
			"release it without --holder to delete it as a lock; nothing changed", key, l.Shared.Available, err)))
	case errors.Is(err, actions.ErrNoKey):
		return stop("", actions.AlreadyGone, nil, withExit(exitGone, fmt.Errorf("%s is already gone: nothing to %s", key, verb)))
	case errors.Is(err, actions.ErrNotShared):
		return stop("", actions.NotALock, err, withExit(exitUsage, fmt.Errorf("--holder: %s; nothing changed", present.Escape(err.Error()))))
	case err != nil:
		return stop("", actions.Failed, err, describeError(t, err))
	}
	live := l.Shared.Live()
	h, ok := actions.LiveHolder(&l, opts.Holder)
	if !ok {
		ids := make([]string, len(live))
		for i, o := range live {
			ids[i] = present.Escape(o.ID)
		}
		return stop("", actions.AlreadyGone, nil, withExit(exitGone, fmt.Errorf("%s has no holder %s (holders now: %s): nothing to %s",
			key, holder, orNone(ids), verb)))
	}
	seen, err := actions.SeenFor(&l, h)
	if err != nil {
		return stop("", actions.Failed, err, describeError(t, err))
	}
	printf(stderr, "%s (%s) is held by %s\n", key, l.Kind(), present.Count(len(live), "holder"))
	for _, o := range live {
		mark := " "
		if o.ID == h.ID {
			mark = ">"
		}
		printf(stderr, "%s %s\n", mark, holderText(o))
	}
	printf(stderr, "  seen       %s\n", present.Quote(seen, 0))
	if opts.Yes {
		return seen, nil
	}
	question := present.Sprintf("Release holder %s of %s? [y/N] ", holder, key)
	if opts.Action == actions.ActionExtendHolder {
		question = present.Sprintf("Set the TTL of holder %s of %s to %s? [y/N] ", holder, key, present.Duration(opts.TTL))
	}
	ok, err = confirm(opts.IO.In, stderr, question)
	if err != nil {
		return stop(seen, actions.NoTerminal, nil, err)
	}
	if !ok {
		return stop(seen, actions.Declined, nil, withExit(exitOther, fmt.Errorf("not confirmed: %s not done, nothing changed", verb)))
	}
	return seen, nil
}

// holderText is one holder as the release's question lists it: mode, ID, levels, own TTL (as
// read), and a lockscope holder's node and trace.
func holderText(h scanner.SharedHolder) present.Safe {
	ttl := present.Never
	if !h.NoExpiry {
		ttl = present.Duration(h.TTL)
	}
	line := present.Sprintf("%s %s ×%d ttl %s", h.Mode.String(), h.ID, h.Count, ttl)
	if h.Node != "" {
		line = present.Sprintf("%s node %s trace %s", line, h.Node, present.OrUnknown(h.Trace))
	}
	return line
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
