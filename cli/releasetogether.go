package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/present"
)

// readTogetherAndConfirm is readAndConfirm for `release KEY --together K2 ...`: it reads KEY's
// value (the one every key of a multi-key lock holds) and every other key's, shows them, and
// asks once for all. It returns KEY's value; the release deletes none of the keys unless each
// still holds it. Attempts that stop here are audited too.
func readTogetherAndConfirm(ctx context.Context, t connect.Target, admin *actions.Admin, opts *actionOptions) (string, error) {
	stderr := opts.IO.ErrOut
	keys := append([]string{opts.Key}, opts.Together...)
	stop := func(seen string, outcome actions.Outcome, cause, err error) (string, error) {
		attempt := actions.Result{Action: opts.Action, Key: opts.Key, Keys: keys, Seen: seen, Outcome: outcome}
		if auditErr := admin.RecordStopped(ctx, attempt, cause, opts.Reason); auditErr != nil {
			printf(stderr, "lockscope: warning: the audit record was not written: %s\n", t.Redact(auditErr.Error()))
		}
		return "", err
	}
	held := make([]actions.Holding, len(keys))
	for i, k := range keys {
		h, err := admin.Peek(ctx, k)
		if err != nil {
			return stop("", actions.Failed, err, describeError(t, err))
		}
		held[i] = h
	}
	first := held[0]
	if !first.Exists {
		return stop("", actions.AlreadyGone, nil, withExit(exitGone, fmt.Errorf("%s is already gone: nothing to release", present.Escape(opts.Key))))
	}
	printf(stderr, "%s and the keys taken together with it are held by %s\n", present.Escape(opts.Key), present.Holder(first.Value, nil, time.Now()))
	for _, h := range held {
		state := present.Sprintf("%s", present.Quote(h.Value, 120))
		switch {
		case !h.Exists:
			state = "no key (passed over)"
		case h.Value != first.Value:
			state = present.Sprintf("%s: another value, so none would be released", present.Quote(h.Value, 120))
		}
		printf(stderr, "  %s: %s\n", present.Escape(h.Key), state)
	}
	if opts.Yes {
		return first.Value, nil
	}
	ok, err := confirm(opts.IO.In, stderr, present.Sprintf("Release these %d keys together? [y/N] ", len(keys)))
	if err != nil {
		return stop(first.Value, actions.NoTerminal, nil, err)
	}
	if !ok {
		return stop(first.Value, actions.Declined, nil, withExit(exitOther, errors.New("not confirmed: release not done, nothing changed")))
	}
	return first.Value, nil
}
