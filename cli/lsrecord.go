package cli

import (
	"encoding/binary"
	"time"

	"github.com/lockscope/lockscope/scanner"
)

// lockRecords keep, in large blocks, what a lock's JSON line is rendered from, until the order
// is known: a third of the rendered line (no field names, no value written twice, numbers as
// varints, servers' addresses and formats once per census).
type lockRecords struct {
	blocks [][]byte // the records, each after its length, in blocks of arenaBlock bytes
	names  []string // the addresses and formats the records refer to by index
	// shared are the records' shared primitives (scanner.Shared), which a record refers to by
	// index: few locks have one, and its holders would not fit the compact form.
	shared []*scanner.Shared
	index  map[string]int // names' indexes
	buf    []byte
}

// recordRef is where a record is: its block's index in the high 32 bits, its offset in the
// low ones. Eight bytes a lock where a slice of the record would take 24, and no pointer for
// the collector to follow.
type recordRef uint64

// Record flags.
const (
	recNoExpiry = 1 << iota
	recGone
	recHasFence
	recAcquired // AcquiredAt is known
	recQuorum   // a Redlock target: its instances follow
	recShared   // a shared primitive: its index in lockRecords.shared follows
)

// Instance flags, in a Redlock record.
const (
	instPresent = 1 << iota
	instMissing
	instNoExpiry
)

func newLockRecords() *lockRecords { return &lockRecords{index: map[string]int{}} }

// keep records the fields of l that its JSON line shows.
func (r *lockRecords) keep(l *scanner.Lock) recordRef {
	b := r.buf[:0]
	flags := byte(0)
	if l.NoExpiry {
		flags |= recNoExpiry
	}
	if l.Gone {
		flags |= recGone
	}
	if l.HasFence {
		flags |= recHasFence
	}
	if !l.AcquiredAt.IsZero() {
		flags |= recAcquired
	}
	if l.Quorum != nil {
		flags |= recQuorum
	}
	if l.Shared != nil {
		flags |= recShared
	}
	b = append(b, flags)
	b = appendRecString(b, l.Key)
	b = binary.AppendUvarint(b, uint64(r.name(string(l.Format))))
	b = appendRecString(b, l.Node)
	b = appendRecString(b, l.Trace)
	if flags&recAcquired != 0 {
		b = appendRecTime(b, l.AcquiredAt)
	}
	b = appendRecTime(b, l.FetchedAt)
	b = binary.AppendVarint(b, int64(l.TTL))
	b = binary.AppendVarint(b, int64(l.Reentry))
	if l.HasFence {
		b = binary.AppendVarint(b, l.Fence)
	}
	b = appendRecString(b, l.Value)
	if l.Shared != nil {
		b = binary.AppendUvarint(b, uint64(len(r.shared)))
		r.shared = append(r.shared, l.Shared)
	}
	if l.Quorum == nil {
		b = binary.AppendUvarint(b, uint64(r.name(l.Addr)))
	} else {
		b = binary.AppendUvarint(b, uint64(len(l.Quorum.Instances)))
		for _, in := range l.Quorum.Instances {
			b = binary.AppendUvarint(b, uint64(r.name(in.Addr)))
			iflags := byte(0)
			if in.Present {
				iflags |= instPresent
			}
			if in.Missing {
				iflags |= instMissing
			}
			if in.NoExpiry {
				iflags |= instNoExpiry
			}
			b = append(b, iflags)
			b = binary.AppendVarint(b, int64(in.TTL))
			b = appendRecString(b, in.Value)
		}
	}
	r.buf = b
	need := binary.MaxVarintLen64 + len(b)
	if len(r.blocks) == 0 || cap(r.blocks[len(r.blocks)-1])-len(r.blocks[len(r.blocks)-1]) < need {
		r.blocks = append(r.blocks, make([]byte, 0, max(arenaBlock, need)))
	}
	last := &r.blocks[len(r.blocks)-1]
	ref := recordRef(len(r.blocks)-1)<<32 | recordRef(len(*last))
	*last = binary.AppendUvarint(*last, uint64(len(b)))
	*last = append(*last, b...)
	return ref
}

// name is s's index in names.
func (r *lockRecords) name(s string) int {
	i, ok := r.index[s]
	if !ok {
		i = len(r.names)
		r.names = append(r.names, s)
		r.index[s] = i
	}
	return i
}

func appendRecString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendRecTime keeps t's instant (seconds and nanoseconds: UnixNano would overflow for a
// value that claims a far year); the JSON shows it in UTC.
func appendRecTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// record is a copy of the record at ref. Read in the order of the output, records are met in
// no order of memory: reading one is a few cache misses, taken where they overlap other work
// (sorted JSON: in the goroutine that merges, while the other renders from the copies).
func (r *lockRecords) record(ref recordRef) string {
	block := r.blocks[ref>>32][ref&(1<<32-1):]
	length, size := binary.Uvarint(block)
	return string(block[size : size+int(length)])
}

// lock is the lock of record rec, as much of it as its JSON line shows; its strings are
// pieces of rec. instances is reused from call to call for a Redlock target's.
func (r *lockRecords) lock(rec string, instances []scanner.Instance) scanner.Lock {
	d := recDecoder{s: rec}
	flags := d.byte()
	l := scanner.Lock{
		Key:      d.string(),
		Format:   scanner.Format(r.names[d.uvarint()]),
		Node:     d.string(),
		Trace:    d.string(),
		NoExpiry: flags&recNoExpiry != 0,
		Gone:     flags&recGone != 0,
		HasFence: flags&recHasFence != 0,
	}
	if flags&recAcquired != 0 {
		l.AcquiredAt = d.time()
	}
	l.FetchedAt = d.time()
	l.TTL = time.Duration(d.varint())
	l.Reentry = int(d.varint())
	if l.HasFence {
		l.Fence = d.varint()
	}
	l.Value = d.string()
	if flags&recShared != 0 {
		l.Shared = r.shared[d.uvarint()]
	}
	if flags&recQuorum == 0 {
		l.Addr = r.names[d.uvarint()]
		return l
	}
	n := int(d.uvarint())
	instances = instances[:0]
	for range n {
		in := scanner.Instance{Addr: r.names[d.uvarint()]}
		iflags := d.byte()
		in.Present, in.Missing, in.NoExpiry = iflags&instPresent != 0, iflags&instMissing != 0, iflags&instNoExpiry != 0
		in.TTL = time.Duration(d.varint())
		in.Value = d.string()
		instances = append(instances, in)
	}
	l.Quorum = &scanner.Quorum{Instances: instances}
	return l
}

// recDecoder reads a record back, field by field, in the order keep wrote them.
type recDecoder struct {
	s string
	i int
}

func (d *recDecoder) byte() byte {
	c := d.s[d.i]
	d.i++
	return c
}

func (d *recDecoder) uvarint() uint64 {
	var x uint64
	for shift := 0; ; shift += 7 {
		c := d.byte()
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
}

func (d *recDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1) // zigzag, as binary.AppendVarint writes it
}

func (d *recDecoder) string() string {
	n := int(d.uvarint())
	s := d.s[d.i : d.i+n]
	d.i += n
	return s
}

func (d *recDecoder) time() time.Time {
	sec := d.varint()
	return time.Unix(sec, int64(d.uvarint()))
}
