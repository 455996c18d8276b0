package actions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEveryAttemptIsAudited(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{Operator: "alice@ops"})
	mustSet(t, c, "lock:x", lockValue, time.Minute)

	before := time.Now().Add(-time.Second)
	steps := []func() (Result, error){
		func() (Result, error) { return a.Extend(ctx, "lock:x", "wrong", time.Minute, "try") },
		func() (Result, error) { return a.Extend(ctx, "lock:x", lockValue, 90*time.Second, "deploy") },
		func() (Result, error) { return a.Release(ctx, "lock:x", lockValue, "stuck job") },
		func() (Result, error) { return a.Release(ctx, "lock:x", lockValue, "again") },
	}
	for _, step := range steps {
		res, err := step()
		if err != nil || res.AuditErr != nil {
			t.Fatalf("%v %v", err, res.AuditErr)
		}
	}

	recs, err := a.Audit(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	// Newest first.
	want := []struct {
		action Action
		result Outcome
		seen   string
		reason string
		ttl    time.Duration
	}{
		{ActionRelease, AlreadyGone, lockValue, "again", 0},
		{ActionRelease, Released, lockValue, "stuck job", 0},
		{ActionExtend, Extended, lockValue, "deploy", 90 * time.Second},
		{ActionExtend, ChangedHands, "wrong", "try", time.Minute},
	}
	for i, w := range want {
		r := recs[i]
		if r.Action != w.action || r.Result != w.result || r.Seen != w.seen || r.Reason != w.reason || r.TTL != w.ttl ||
			r.Key != "lock:x" || r.Operator != "alice@ops" || r.Time.Before(before) || r.Time.After(time.Now()) ||
			r.ActionID == "" || r.ID == "" || len(r.Sources) != 1 {
			t.Errorf("record %d = %+v, want %+v", i, r, w)
		}
	}
	if recs, _ := a.Audit(ctx, 2); len(recs) != 2 || recs[0].Reason != "again" {
		t.Fatalf("limit 2: %+v", recs)
	}
}

func TestAuditStreamIsCapped(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	a := New(target, Options{AuditMaxLen: 10})
	for i := 0; i < 400; i++ {
		if res, err := a.Release(ctx, "lock:none", "v", ""); err != nil || res.AuditErr != nil {
			t.Fatal(err, res.AuditErr)
		}
	}
	// MAXLEN ~ trims whole stream nodes (100 entries by default), so the length stays near the cap.
	if n := c.XLen(ctx, DefaultAuditStream).Val(); n < 10 || n > 200 {
		t.Fatalf("stream length %d after 400 writes with MAXLEN ~ 10", n)
	}
}

func TestFailedAuditWriteDoesNotChangeTheResult(t *testing.T) {
	target, c, s := standalone(t)
	ctx := testCtx(t)
	// A user that may do everything except XADD.
	a := adminAs(t, ctx, c, s, target, "noaudit", "~*", "&*", "+@all", "-xadd")
	mustSet(t, c, "lock:n", lockValue, time.Minute)

	res, err := a.Release(ctx, "lock:n", lockValue, "")
	if err != nil || res.Outcome != Released {
		t.Fatalf("%q %v, want released despite the audit failure", res.Outcome, err)
	}
	if res.AuditErr == nil || !strings.Contains(res.AuditErr.Error(), "NOPERM") {
		t.Fatalf("AuditErr = %v, want the NOPERM failure", res.AuditErr)
	}
	if c.Exists(ctx, "lock:n").Val() != 0 {
		t.Fatal("key not released")
	}
}

func TestAuditReadFailsClearly(t *testing.T) {
	target, _, s := standalone(t)
	s.Kill()
	_, err := New(target, Options{InstanceTimeout: time.Second}).Audit(context.Background(), 5)
	if err == nil || !strings.Contains(err.Error(), s.Addr) {
		t.Fatalf("err = %v, want one naming %s", err, s.Addr)
	}
}

// TestRecordStopped: an attempt that stopped before its script is in the trail with its
// outcome; in read-only mode nothing is written.
func TestRecordStopped(t *testing.T) {
	target, c, _ := standalone(t)
	ctx := testCtx(t)
	attempt := Result{Action: ActionExtend, Key: "lock:x", Seen: lockValue, TTL: time.Minute, Outcome: Declined}
	if err := New(target, Options{ReadOnly: true}).RecordStopped(ctx, attempt, nil, "no"); !errors.Is(err, ErrReadOnly) || len(auditEntries(t, c)) != 0 {
		t.Fatalf("read-only: %v, %d entries", err, len(auditEntries(t, c)))
	}
	a := New(target, Options{Operator: "bob"})
	if err := a.RecordStopped(ctx, attempt, nil, "not now"); err != nil {
		t.Fatal(err)
	}
	recs, err := a.Audit(ctx, 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%v %v", recs, err)
	}
	if r := recs[0]; r.Result != Declined || r.Action != ActionExtend || r.TTL != time.Minute || r.Seen != lockValue || r.Reason != "not now" || r.Operator != "bob" {
		t.Errorf("record %+v", r)
	}
}
