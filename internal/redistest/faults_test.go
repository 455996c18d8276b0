package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// counter is a script whose every run shows: INCR, so a command run twice counts 2.
var counter = redis.NewScript(`return redis.call('INCR', KEYS[1])`)

// faultyClient is a client on s through f, with counter loaded (so that a rule meant for its
// EVALSHA does not hit the NOSCRIPT round first).
func faultyClient(t *testing.T, s *Server, f *Faults, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	if err := counter.Load(context.Background(), s.Client()).Err(); err != nil {
		t.Fatal(err)
	}
	return s.Client(append([]func(*redis.Options){f.Options}, opts...)...)
}

func TestFaultsLostReplyRunsTheCommandTwice(t *testing.T) {
	s := Start(t)
	f := NewFaults(1)
	c := faultyClient(t, s, f)
	ctx := context.Background()
	fired := f.DropReply(IsScript)
	n, err := counter.Run(ctx, c, []string{"k"}).Int64()
	if err != nil {
		t.Fatal(err)
	}
	<-fired
	if n != 2 {
		t.Fatalf("go-redis's retry saw %d, want 2: the lost reply's command ran, and the retry ran it again", n)
	}
	if f.Stats().LostReplies != 1 {
		t.Fatalf("stats %+v", f.Stats())
	}
}

func TestFaultsLostRequestNeverRuns(t *testing.T) {
	s := Start(t)
	f := NewFaults(1)
	c := faultyClient(t, s, f, func(o *redis.Options) { o.MaxRetries = -1 })
	ctx := context.Background()
	f.LoseRequest(IsScript)
	if err := counter.Run(ctx, c, []string{"k"}).Err(); !ErrInjected(err) {
		t.Fatalf("err = %v, want the injected EOF", err)
	}
	if v, _ := Value(t, s.Client(), "k"); v != "" {
		t.Fatalf("a lost request ran: k = %q", v)
	}
}

func TestFaultsHeldReplyArrivesAfterALaterOne(t *testing.T) {
	s := Start(t)
	f := NewFaults(1)
	c := faultyClient(t, s, f)
	ctx := context.Background()
	release := make(chan struct{})
	f.HoldReply(ScriptWithArg("first"), release)
	first := make(chan int64)
	go func() {
		n, _ := counter.Run(ctx, c, []string{"k"}, "first").Int64()
		first <- n
	}()
	Eventually(t, "the first call ran", func() bool { v, _ := Value(t, s.Client(), "k"); return v == "1" })
	n, err := counter.Run(ctx, c, []string{"k"}, "second").Int64()
	if err != nil || n != 2 {
		t.Fatalf("second = %d, %v", n, err)
	}
	select {
	case <-first:
		t.Fatal("the held reply arrived before it was released")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if n := <-first; n != 1 {
		t.Fatalf("first = %d, want 1", n)
	}
}

func TestFaultsRandom(t *testing.T) {
	s := Start(t)
	f := NewFaults(7)
	f.SetRandom(RandomFaults{LostReply: 0.3, Delay: time.Millisecond})
	c := faultyClient(t, s, f)
	ctx := context.Background()
	var sum int64
	for range 50 {
		n, err := counter.Run(ctx, c, []string{"k"}).Int64()
		if err != nil && !ErrInjected(err) {
			t.Fatal(err)
		}
		sum = n
	}
	lost := f.Stats().LostReplies
	if lost == 0 || sum <= 50 {
		t.Fatalf("%d lost replies, counter %d: random faults did not happen", lost, sum)
	}
}

func TestParseCommands(t *testing.T) {
	b := []byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nset\r\n$1\r\nk\r\n$2\r\nv")
	cmds, rest := parseCommands(b)
	if len(cmds) != 1 || cmds[0][0] != "get" || cmds[0][1] != "k" {
		t.Fatalf("cmds %q", cmds)
	}
	cmds, rest = parseCommands(append(rest, "1\r\n"...))
	if len(cmds) != 1 || cmds[0][2] != "v1" || len(rest) != 0 {
		t.Fatalf("cmds %q rest %q", cmds, rest)
	}
}

func TestFaultsDelayedRequestIsOvertaken(t *testing.T) {
	s := Start(t)
	f := NewFaults(1)
	c := faultyClient(t, s, f)
	ctx := context.Background()
	f.DelayRequest(ScriptWithArg("first"), 300*time.Millisecond)
	first := make(chan int64)
	go func() {
		n, _ := counter.Run(ctx, c, []string{"k"}, "first").Int64()
		first <- n
	}()
	time.Sleep(50 * time.Millisecond)
	if n, err := counter.Run(ctx, c, []string{"k"}, "second").Int64(); err != nil || n != 1 {
		t.Fatalf("second = %d, %v: want it to run first", n, err)
	}
	if n := <-first; n != 2 {
		t.Fatalf("first = %d, want 2", n)
	}
}
