package scanner

import (
	"context"
	"testing"
	"time"
)

// TestPacerTinyBudgetStillRests: a budget so small that a step's rest overflows a Duration
// (--scan-budget 1e-20) still rests after the step, rather than not at all.
func TestPacerTinyBudgetStillRests(t *testing.T) {
	g := newPacer(1e-20)
	if err := g.step(context.Background(), func() error { time.Sleep(time.Millisecond); return nil }); err != nil {
		t.Fatal(err)
	}
	if rest := time.Until(g.next); rest < time.Minute {
		t.Fatalf("rest %v after a 1 ms step at a budget of 1e-20, want a long one", rest)
	}
}
