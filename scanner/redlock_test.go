package scanner

import (
	"errors"
	"testing"
	"time"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func redlockTarget(servers []*redistest.Server) (connect.Target, []*redis.Client) {
	t := connect.Target{Mode: connect.Redlock}
	var clients []*redis.Client
	for _, s := range servers {
		c := s.Client(func(o *redis.Options) { o.MaxRetries = -1 })
		clients = append(clients, c)
		t.Clients = append(t.Clients, c)
		t.Addrs = append(t.Addrs, s.Addr)
	}
	return t, clients
}

// TestRedlockCensus: 3 independent instances merged by key, per-instance values and TTLs,
// quorum agreement; then one instance killed: it is Missing and each lock says so.
func TestRedlockCensus(t *testing.T) {
	servers := redistest.StartN(t, 3)
	target, c := redlockTarget(servers)
	ctx := testCtx(t)
	v1 := "api-1:-:1764400000123:0123456789abcdef"
	v2 := "api-2:-:1764400000999:fedcba9876543210"
	set := func(i int, key, value string, ttl time.Duration) { must(t, c[i].Set(ctx, key, value, ttl).Err()) }
	for i := range 3 {
		set(i, "lock:all", v1, time.Duration(10+i*10)*time.Second) // TTLs 10s, 20s, 30s
	}
	set(0, "lock:two", v1, time.Minute)
	set(2, "lock:two", v1, 0) // no expiry on one of the two
	set(0, "lock:split", v1, time.Minute)
	set(1, "lock:split", v2, time.Minute)
	set(1, "lock:one", v2, time.Minute)
	loadLocks(t, c[2], "bulk", 2000) // only on instance 3: read on all, found once

	s := New(target, Options{})
	census, err := s.Census(ctx)
	must(t, err)
	got := byKey(t, census.Locks)
	if len(got) != 2004 || len(census.Missing) != 0 {
		t.Fatalf("%d locks, missing %v", len(got), census.Missing)
	}
	check := func(key string, agree int, reached bool, value string) Lock {
		t.Helper()
		l := got[key]
		if l.Quorum == nil || l.Quorum.Agree != agree || l.Quorum.Reached != reached || l.Quorum.Needed != 2 || l.Quorum.Total != 3 || l.Value != value {
			t.Errorf("%s: quorum %+v value %q, want agree %d reached %v value %q", key, l.Quorum, l.Value, agree, reached, value)
		}
		if len(l.Quorum.Instances) != 3 || l.Addr != "" {
			t.Fatalf("%s: %d instances, addr %q", key, len(l.Quorum.Instances), l.Addr)
		}
		for i, in := range l.PerInstance() {
			if in.Addr != target.Addrs[i] {
				t.Errorf("%s: instance %d is %s, want Target order", key, i, in.Addr)
			}
		}
		return l
	}
	all := check("lock:all", 3, true, v1)
	// The quorum (2 of 3) holds until the second-longest TTL runs out: about 20s.
	if all.TTL < 15*time.Second || all.TTL > 20*time.Second || all.Node != "api-1" {
		t.Errorf("lock:all ttl %v node %q, want ~20s api-1", all.TTL, all.Node)
	}
	two := check("lock:two", 2, true, v1)
	if two.NoExpiry || two.TTL < 50*time.Second || two.Quorum.Instances[1].Present || !two.Quorum.Instances[2].NoExpiry {
		t.Errorf("lock:two: ttl %v noExpiry %v instances %+v", two.TTL, two.NoExpiry, two.Quorum.Instances)
	}
	split := check("lock:split", 1, false, v1)
	if split.Quorum.Instances[1].Value != v2 {
		t.Errorf("lock:split instance 2 value %q", split.Quorum.Instances[1].Value)
	}
	check("lock:one", 1, false, v2)
	if b := got["lock:bulk:0000001"]; b.Quorum.Agree != 1 || !b.Quorum.Instances[2].Present || b.Quorum.Instances[0].Present {
		t.Errorf("bulk lock: %+v", b)
	}

	servers[1].Kill()
	census, err = s.Census(ctx)
	must(t, err)
	if len(census.Missing) != 1 || census.Missing[0] != servers[1].Addr {
		t.Fatalf("missing %v, want [%s]", census.Missing, servers[1].Addr)
	}
	got = byKey(t, census.Locks)
	if l := got["lock:all"]; !l.Quorum.Instances[1].Missing || l.Quorum.Agree != 2 || !l.Quorum.Reached {
		t.Errorf("lock:all with instance 2 down: quorum %+v", l.Quorum)
	}
	if _, ok := got["lock:one"]; ok {
		t.Error("lock:one lived only on the dead instance yet is listed")
	}
	l, err := s.Get(ctx, "lock:split")
	if err != nil || !l.Quorum.Instances[1].Missing || l.Value != v1 {
		t.Errorf("Get with one instance down: %+v %v", l, err)
	}
	l, err = s.Get(ctx, "lock:nowhere")
	if !errors.Is(err, ErrGone) || !l.Gone || l.Quorum == nil || l.Quorum.Agree != 0 || l.Quorum.Reached {
		t.Fatalf("Get(gone) = %+v, %v", l, err)
	}
	if in := l.PerInstance(); len(in) != 3 || in[0].Present || !in[1].Missing || in[2].Missing || in[2].Addr != target.Addrs[2] {
		t.Errorf("Get(gone) instances %+v", in)
	}
}
