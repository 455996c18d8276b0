package connect

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// URL schemes of a Sentinel deployment: redis+sentinel://[user:pass@]h1:p1,h2:p2/NAME[/db]
// names the sentinels and the master they monitor; the userinfo is the master's.
const (
	schemeSentinel    = "redis+sentinel"
	schemeSentinelTLS = "rediss+sentinel"
	// defaultSentinelPort is the port of a sentinel address given without one.
	defaultSentinelPort = "26379"
	// switchChannel is where every sentinel announces a failover:
	// "<name> <old ip> <old port> <new ip> <new port>".
	switchChannel = "+switch-master"
)

// MasterSwitch is one failover seen by the sentinels: the master moved From -> To.
type MasterSwitch struct {
	Name, From, To string
	At             time.Time // when lockscope heard of it
}

// sentinelState is what every copy of a Sentinel target shares: the options to reach the
// sentinels (and to copy the failover client), and the master last seen.
type sentinelState struct {
	opts *redis.FailoverOptions
	// client are the failover client's options: opts with the sentinels that answered Open
	// first (see openSentinel); what Dialer copies.
	client *redis.FailoverOptions

	mu     sync.Mutex
	master string
}

func (s *sentinelState) lastMaster() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.master
}

func (s *sentinelState) setMaster(addr string) {
	s.mu.Lock()
	s.master = addr
	s.mu.Unlock()
}

// IsSentinelURL reports whether raw is a redis+sentinel:// or rediss+sentinel:// URL: one
// that names sentinels and the master they monitor.
func IsSentinelURL(raw string) bool {
	scheme, _, _ := strings.Cut(raw, "://")
	scheme = strings.ToLower(scheme)
	return scheme == schemeSentinel || scheme == schemeSentinelTLS
}

// wantsSentinel: cfg names a Sentinel deployment (the mode, a master name or a sentinel URL).
func wantsSentinel(cfg Config) bool {
	return cfg.Mode == Sentinel || cfg.SentinelMaster != "" || slices.ContainsFunc(cfg.URLs, IsSentinelURL)
}

// sentinelURL is what one URL of a Sentinel deployment says.
type sentinelURL struct {
	addrs               []string
	name                string // "" unless a redis+sentinel:// path names it
	user, password      string // the master's
	db                  int
	tls                 bool
	sentinelUser        string
	sentinelPassword    string
	hasSentinelUser     bool
	hasSentinelPassword bool
}

// parseSentinelURL reads redis+sentinel://, rediss+sentinel://, or (with --sentinel-master)
// a redis:// or rediss:// URL naming sentinels.
func parseSentinelURL(raw string, known secrets) (sentinelURL, error) {
	bad := badURL(raw, known)
	hosts, rest := cutHosts(raw)
	u, err := url.Parse(rest)
	if err != nil {
		return sentinelURL{}, bad("%v", withoutURL(err))
	}
	var out sentinelURL
	segments := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(segments) == 1 && segments[0] == "" {
		segments = nil
	}
	switch strings.ToLower(u.Scheme) {
	case schemeSentinel, schemeSentinelTLS:
		out.tls = strings.ToLower(u.Scheme) == schemeSentinelTLS
		if len(segments) == 0 || segments[0] == "" {
			return sentinelURL{}, bad("no master name: want %s://host:port[,host:port...]/NAME[/db]", schemeSentinel)
		}
		out.name, segments = segments[0], segments[1:]
	case "redis", "rediss":
		out.tls = u.Scheme == "rediss"
	default:
		return sentinelURL{}, bad("scheme %q: the sentinels are reached with redis://, rediss://, %s:// or %s://",
			u.Scheme, schemeSentinel, schemeSentinelTLS)
	}
	switch len(segments) {
	case 0:
	case 1:
		if out.db, err = strconv.Atoi(segments[0]); err != nil || out.db < 0 {
			return sentinelURL{}, bad("database %q is not a number", segments[0])
		}
	default:
		return sentinelURL{}, bad("path %q: want /NAME[/db] (%s://) or /db", u.Path, schemeSentinel)
	}
	if hosts == "" {
		return sentinelURL{}, bad("no sentinel address")
	}
	for _, hp := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			host, port = hp, defaultSentinelPort
			if inner, ok := strings.CutPrefix(hp, "["); ok { // [::1] without a port
				host, _ = strings.CutSuffix(inner, "]")
			}
		}
		if host == "" || !validPort(port) {
			return sentinelURL{}, bad("sentinel address %q: want host:port", hp)
		}
		out.addrs = append(out.addrs, net.JoinHostPort(host, port))
	}
	if u.User != nil {
		out.user = u.User.Username()
		out.password, _ = u.User.Password()
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil { // u.Query() would drop the pair, sentinel_password= and all, silently
		return sentinelURL{}, bad("the query does not parse (a bad %%-escape or a ;)")
	}
	for key := range q {
		switch key {
		case "sentinel_username":
			out.sentinelUser, out.hasSentinelUser = q.Get(key), true
		case "sentinel_password":
			out.sentinelPassword, out.hasSentinelPassword = q.Get(key), true
		default:
			return sentinelURL{}, bad("unknown parameter %q (a Sentinel URL takes sentinel_username= and sentinel_password=)", key)
		}
	}
	return out, nil
}

// cutHosts takes the host list ("h1:p1,h2:p2", which url.Parse refuses) out of raw, and
// returns raw with one placeholder host in its place.
func cutHosts(raw string) (hosts, rest string) {
	start := strings.Index(raw, "://")
	if start < 0 {
		return "", raw
	}
	start += 3
	end := len(raw)
	if i := strings.IndexAny(raw[start:], "/?#"); i >= 0 {
		end = start + i
	}
	authority := raw[start:end]
	at := strings.LastIndex(authority, "@")
	return authority[at+1:], raw[:start] + authority[:at+1] + "sentinels" + raw[end:]
}

// sentinelOptions makes the failover client's options from cfg: every URL's sentinels, the
// master name (--sentinel-master or the URL's), the master's credentials from the URLs' userinfo
// (else Password), the sentinels' from the URL's query (else SentinelUser, SentinelPassword).
func sentinelOptions(cfg Config, tlsConf *tls.Config, known secrets) (*redis.FailoverOptions, error) {
	if cfg.Mode != Standalone && cfg.Mode != Sentinel {
		flag := map[Mode]string{Cluster: "--cluster", Redlock: "--redlock", Independent: "--independent"}[cfg.Mode]
		return nil, &Error{Kind: ErrBadConfig, msg: fmt.Sprintf("--sentinel-master (or a %s:// URL) with %s: "+
			"a Sentinel deployment is one master behind its sentinels; give one of them", schemeSentinel, flag)}
	}
	if len(cfg.URLs) == 0 {
		return nil, &Error{Kind: ErrBadConfig, msg: "no --redis URL: name the sentinels"}
	}
	var first sentinelURL
	fo := &redis.FailoverOptions{MasterName: cfg.SentinelMaster}
	for i, raw := range cfg.URLs {
		su, err := parseSentinelURL(raw, known)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			first = su
		} else if su.user != first.user || su.password != first.password || su.db != first.db || su.tls != first.tls ||
			su.sentinelUser != first.sentinelUser || su.sentinelPassword != first.sentinelPassword {
			return nil, &Error{Kind: ErrBadConfig, msg: known.redact(fmt.Sprintf("--redis %s has another user, password, "+
				"database or TLS setting than %s: every sentinel and the master are reached with the first URL's",
				redactURL(raw, known), redactURL(cfg.URLs[0], known)))}
		}
		if su.name != "" && fo.MasterName != "" && su.name != fo.MasterName {
			return nil, &Error{Kind: ErrBadConfig, msg: fmt.Sprintf("two master names: %q and %q (--sentinel-master or the %s:// path): give one",
				fo.MasterName, su.name, schemeSentinel)}
		}
		if su.name != "" {
			fo.MasterName = su.name
		}
		for _, a := range su.addrs {
			if !slices.Contains(fo.SentinelAddrs, a) {
				fo.SentinelAddrs = append(fo.SentinelAddrs, a)
			}
		}
	}
	if fo.MasterName == "" {
		return nil, &Error{Kind: ErrBadConfig, msg: fmt.Sprintf("no master name: give --sentinel-master NAME, or a %s://host:port/NAME URL", schemeSentinel)}
	}
	fo.Username, fo.Password, fo.DB = first.user, first.password, first.db
	if fo.Password == "" {
		fo.Password = cfg.Password
	}
	fo.SentinelUsername, fo.SentinelPassword = cfg.SentinelUser, cfg.SentinelPassword
	if first.hasSentinelUser {
		fo.SentinelUsername = first.sentinelUser
	}
	if first.hasSentinelPassword {
		fo.SentinelPassword = first.sentinelPassword
	}
	if tlsConf == nil && first.tls {
		tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	// No ServerName: one config serves every sentinel and the master, and go-redis dials
	// them with tls.DialWithDialer, which checks each certificate against its own host.
	fo.TLSConfig = tlsConf
	fo.DialTimeout, fo.ReadTimeout, fo.WriteTimeout = dialTimeout, ioTimeout, ioTimeout
	fo.MaxRetries, fo.DialerRetries = 1, dialRetries
	fo.OnConnect = nameConnection
	return fo, nil
}

// openSentinel opens a Sentinel target: it asks the sentinels for the master (so that a
// sentinel that is none, a master name they do not monitor or the sentinels' own credentials
// are reported as such), then connects to it through go-redis' failover client.
func openSentinel(ctx context.Context, cfg Config, tlsConf *tls.Config, known secrets) (Target, error) {
	fo, err := sentinelOptions(cfg, tlsConf, known)
	if err != nil {
		return Target{}, err
	}
	t := Target{Mode: Sentinel, Addrs: fo.SentinelAddrs, secrets: known, tls: fo.TLSConfig != nil,
		sentinel: &sentinelState{opts: fo}}
	master, named, err := t.askMaster(ctx)
	if err != nil {
		return Target{}, err
	}
	// The failover client's first lookup asks its sentinels in parallel and waits for every
	// one: given a frozen sentinel it would wait out that one's timeouts, and the ping below
	// fail. It starts with the sentinels that answered; it learns the others from them
	// (SENTINEL SENTINELS) for later lookups.
	first := *fo
	first.SentinelAddrs = named
	t.sentinel.client = &first
	t.Clients = []redis.UniversalClient{redis.NewFailoverClient(&first)}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := t.Clients[0].Ping(pctx).Err(); err != nil && !redis.IsPermissionError(err) {
		t.Close()
		return Target{}, t.classifyAt(err, "the master "+master+" (sentinel "+fo.MasterName+")")
	}
	return t, nil
}

// SentinelMaster is the name of the master the sentinels monitor; "" unless Mode is Sentinel.
func (t Target) SentinelMaster() string {
	if t.sentinel == nil {
		return ""
	}
	return t.sentinel.opts.MasterName
}

// sentinelAnswer is one sentinel's answer to GET-MASTER-ADDR-BY-NAME.
type sentinelAnswer struct {
	i      int    // the sentinel's place in the target's Addrs
	addr   string // the sentinel's
	master string // "" when it did not name one
	err    error
}

// askSentinels asks every sentinel for the master's address, in parallel, and sends each
// answer as it comes. Ending ctx closes the connections still waiting (go-redis does not end
// a blocked read when its context ends), so a frozen sentinel holds no caller back.
func (s *sentinelState) askSentinels(ctx context.Context, addrs []string) <-chan sentinelAnswer {
	out := make(chan sentinelAnswer, len(addrs))
	for i, addr := range addrs {
		go func() {
			c := s.sentinelClient(addr)
			stop := context.AfterFunc(ctx, func() { _ = c.Close() })
			defer func() {
				if stop() {
					_ = c.Close()
				}
			}()
			qctx, cancel := context.WithTimeout(ctx, pingTimeout)
			defer cancel()
			a := sentinelAnswer{i: i, addr: addr}
			hp, err := c.GetMasterAddrByName(qctx, s.opts.MasterName).Result()
			switch {
			case err != nil:
				a.err = err
			case len(hp) == 2:
				a.master = net.JoinHostPort(hp[0], hp[1])
			default:
				a.err = fmt.Errorf("unexpected reply %q", hp)
			}
			out <- a
		}()
	}
	return out
}

// sentinelClient is a connection to one sentinel with the sentinels' credentials.
func (s *sentinelState) sentinelClient(addr string) *redis.SentinelClient {
	o := s.opts
	return redis.NewSentinelClient(&redis.Options{Addr: addr, Username: o.SentinelUsername, Password: o.SentinelPassword,
		TLSConfig: o.TLSConfig, DialTimeout: dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout,
		MaxRetries: -1, DialerRetries: dialRetries, OnConnect: nameConnection})
}

// Master is the master's address now, as most answering sentinels name it (one that has
// not yet heard of a failover names the old one). It returns once most of the sentinels
// agree, without waiting for the others (a frozen or cut-off sentinel answers only when its
// timeout ends). Its error is classified: no sentinel answers (ErrUnreachable), an address
// that is no sentinel or a master name they do not monitor (ErrBadConfig), the sentinels'
// own credentials refused (ErrAuth).
func (t Target) Master(ctx context.Context) (string, error) {
	master, _, err := t.askMaster(ctx)
	return master, err
}

// askMaster is Master, and the sentinels that named the master, in Addrs order.
func (t Target) askMaster(ctx context.Context) (string, []string, error) {
	if t.sentinel == nil {
		return "", nil, &Error{Kind: ErrBadConfig, msg: "not a Sentinel target: no master to ask the sentinels for"}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the sentinels not heard from yet are not waited for
	ch := t.sentinel.askSentinels(ctx, t.Addrs)
	answers := make([]sentinelAnswer, len(t.Addrs))
	votes := map[string]int{}
	for range t.Addrs {
		a := <-ch
		answers[a.i] = a
		if a.master != "" {
			if votes[a.master]++; 2*votes[a.master] > len(t.Addrs) {
				break
			}
		}
	}
	best := ""
	var named []string
	for _, a := range answers { // ties: the first sentinel's
		if a.master != "" && (best == "" || votes[a.master] > votes[best]) {
			best = a.master
		}
	}
	if best == "" {
		return "", nil, t.sentinelError(answers)
	}
	for _, a := range answers {
		if a.master == best {
			named = append(named, a.addr)
		}
	}
	t.sentinel.setMaster(best)
	return best, named, nil
}

// sentinelError says why no sentinel named the master, the most telling answer first: the
// sentinels' credentials, an address that is no sentinel, a name they do not monitor, a
// missing permission, and only then sentinels that cannot be reached.
func (t Target) sentinelError(answers []sentinelAnswer) error {
	name := t.sentinel.opts.MasterName
	byRank := func(match func(error, string) bool) (sentinelAnswer, bool) {
		for _, a := range answers {
			if a.err != nil && match(a.err, t.Redact(a.err.Error())) {
				return a, true
			}
		}
		return sentinelAnswer{}, false
	}
	if a, ok := byRank(isAuthFailure); ok {
		return &Error{Kind: ErrAuth, err: a.err, msg: fmt.Sprintf("authentication failed at sentinel %s: %s (the sentinels' user and "+
			"password are --sentinel-user and $LOCKSCOPE_SENTINEL_PASSWORD, or sentinel_username= and sentinel_password= in the URL; "+
			"the URL's own are the master's)", a.addr, t.Redact(a.err.Error()))}
	}
	if a, ok := byRank(func(_ error, msg string) bool { return strings.Contains(strings.ToLower(msg), "unknown command") }); ok {
		return &Error{Kind: ErrBadConfig, err: a.err, msg: fmt.Sprintf("%s is not a sentinel (%s): with --sentinel-master the --redis URLs "+
			"name the sentinels (port %s by default), not the master", a.addr, t.Redact(a.err.Error()), defaultSentinelPort)}
	}
	if a, ok := byRank(func(err error, _ string) bool { return errors.Is(err, redis.Nil) }); ok {
		return &Error{Kind: ErrBadConfig, err: a.err, msg: fmt.Sprintf("the sentinel at %s monitors no master named %q: "+
			"check --sentinel-master (SENTINEL MASTERS lists the names)", a.addr, name)}
	}
	if a, ok := byRank(func(_ error, msg string) bool { return strings.Contains(msg, "NOPERM") }); ok {
		return t.classifyAt(a.err, "sentinel "+a.addr)
	}
	if len(answers) == 0 {
		return &Error{Kind: ErrBadConfig, msg: "no sentinel address"}
	}
	a := answers[0]
	return &Error{Kind: ErrUnreachable, err: a.err, msg: fmt.Sprintf("no sentinel answers (%s): %s%s",
		strings.Join(t.Addrs, ", "), t.Redact(a.err.Error()), t.tlsHint(a.err))}
}

// FollowMaster subscribes to +switch-master on every sentinel and sends each failover of
// the target's master once, From the master last seen (see switchFilter: every sentinel
// announces the same switch, some late). A sentinel whose connection breaks is subscribed to
// again, and then asked who is master, so a switch missed meanwhile is still sent. The
// channel is closed when ctx ends; it is closed at once on a target that is not Sentinel.
func (t Target) FollowMaster(ctx context.Context) <-chan MasterSwitch {
	out := make(chan MasterSwitch, 8)
	if t.sentinel == nil {
		close(out)
		return out
	}
	heard := make(chan MasterSwitch)
	var wg sync.WaitGroup
	for _, addr := range t.Addrs {
		wg.Go(func() { t.listenSwitches(ctx, addr, heard) })
	}
	go func() { wg.Wait(); close(heard) }()
	go func() {
		defer close(out)
		f := switchFilter{last: t.sentinel.lastMaster(), left: map[string]bool{}}
		for sw := range heard {
			sw, ok := f.accept(sw)
			if !ok {
				continue
			}
			t.sentinel.setMaster(sw.To)
			select {
			case out <- sw:
			case <-ctx.Done():
			}
		}
	}()
	return out
}

// switchFilter turns what the sentinels announce into each failover once.
type switchFilter struct {
	last string          // the master as last sent ("" before any is known)
	left map[string]bool // masters switched away from
}

// accept says whether sw is a failover not sent yet, and gives it with From the master last
// sent. Every sentinel announces the same switch: one to the master already known is a
// repeat. A sentinel that was still busy with the previous failover announces a stale From;
// with a To that is a master already left, it is that previous failover, late. A resync
// (From "": the master the sentinels name after a reconnect) is a switch when it names
// another master.
func (f *switchFilter) accept(sw MasterSwitch) (MasterSwitch, bool) {
	if sw.To == f.last || (sw.From != "" && sw.From != f.last && f.left[sw.To]) {
		return sw, false
	}
	sw.From = f.last
	if f.last != "" {
		f.left[f.last] = true
	}
	delete(f.left, sw.To)
	f.last = sw.To
	return sw, true
}

// Pauses of a sentinel subscription: between attempts to reach a sentinel that is down, and
// the read timeout after which the connection is checked with a PING (a frozen sentinel
// sends no error).
const (
	sentinelRetry     = 200 * time.Millisecond
	sentinelReadCheck = 15 * time.Second
)

// listenSwitches sends what one sentinel announces on +switch-master to heard until ctx ends.
func (t Target) listenSwitches(ctx context.Context, addr string, heard chan<- MasterSwitch) {
	c := t.sentinel.sentinelClient(addr)
	defer c.Close()
	sub := c.Subscribe(ctx, switchChannel)
	// go-redis does not end a blocked read when ctx ends: closing the subscription does.
	stop := context.AfterFunc(ctx, func() { _ = sub.Close() })
	defer func() {
		if stop() {
			_ = sub.Close()
		}
	}()
	subscribed, broke := false, false
	send := func(sw MasterSwitch) {
		select {
		case heard <- sw:
		case <-ctx.Done():
		}
	}
	for ctx.Err() == nil {
		msg, err := sub.ReceiveTimeout(ctx, sentinelReadCheck)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = sub.Ping(ctx) // a dead connection fails here and is made again
				continue
			}
			broke = true
			sleepCtx(ctx, sentinelRetry)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if subscribed && broke {
				// Subscribed again: a switch may have been announced while the line was down.
				if master, err := t.Master(ctx); err == nil {
					send(MasterSwitch{Name: t.SentinelMaster(), To: master, At: time.Now()})
				}
			}
			subscribed, broke = true, false
		case *redis.Message:
			if sw, ok := parseSwitch(m.Payload); ok && sw.Name == t.SentinelMaster() {
				sw.At = time.Now()
				send(sw)
			}
		}
	}
}

// parseSwitch reads "<name> <old ip> <old port> <new ip> <new port>".
func parseSwitch(payload string) (MasterSwitch, bool) {
	f := strings.Fields(payload)
	if len(f) != 5 {
		return MasterSwitch{}, false
	}
	return MasterSwitch{Name: f[0], From: net.JoinHostPort(f[1], f[2]), To: net.JoinHostPort(f[3], f[4])}, true
}

func sleepCtx(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}
