package actions

import (
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

func TestRedlockActsOnEveryInstanceAndReportsEach(t *testing.T) {
	target, clients, _ := redlock(t, 3)
	ctx := testCtx(t)
	a := New(target, Options{})
	mustSet(t, clients[0], "lock:q", lockValue, time.Minute)
	mustSet(t, clients[1], "lock:q", lockValue, time.Minute)
	mustSet(t, clients[2], "lock:q", "newer-holder", time.Minute)

	h, err := a.Peek(ctx, "lock:q")
	if err != nil || h.Value != lockValue || len(h.Instances) != 3 || !h.Instances[2].Exists || h.Instances[2].Value != "newer-holder" {
		t.Fatalf("peek %+v %v, want the majority value and each instance", h, err)
	}

	res, err := a.Release(ctx, "lock:q", lockValue, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Outcome{Released, Released, ChangedHands}
	for i, in := range res.Instances {
		if in.Outcome != want[i] || in.Addr != target.Addrs[i] {
			t.Errorf("instance %d: %+v, want %s at %s", i, in, want[i], target.Addrs[i])
		}
	}
	if res.Outcome != Released || res.Current != "newer-holder" || res.Partial() {
		t.Fatalf("aggregate %q current %q partial %v", res.Outcome, res.Current, res.Partial())
	}
	if v, ok := redistest.Value(t, clients[2], "lock:q"); !ok || v != "newer-holder" {
		t.Fatal("the other holder's copy was deleted")
	}

	// One audit record per action on every instance, merged back into one.
	recs, err := a.Audit(ctx, 10)
	if err != nil || len(recs) != 1 || len(recs[0].Sources) != 3 {
		t.Fatalf("audit %+v %v, want one record from 3 instances", recs, err)
	}
	if !strings.Contains(recs[0].Instances, target.Addrs[2]+"=changed_hands") {
		t.Fatalf("per-instance detail %q", recs[0].Instances)
	}
}

func TestRedlockWithAnInstanceDown(t *testing.T) {
	target, clients, servers := redlock(t, 3)
	ctx := testCtx(t)
	a := New(target, Options{InstanceTimeout: time.Second})
	for _, c := range clients {
		mustSet(t, c, "lock:d", lockValue, time.Minute)
	}
	servers[1].Kill()

	res, err := a.Extend(ctx, "lock:d", lockValue, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Extended || !res.Partial() || res.Instances[1].Outcome != Failed || res.Instances[1].Err == nil {
		t.Fatalf("%+v, want extended with instance 2 failed", res)
	}
	if res.AuditErr == nil || !strings.Contains(res.AuditErr.Error(), target.Addrs[1]) {
		t.Fatalf("AuditErr %v, want one naming the dead instance", res.AuditErr)
	}
	recs, err := a.Audit(ctx, 10)
	if len(recs) != 1 || err == nil || !strings.Contains(err.Error(), target.Addrs[1]) {
		t.Fatalf("audit %d records, err %v: want the record and an error naming the dead instance", len(recs), err)
	}

	for _, s := range servers {
		s.Kill()
	}
	if _, err := a.Release(ctx, "lock:d", lockValue, ""); err == nil || !strings.Contains(err.Error(), target.Addrs[0]) {
		t.Fatalf("all down: %v, want an error naming an instance", err)
	}
}
