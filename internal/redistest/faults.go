package redistest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Faults breaks the connections of go-redis clients on purpose, from the client's side, the
// way a real network does (install it with Options):
//
//   - a lost reply: the server ran the command, then the connection broke before the reply
//     arrived. go-redis sends the command again on a new connection, so the server runs it
//     twice (duplicate delivery);
//   - a lost request: the connection broke before the command reached the server;
//   - a held reply: the reply arrives late, after replies on other connections (a stalled
//     request; two requests answered in the other order than they ran);
//   - a delayed request: it is stuck on its way while later ones, on other connections,
//     overtake it;
//   - latency on every request.
//
// One-shot rules (DropReply, LoseRequest, HoldReply, DelayRequest) hit the next command that matches and
// make a fault happen exactly where a test wants it; SetRandom makes faults happen at random,
// for histories. Faults only touch commands: PING, AUTH, HELLO and pub/sub traffic pass.
type Faults struct {
	mu     sync.Mutex
	rng    *rand.Rand
	random []RandomFaults
	rules  []*faultRule
	stats  FaultStats
}

// RandomFaults says how often each fault hits a matching command (Match, default: every
// command that writes or runs a script).
type RandomFaults struct {
	LostReply   float64       // probability that the reply is lost after the server ran it
	LostRequest float64       // probability that the request never reaches the server
	HeldReply   float64       // probability that the reply is held back for up to HoldMax
	HoldMax     time.Duration // the longest a reply is held
	// Delay: every command this entry matches (and, for the first entry, every command
	// none matches) waits a uniform [0, Delay) first.
	Delay time.Duration
	Match func(cmd []string) bool
}

// FaultStats counts the faults injected so far.
type FaultStats struct {
	LostReplies, LostRequests, HeldReplies int
}

// Command matchers for rules and RandomFaults.Match; cmd[0] is the lower-case command name.

// IsScript matches EVAL, EVALSHA and FCALL.
func IsScript(cmd []string) bool { return cmd[0] == "evalsha" || cmd[0] == "eval" || cmd[0] == "fcall" }

// ScriptWithArg matches a script call one of whose arguments contains s.
func ScriptWithArg(s string) func(cmd []string) bool {
	return func(cmd []string) bool {
		if !IsScript(cmd) {
			return false
		}
		for _, a := range cmd[1:] {
			if strings.Contains(a, s) {
				return true
			}
		}
		return false
	}
}

// IsWrite matches the commands a lock library sends to change state: scripts and SET/DEL.
func IsWrite(cmd []string) bool {
	switch cmd[0] {
	case "evalsha", "eval", "fcall", "set", "del", "pexpire":
		return true
	}
	return false
}

type faultKind int

const (
	faultNone faultKind = iota
	faultLostReply
	faultLostRequest
	faultHeldReply
)

type faultRule struct {
	match func(cmd []string) bool
	kind  faultKind
	until <-chan struct{} // faultHeldReply: released when closed
	delay time.Duration   // added to the command's delay
	fired chan struct{}
}

// NewFaults makes a fault injector; seed makes its random choices repeatable.
func NewFaults(seed uint64) *Faults {
	return &Faults{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Options installs the injector on o (its Dialer); other options stay as they are.
func (f *Faults) Options(o *redis.Options) {
	d := &net.Dialer{Timeout: o.DialTimeout}
	if d.Timeout == 0 {
		d.Timeout = 5 * time.Second
	}
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &faultConn{Conn: c, f: f}, nil
	}
}

// SetRandom replaces the random faults (none, or the zero value, turns them off). A command
// gets the faults of the first of rs whose Match matches it, and waits its Delay (the first
// one's when none matches), so that some commands can fail more often than others.
func (f *Faults) SetRandom(rs ...RandomFaults) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.random = rs
}

// DropReply loses the reply of the next command matching match after the server ran it; the
// connection is closed, so go-redis runs it again. The returned channel closes once it happened.
func (f *Faults) DropReply(match func(cmd []string) bool) <-chan struct{} {
	return f.add(&faultRule{match: match, kind: faultLostReply})
}

// LoseRequest makes the next command matching match never reach the server; the connection
// is closed.
func (f *Faults) LoseRequest(match func(cmd []string) bool) <-chan struct{} {
	return f.add(&faultRule{match: match, kind: faultLostRequest})
}

// DelayRequest delays the next command matching match by d on its way to the server (a
// request stuck in the network while later ones, on other connections, overtake it).
func (f *Faults) DelayRequest(match func(cmd []string) bool, d time.Duration) <-chan struct{} {
	return f.add(&faultRule{match: match, kind: faultNone, delay: d})
}

// HoldReply holds the reply of the next command matching match until until is closed (the
// server has run the command; the client does not hear of it).
func (f *Faults) HoldReply(match func(cmd []string) bool, until <-chan struct{}) <-chan struct{} {
	return f.add(&faultRule{match: match, kind: faultHeldReply, until: until})
}

// Stats reports the faults injected so far.
func (f *Faults) Stats() FaultStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *Faults) add(r *faultRule) <-chan struct{} {
	r.fired = make(chan struct{})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, r)
	return r.fired
}

// decide picks what happens to one command, and the delay before it is written.
func (f *Faults) decide(cmd []string) (faultKind, <-chan struct{}, time.Duration, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var random RandomFaults
	matched := false
	for _, r := range f.random {
		match := r.Match
		if match == nil {
			match = IsWrite
		}
		if match(cmd) {
			random, matched = r, true
			break
		}
	}
	if !matched && len(f.random) > 0 {
		random = f.random[0] // for its Delay only
	}
	var delay time.Duration
	if random.Delay > 0 {
		delay = time.Duration(f.rng.Int64N(int64(random.Delay)))
	}
	for i, r := range f.rules {
		if r.match(cmd) {
			f.rules = append(f.rules[:i:i], f.rules[i+1:]...)
			f.count(r.kind)
			close(r.fired)
			return r.kind, r.until, delay + r.delay, 0
		}
	}
	if !matched {
		return faultNone, nil, delay, 0
	}
	switch p := f.rng.Float64(); {
	case p < random.LostReply:
		f.count(faultLostReply)
		return faultLostReply, nil, delay, 0
	case p < random.LostReply+random.LostRequest:
		f.count(faultLostRequest)
		return faultLostRequest, nil, delay, 0
	case p < random.LostReply+random.LostRequest+random.HeldReply && random.HoldMax > 0:
		f.count(faultHeldReply)
		return faultHeldReply, nil, delay, time.Duration(f.rng.Int64N(int64(random.HoldMax)))
	}
	return faultNone, nil, delay, 0
}

func (f *Faults) count(k faultKind) {
	switch k {
	case faultLostReply:
		f.stats.LostReplies++
	case faultLostRequest:
		f.stats.LostRequests++
	case faultHeldReply:
		f.stats.HeldReplies++
	}
}

// errInjected is what a broken connection reports: io.EOF, which go-redis retries, as it
// would a connection the server or the network closed.
var errInjected = io.EOF

// faultConn is one connection with the faults decided for the commands written on it. go-redis
// writes a command (or a pipeline) and then reads its replies before it writes again, so the
// fault of the last write applies to the next read.
type faultConn struct {
	net.Conn
	f *Faults

	mu       sync.Mutex
	partial  []byte // the start of a command whose end is in a later write
	next     faultKind
	until    <-chan struct{}
	hold     time.Duration
	deadline time.Time // the read deadline go-redis set: a held reply times out at it too
	closed   chan struct{}
	once     sync.Once
}

func (c *faultConn) SetDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *faultConn) SetReadDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *faultConn) setReadDeadline(t time.Time) {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
}

// waitHeld waits until a held reply may be read: until closes (or hold passes), the read
// deadline passes (a timeout, as the socket would report), or the connection closes.
func (c *faultConn) waitHeld(until <-chan struct{}, hold time.Duration) error {
	c.mu.Lock()
	deadline := c.deadline
	c.mu.Unlock()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	var held <-chan time.Time // a random hold; a nil until then never fires
	if until == nil {
		t := time.NewTimer(hold)
		defer t.Stop()
		held = t.C
	}
	select {
	case <-until:
		return nil
	case <-held:
		return nil
	case <-timeout:
		return os.ErrDeadlineExceeded
	case <-c.closedCh():
		return net.ErrClosed
	}
}

func (c *faultConn) closedCh() chan struct{} {
	c.once.Do(func() { c.closed = make(chan struct{}) })
	return c.closed
}

func (c *faultConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.partial = append(c.partial, b...)
	cmds, rest := parseCommands(c.partial)
	c.partial = append(c.partial[:0], rest...)
	c.mu.Unlock()
	kind, until, delay, hold := faultNone, (<-chan struct{})(nil), time.Duration(0), time.Duration(0)
	for _, cmd := range cmds {
		k, u, d, h := c.f.decide(cmd)
		delay = max(delay, d)
		if k != faultNone && kind == faultNone {
			kind, until, hold = k, u, h
		}
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	if kind == faultLostRequest {
		_ = c.Close()
		return 0, errInjected
	}
	c.mu.Lock()
	if kind != faultNone {
		c.next, c.until, c.hold = kind, until, hold
	}
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *faultConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	kind, until, hold := c.next, c.until, c.hold
	c.next, c.until, c.hold = faultNone, nil, 0
	c.mu.Unlock()
	switch kind {
	case faultLostReply:
		// Wait for the first byte of the reply (within the read deadline go-redis set): the
		// server has run the command. Then the reply is lost with the connection.
		var one [1]byte
		if _, err := io.ReadFull(c.Conn, one[:]); err != nil {
			_ = c.Close()
			return 0, err // a timeout stays a timeout
		}
		_ = c.Close()
		return 0, errInjected
	case faultHeldReply:
		if err := c.waitHeld(until, hold); err != nil {
			// The reply stays held: the next read, if any, waits for it again.
			c.mu.Lock()
			c.next, c.until, c.hold = kind, until, hold
			c.mu.Unlock()
			return 0, err
		}
	}
	return c.Conn.Read(p)
}

func (c *faultConn) Close() error {
	ch := c.closedCh()
	c.mu.Lock()
	select {
	case <-ch:
	default:
		close(ch)
	}
	c.mu.Unlock()
	return c.Conn.Close()
}

// parseCommands splits RESP arrays of bulk strings (what go-redis writes) into commands, the
// name lower-cased, and returns the bytes of an incomplete last command.
func parseCommands(b []byte) ([][]string, []byte) {
	var cmds [][]string
	for len(b) > 0 {
		cmd, n, ok := parseCommand(b)
		if !ok {
			return cmds, b
		}
		if n < 0 { // not RESP: nothing to decide on
			return cmds, nil
		}
		cmds = append(cmds, cmd)
		b = b[n:]
	}
	return cmds, nil
}

// parseCommand reads one command: ok false when b holds only part of it, n -1 when b is not
// an array of bulk strings.
func parseCommand(b []byte) (cmd []string, n int, ok bool) {
	count, i, ok := respInt(b, '*')
	if !ok {
		return nil, 0, false
	}
	if i < 0 || count < 1 {
		return nil, -1, true
	}
	pos := i
	for range count {
		size, j, ok := respInt(b[pos:], '$')
		if !ok {
			return nil, 0, false
		}
		if j < 0 || size < 0 {
			return nil, -1, true
		}
		start := pos + j
		if len(b) < start+size+2 {
			return nil, 0, false
		}
		cmd = append(cmd, string(b[start:start+size]))
		pos = start + size + 2
	}
	cmd[0] = strings.ToLower(cmd[0])
	return cmd, pos, true
}

// respInt reads "<prefix><digits>\r\n": the number and the bytes read (-1 when b does not
// start with prefix), ok false when the line is not complete yet.
func respInt(b []byte, prefix byte) (int, int, bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	if b[0] != prefix {
		return 0, -1, true
	}
	end := bytes.Index(b, []byte("\r\n"))
	if end < 0 {
		return 0, 0, false
	}
	v, err := strconv.Atoi(string(b[1:end]))
	if err != nil {
		return 0, -1, true
	}
	return v, end + 2, true
}

// ErrInjected reports whether err is what an injected fault returns.
func ErrInjected(err error) bool { return errors.Is(err, errInjected) }
