package scanner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
)

func TestCensusDecodesEveryFormat(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	acquired := time.UnixMilli(1764400000123)
	seed := protocol.Value{Node: "api-7", Trace: "req-42", AcquiredAt: acquired, Rand: "0123456789abcdef"}.String()
	must(t, c.Set(ctx, "lock:seed", seed, time.Minute).Err())
	must(t, c.Set(ctx, "lock:reentrant", seed+":3", time.Minute).Err())
	must(t, c.Set(ctx, "lock:ipv6", "fe80::1:6379:-:1764400000123:0123456789abcdef", time.Minute).Err())
	must(t, c.Set(ctx, "lock:forever", seed, 0).Err())
	must(t, c.Set(ctx, "lock:redsync", "q83vEjRWeJCrze8SNFZ4kA==", time.Minute).Err())
	must(t, c.Set(ctx, "lock:bsm", "q83vEjRWeJCrze8SNFZ4kA"+`{"job":7}`, time.Minute).Err())
	must(t, c.Set(ctx, "lock:uuid", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", time.Minute).Err())
	must(t, c.Set(ctx, "lock:hex", "0123456789abcdef0123456789abcdef", time.Minute).Err())
	must(t, c.Set(ctx, "lock:opaque", "held by the nightly job", time.Minute).Err())
	must(t, c.HSet(ctx, "lock:redisson", "3f2504e0-4f89-11d3-9a0c-0305e82c3301:57", "2").Err())
	must(t, c.PExpire(ctx, "lock:redisson", time.Minute).Err())
	must(t, c.RPush(ctx, "lock:list", "a", "b").Err())
	must(t, c.SAdd(ctx, "lock:set", "a").Err())
	must(t, c.ZAdd(ctx, "lock:zset", redisZ(1, "a")).Err())
	must(t, c.XAdd(ctx, xadd("lock:stream")).Err())
	must(t, c.Set(ctx, "other:key", seed, time.Minute).Err()) // outside the pattern
	must(t, c.Set(ctx, protocol.FenceKey("lock:seed"), "1764400000123456", 0).Err())
	must(t, c.ZAdd(ctx, protocol.WaitQueueKey("lock:seed"), redisZ(1, "w1"), redisZ(2, "w2")).Err())

	census, err := New(target, Options{}).Census(ctx)
	must(t, err)
	got := byKey(t, census.Locks)
	want := map[string]Format{
		"lock:seed": FormatLockscope, "lock:reentrant": FormatLockscope, "lock:ipv6": FormatLockscope,
		"lock:forever": FormatLockscope, "lock:redsync": FormatRedsync, "lock:bsm": FormatBSM,
		"lock:uuid": FormatUUID, "lock:hex": FormatHex, "lock:opaque": FormatOpaque,
		"lock:redisson": FormatRedisson, "lock:list": FormatNotALock, "lock:set": FormatNotALock,
		"lock:zset": FormatNotALock, "lock:stream": FormatNotALock,
	}
	if len(got) != len(want) {
		t.Errorf("census has %d locks, want %d: %v", len(got), len(want), keysOf(got))
	}
	for key, f := range want {
		if got[key].Format != f {
			t.Errorf("%s: format %q, want %q (value %q)", key, got[key].Format, f, got[key].Value)
		}
	}
	if len(census.Warnings) != 0 || len(census.Missing) != 0 {
		t.Errorf("warnings %v missing %v, want none", census.Warnings, census.Missing)
	}

	s := got["lock:seed"]
	if s.Node != "api-7" || s.Trace != "req-42" || !s.AcquiredAt.Equal(acquired) || s.Reentry != 0 {
		t.Errorf("seed decoded as node=%q trace=%q at=%v reentry=%d", s.Node, s.Trace, s.AcquiredAt, s.Reentry)
	}
	if s.NoExpiry || s.TTL <= 50*time.Second || s.TTL > time.Minute {
		t.Errorf("seed ttl %v noExpiry %v, want about 1m", s.TTL, s.NoExpiry)
	}
	if !s.HasFence || s.Fence != 1764400000123456 || !s.HasWaiters || s.Waiters != 2 {
		t.Errorf("seed companions fence=%d/%v waiters=%d/%v", s.Fence, s.HasFence, s.Waiters, s.HasWaiters)
	}
	if s.Type != "string" || s.Addr != target.Addrs[0] || s.Quorum != nil {
		t.Errorf("seed type %q addr %q quorum %+v", s.Type, s.Addr, s.Quorum)
	}
	if in := s.PerInstance(); len(in) != 1 || in[0] != (Instance{Addr: s.Addr, Present: true, Value: s.Value, TTL: s.TTL}) {
		t.Errorf("seed per instance %+v", in)
	}
	if r := got["lock:reentrant"]; r.Reentry != 3 {
		t.Errorf("reentrant count %d, want 3", r.Reentry)
	}
	if v := got["lock:ipv6"]; v.Node != "fe80::1:6379" {
		t.Errorf("ipv6 node %q, want fe80::1:6379", v.Node)
	}
	if f := got["lock:forever"]; !f.NoExpiry || f.TTL != 0 {
		t.Errorf("forever: noExpiry %v ttl %v", f.NoExpiry, f.TTL)
	}
	if b := got["lock:bsm"]; b.Meta() != `{"job":7}` {
		t.Errorf("bsm metadata %q", b.Meta())
	}
	r := got["lock:redisson"]
	if r.Type != "hash" || r.Reentry != 2 || len(r.Owners) != 1 || r.Owners[0].ID != "3f2504e0-4f89-11d3-9a0c-0305e82c3301:57" || r.Node != r.Owners[0].ID {
		t.Errorf("redisson: %+v", r)
	}
	if l := got["lock:list"]; l.Type != "list" {
		t.Errorf("list type %q", l.Type)
	}
	if x := got["lock:stream"]; x.Type != "stream" {
		t.Errorf("stream type %q", x.Type)
	}
	if census.Scanned < len(want) {
		t.Errorf("scanned %d", census.Scanned)
	}
}

func TestCensusBinaryAndHugeValues(t *testing.T) {
	_, c, target := startStandalone(t)
	ctx := testCtx(t)
	huge := strings.Repeat("x", 1<<20) // 1 MiB: only ValueCap bytes may be read
	binary := "\x00\xff\x1b[31mred\n\x80"
	must(t, c.Set(ctx, "lock:huge", huge, time.Minute).Err())
	must(t, c.Set(ctx, "lock:binary", binary, time.Minute).Err())
	must(t, c.Set(ctx, "lock:exact", huge[:ValueCap], time.Minute).Err())
	bigHash := make([]any, 0, 2000)
	for i := range 1000 {
		bigHash = append(bigHash, fmt.Sprintf("f%04d-%s", i, strings.Repeat("y", 50)), i)
	}
	must(t, c.HSet(ctx, "lock:bighash", bigHash...).Err())

	census, err := New(target, Options{}).Census(ctx)
	must(t, err)
	got := byKey(t, census.Locks)
	h := got["lock:huge"]
	if len(h.Value) != ValueCap || !h.Truncated || h.Format != FormatOpaque {
		t.Errorf("huge: len %d truncated %v format %q", len(h.Value), h.Truncated, h.Format)
	}
	if e := got["lock:exact"]; len(e.Value) != ValueCap || e.Truncated {
		t.Errorf("exact cap: len %d truncated %v", len(e.Value), e.Truncated)
	}
	b := got["lock:binary"]
	if b.Value != binary || b.Format != FormatOpaque {
		t.Errorf("binary: %q %q", b.Value, b.Format)
	}
	// The value comes back as read: the outputs make it safe (present.Value pins how).
	bh := got["lock:bighash"]
	if bh.Type != "hash" || bh.Format != FormatOpaque || !bh.Truncated || len(bh.Value) > ValueCap {
		t.Errorf("big hash: type %q format %q truncated %v len %d", bh.Type, bh.Format, bh.Truncated, len(bh.Value))
	}
}
