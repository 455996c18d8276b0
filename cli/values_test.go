package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/internal/redistest"
)

// TestCLITakesBackWhatItPrints (issue 14, point 1): a binary key and a value with a NUL byte,
// and a Redisson hash lock, as ls --json prints them, are taken back verbatim by show, extend
// --expect and release --expect; a literal backslash is `\\`; a bad escape is a usage error.
func TestCLITakesBackWhatItPrints(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	url := redisURL(s.Addr)
	const binKey, binValue, slashKey = "lock:bin:\xff\xfe", "holder\x00\xff\"x\\y", `lock:a\b`
	for key, value := range map[string]string{binKey: binValue, slashKey: "v"} {
		if err := c.Set(t.Context(), key, value, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}

	if err := c.HSet(t.Context(), "lock:redisson", redisson, "2").Err(); err != nil {
		t.Fatal(err)
	}
	c.Expire(t.Context(), "lock:redisson", time.Minute)

	r := runCLI(t, cliOpts{}, "ls", "--json", "--redis", url)
	expectExit(t, r, exitOK)
	printed := map[string]string{} // key as printed -> value as printed
	for _, obj := range jsonLines(t, r.stdout) {
		printed[obj["key"].(string)] = obj["value"].(string)
	}
	printedKey, printedValue := `lock:bin:\xff\xfe`, `holder\x00\xff"x\\y`
	if printed[printedKey] != printedValue || printed[`lock:a\\b`] != "v" {
		t.Fatalf("ls --json printed %q, want %q: %q and %q: v", printed, printedKey, printedValue, `lock:a\\b`)
	}
	r = runCLI(t, cliOpts{}, "ls", "--redis", url)
	if !strings.Contains(r.stdout, printedKey) || !strings.Contains(r.stdout, `lock:a\\b`) {
		t.Errorf("the table does not print the keys as ls --json does:\n%s", r)
	}

	r = runCLI(t, cliOpts{}, "show", printedKey, "--redis", url)
	expectExit(t, r, exitOK)
	r = runCLI(t, cliOpts{}, "show", `lock:a\\b`, "--json", "--redis", url)
	expectExit(t, r, exitOK)
	if obj := jsonLines(t, r.stdout)[0]; obj["key"] != `lock:a\\b` {
		t.Errorf("show --json key %v", obj["key"])
	}
	r = runCLI(t, cliOpts{}, "extend", printedKey, "--ttl", "2m", "--expect", printedValue, "--redis", url)
	expectExit(t, r, exitOK)
	r = runCLI(t, cliOpts{}, "extend", printedKey, "--ttl", "3m", "--yes", "--redis", url)
	expectExit(t, r, exitOK)
	if !strings.Contains(r.stderr, printedKey+" is held by") || !strings.Contains(r.stdout, "extended "+printedKey+":") {
		t.Errorf("extend does not print the key as ls does:\n%s", r)
	}
	r = runCLI(t, cliOpts{}, "release", printedKey, "--expect", printedValue, "--json", "--redis", url)
	expectExit(t, r, exitOK)
	if obj := jsonLines(t, r.stdout)[0]; obj["key"] != printedKey || obj["seen"] != printedValue {
		t.Errorf("release --json key %v seen %v, want them as ls prints them", obj["key"], obj["seen"])
	}
	if _, held := redistest.Value(t, c, binKey); held {
		t.Error("the binary key was not released")
	}

	r = runCLI(t, cliOpts{}, "release", "lock:redisson", "--expect", printed["lock:redisson"], "--redis", url)
	expectExit(t, r, exitOK)

	r = runCLI(t, cliOpts{}, "show", `lock:\q`, "--redis", url)
	expectExit(t, r, exitUsage)
	if !strings.Contains(r.stderr, `\\`) {
		t.Errorf("a bad escape does not say how to write a backslash:\n%s", r)
	}
}

// TestCLIShowDecodedIsPrintedAsLsPrints: show --json's decoded node and trace of a lockscope
// value are in the printed form of ls --json's node and trace, not raw (lossy for invalid
// UTF-8, and a terminal escape for a jq -r reader).
func TestCLIShowDecodedIsPrintedAsLsPrints(t *testing.T) {
	s := redistest.Start(t)
	if err := s.Client().Set(t.Context(), "lock:dec", "ap\xffi\\x:tr\x1b:1700000000000:0123456789abcdef", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, cliOpts{}, "show", "lock:dec", "--json", "--redis", redisURL(s.Addr))
	expectExit(t, r, exitOK)
	obj := jsonLines(t, r.stdout)[0]
	decoded, _ := obj["decoded"].(map[string]any)
	if obj["node"] != `ap\xffi\\x` || decoded["node"] != obj["node"] || decoded["trace"] != obj["trace"] || obj["trace"] != `tr\x1b` {
		t.Errorf("node %q and trace %q, decoded %v", obj["node"], obj["trace"], decoded)
	}
}

// TestCLIExpectTypoIsNotAChangeOfHands (issue 14, point 2): a --expect that differs from the
// value of an unchanged holder is reported as such, with both values, not as a change of hands.
func TestCLIExpectTypoIsNotAChangeOfHands(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	url := redisURL(s.Addr)
	if err := c.Set(t.Context(), "lock:q", oldLock, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	typo := oldLock[:len(oldLock)-1] + "0"
	r := runCLI(t, cliOpts{}, "release", "lock:q", "--expect", typo, "--redis", url)
	expectExit(t, r, exitChanged)
	if strings.Contains(r.stdout+r.stderr, "changed hands") || !strings.Contains(r.stdout, "the lock's value differs from --expect") ||
		!strings.Contains(r.stdout, `"`+typo+`"`) || !strings.Contains(r.stdout, `"`+oldLock+`"`) {
		t.Errorf("a mistyped --expect is not reported as a difference with both values:\n%s", r)
	}
	r = runCLI(t, cliOpts{}, "extend", "lock:q", "--ttl", "2h", "--expect", typo, "--json", "--redis", url)
	expectExit(t, r, exitChanged)
	if obj := jsonLines(t, r.stdout)[0]; obj["outcome"] != "value_differs" || obj["current"] != oldLock || obj["seen"] != typo {
		t.Errorf("extend --json = %v", obj)
	}
	// The audit trail says what the output said.
	r = runCLI(t, cliOpts{}, "audit", "--json", "--redis", url)
	expectExit(t, r, exitOK)
	records := jsonLines(t, r.stdout)
	if len(records) != 2 || records[0]["result"] != "value_differs" || records[1]["result"] != "value_differs" {
		t.Errorf("the audit records of a mistyped --expect:\n%s", r.stdout)
	}
}

// TestCLIExtendDoesNotShorten (issue 14, point 3): extend refuses a TTL below the one left, or
// on a lock without expiry, with exit 2, unless --allow-shorten.
func TestCLIExtendDoesNotShorten(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client()
	url := redisURL(s.Addr)
	for key, ttl := range map[string]time.Duration{"lock:long": 10 * time.Minute, "lock:forever": 0} {
		if err := c.Set(t.Context(), key, oldLock, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"lock:long", "--expect", oldLock}, {"lock:long", "--yes"}, {"lock:forever", "--expect", oldLock}} {
		r := runCLI(t, cliOpts{}, append([]string{"extend", "--ttl", "30s", "--redis", url}, args...)...)
		expectExit(t, r, exitUsage)
		if !strings.Contains(r.stdout+r.stderr, "--allow-shorten") {
			t.Errorf("%v: the refusal does not name --allow-shorten:\n%s", args, r)
		}
	}
	if ttl := c.PTTL(t.Context(), "lock:long").Val(); ttl < 9*time.Minute {
		t.Fatalf("lock:long was shortened to %v", ttl)
	}
	if ttl := c.PTTL(t.Context(), "lock:forever").Val(); ttl >= 0 {
		t.Fatalf("lock:forever was given a TTL of %v", ttl)
	}
	for _, key := range []string{"lock:long", "lock:forever"} {
		r := runCLI(t, cliOpts{}, "extend", key, "--ttl", "30s", "--expect", oldLock, "--allow-shorten", "--redis", url)
		expectExit(t, r, exitOK)
		if ttl := c.PTTL(t.Context(), key).Val(); ttl <= 0 || ttl > 30*time.Second {
			t.Errorf("%s: --allow-shorten left a TTL of %v", key, ttl)
		}
	}
}

// TestCLIExtendRedlockKeepsTheLongerInstances: on a Redlock set whose instances have different
// TTLs left, extend without --expect (read, then --yes) does what the script does after a
// --expect: the instances with less left are extended, the one with more is left as it is.
func TestCLIExtendRedlockKeepsTheLongerInstances(t *testing.T) {
	_, clients, flags := redlockFlags(t, 2)
	for i, ttl := range []time.Duration{10 * time.Minute, time.Minute} {
		if err := clients[i].Set(t.Context(), "lock:q", oldLock, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, cliOpts{}, append([]string{"extend", "lock:q", "--ttl", "2m", "--yes"}, flags...)...)
	expectExit(t, r, exitOK)
	if long, short := clients[0].PTTL(t.Context(), "lock:q").Val(), clients[1].PTTL(t.Context(), "lock:q").Val(); long < 9*time.Minute || short < 110*time.Second {
		t.Errorf("TTLs %v and %v after extend --ttl 2m, want about 10m and 2m:\n%s", long, short, r)
	}
}

// TestCLIShowRedlockInstanceDown (issue 14, point 18): show on a Redlock set with an instance
// down exits 9 as ls does, and show --json tells a down instance from one without the key.
func TestCLIShowRedlockInstanceDown(t *testing.T) {
	servers, clients, flags := redlockFlags(t, 3)
	for _, c := range clients[:2] {
		if err := c.Set(t.Context(), "lock:q", oldLock, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	servers[2].Kill()
	r := runCLI(t, cliOpts{}, append([]string{"show", "lock:q"}, flags...)...)
	expectExit(t, r, exitPartial)
	if !strings.Contains(r.stderr, "partial: could not read "+servers[2].Addr) || !strings.Contains(r.stdout, servers[2].Addr+"  down: ") {
		t.Errorf("show does not name the down instance:\n%s", r)
	}
	if err := clients[1].Del(t.Context(), "lock:q").Err(); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, cliOpts{}, append([]string{"show", "lock:q", "--json"}, flags...)...)
	expectExit(t, r, exitPartial)
	insts := jsonLines(t, r.stdout)[0]["instances"].([]any)
	for i, want := range []string{"held", "absent", "down"} {
		in := insts[i].(map[string]any)
		if in["state"] != want || (want == "down") != (in["error"] != nil) {
			t.Errorf("instance %d: state %v error %v, want %s", i, in["state"], in["error"], want)
		}
	}
}
