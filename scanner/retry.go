package scanner

import (
	"context"
	"time"
)

const (
	retryFirst = 50 * time.Millisecond
	retryMax   = 2 * time.Second
)

// retry runs step until it succeeds, fails with an answer from Redis (not worth repeating),
// the context ends, or Options.Retries retries were spent. Each retry is announced, so a
// census after a dropped connection says that it recovered. Steps are idempotent reads
// (a SCAN call with its cursor, a batch of reads), so repeating one loses and doubles nothing.
// Only a connection that dropped is retried: a server that has not answered once in this
// pass is reported unreachable at once, so a dead server costs no back-off.
func (p *pass) retry(ctx context.Context, addr string, step func() error) error {
	delay := retryFirst
	for attempt := 1; ; attempt++ {
		err := step()
		if err == nil {
			p.answered(addr)
		}
		if err == nil || isReply(err) || ctx.Err() != nil || !p.hasAnswered(addr) {
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if attempt > p.s.opts.Retries {
			return err
		}
		p.noteRetry(addr, attempt, delay, err)
		if !sleepCtx(ctx, delay) {
			return ctx.Err()
		}
		delay = min(2*delay, retryMax)
	}
}

// noteRetry reports a retry to the consumer and leaves one warning per server in the census.
func (p *pass) noteRetry(addr string, attempt int, in time.Duration, err error) {
	if p.out.retrying != nil {
		p.out.retrying(addr, attempt, in, err)
	}
	p.out.warn("connection to " + addr + " failed during the scan: retried with back-off")
}

func (p *pass) answered(addr string) {
	p.mu.Lock()
	p.alive[addr] = true
	p.mu.Unlock()
}

func (p *pass) hasAnswered(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.alive[addr]
}

// sleepCtx sleeps d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
