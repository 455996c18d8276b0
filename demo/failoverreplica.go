package demo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// Timings of the failover-replica scenario, in TTLs of the run (the sentinel's own timings
// are fixed: ReplicaSet).
const (
	replicaFirstTTLs = 1 // into the run before the first failover
	replicaEveryTTLs = 4 // from one failover's end (old master back as a replica) to the next
	// replication cut off before the kill: longer than a renewal interval (ttl/3), so renewals
	// are lost too, and (at the default TTL) shorter than the sentinel's down-after, so the
	// frozen replica is not thought down when the failover picks it
	replicaStallTTLs  = 0.4
	progressEveryTTLs = 0.1 // failover-replica: a holder writes its progress this often
	replicaTimeout    = 20 * time.Second
)

// Promotion is one failover of the failover-replica scenario: the master From was killed
// while its replica was cut off, and the sentinel promoted the replica To.
type Promotion struct {
	AtS       float64            `json:"at_s"`   // seconds into the run the promotion was seen
	DownS     float64            `json:"down_s"` // seconds from the kill to the promotion: no master meanwhile
	From      string             `json:"from"`
	To        string             `json:"to"`
	LocksLost int                `json:"locks_lost"` // locks held on From that To did not have
	Resources []PromotedResource `json:"resources"`
}

// PromotedResource is what a promotion did to one resource's fencing tokens.
type PromotedResource struct {
	Key string `json:"key"`
	// TokenBefore is the fence counter on the old master when it was killed: the last token
	// it handed out (0: none yet, or expired).
	TokenBefore int64 `json:"token_before"`
	// NewMasterCounter is the counter the promoted replica had: behind TokenBefore when the
	// tokens handed out in the stall were lost with the old master.
	NewMasterCounter int64 `json:"new_master_counter"`
	// FirstTokenAfter is the first token handed out after the promotion (0: none yet). It must
	// be above TokenBefore: the server-clock floor of locklib's nextToken keeps tokens
	// increasing when the counter went back.
	FirstTokenAfter int64 `json:"first_token_after"`
}

// firstTokenLocked records s's token as the first after a promotion on its resource, if one
// is awaited, and judges it. Call with c.mu held.
func (c *checker) firstTokenLocked(s *section) {
	pr := c.afterPromotion[s.resource]
	if pr == nil || c.protection != FencingTokens {
		return
	}
	delete(c.afterPromotion, s.resource)
	pr.FirstTokenAfter = s.token
	c.count(s.phase, func(k *Counters) {
		if pr.NewMasterCounter < pr.TokenBefore {
			k.TokenJumps++
		}
		if s.token <= pr.TokenBefore {
			k.TokenRegressions++
		}
	})
}

// promoted records a promotion; the first token of each of its resources is filled in as the
// workers take them.
func (c *checker) promoted(p *Promotion, phase Scenario) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range p.Resources {
		c.afterPromotion[p.Resources[i].Key] = &p.Resources[i]
	}
	c.promotions = append(c.promotions, p)
	c.count(phase, func(k *Counters) {
		k.Promotions++
		k.LocksLost += int64(p.LocksLost)
	})
}

// promotionLog is a copy of the promotions so far.
func (c *checker) promotionLog() []Promotion {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Promotion, len(c.promotions))
	for i, p := range c.promotions {
		out[i] = *p
		out[i].Resources = append([]PromotedResource(nil), p.Resources...)
	}
	return out
}

// failoverReplicaLoop fails the master over every few TTLs until the run stops.
func (c *Controller) failoverReplicaLoop() {
	wait := ttls(c.cfg.TTL, replicaFirstTTLs)
	for sleepCtx(c.ctx, wait) {
		if err := c.failoverReplica(); err != nil {
			if c.ctx.Err() != nil {
				return
			}
			c.logEvent("failover: %v", err)
		}
		wait = ttls(c.cfg.TTL, replicaEveryTTLs)
	}
}

// failoverReplica kills the master after cutting its replica off, so that the locks and
// fencing tokens it handed out meanwhile are lost, waits for the sentinel to promote the
// replica, measures what the promotion lost, and brings the old master back as a replica.
func (c *Controller) failoverReplica() error {
	rs := c.cfg.Servers.Replication
	phase := c.phaseAt(time.Now())
	healed, err := rs.Heal(c.ctx)
	if err != nil {
		return err
	}
	if healed != "" {
		c.logEvent("failover: %s (down since a failover that failed) back, empty, as a replica", healed)
	}
	master, err := rs.StallReplication(c.ctx)
	if err != nil {
		return err
	}
	c.setFailingOver(master)
	defer c.setFailingOver("") // also when it fails half-way
	c.logEvent("failover: replication from master %s cut off: what it acknowledges now reaches no replica", master)
	if !sleepCtx(c.ctx, ttls(c.cfg.TTL, replicaStallTTLs)) {
		_ = rs.KillMaster(master) // thaws the replica; the set goes at Close
		return c.ctx.Err()
	}
	// The workers' commands wait from the kill until the promoted master has been read, so
	// that what it had is measured before anyone writes to it. They would fail meanwhile
	// anyway: there is no master.
	hold := c.instances[0]
	hold.set(gatePaused)
	defer hold.set(gateOpen)
	before, err := c.readLocks(master)
	if err != nil {
		_ = rs.KillMaster(master)
		return fmt.Errorf("reading the master before the kill: %w", err)
	}
	killed := time.Now()
	if err := rs.KillMaster(master); err != nil {
		return err
	}
	c.checker.note(phase, func(k *Counters) { k.Failovers++ })
	c.logEvent("failover: master %s killed (SIGKILL) with its replica behind", master)
	if err := rs.ForceFailover(c.ctx, replicaTimeout); err != nil {
		return err
	}
	promoted, err := rs.WaitPromoted(c.ctx, master, replicaTimeout)
	if err != nil {
		return err
	}
	after, err := c.readLocks(promoted)
	if err != nil {
		return fmt.Errorf("reading the promoted master: %w", err)
	}
	p := &Promotion{AtS: seconds(c.elapsed()), DownS: seconds(time.Since(killed)), From: master, To: promoted}
	for i, key := range c.resources {
		if before[i].holder != "" && after[i].holder != before[i].holder {
			p.LocksLost++
		}
		p.Resources = append(p.Resources, PromotedResource{Key: key, TokenBefore: before[i].fence, NewMasterCounter: after[i].fence})
	}
	c.checker.promoted(p, phase)
	hold.set(gateOpen)
	c.setMaster(promoted)
	c.logEvent("failover: the workers now follow master %s (replica promoted; %s killed; %d locks lost)", promoted, master, p.LocksLost)
	if err := rs.Rejoin(c.ctx, master, promoted, replicaTimeout); err != nil {
		return err
	}
	c.logEvent("failover: %s back, empty, as a replica of %s", master, promoted)
	return nil
}

// lockState is one resource's lock key and fence counter on one node.
type lockState struct {
	holder string // the lock's value, "" when not held
	fence  int64
}

// readLocks reads every resource's lock value and fence counter on the node at addr.
func (c *Controller) readLocks(addr string) ([]lockState, error) {
	cl := adminClient(addr)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.ctx, 2*time.Second)
	defer cancel()
	cmds, err := cl.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, key := range c.resources {
			p.Get(ctx, key)
			p.Get(ctx, protocol.FenceKey(key))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]lockState, len(c.resources))
	for i := range c.resources {
		out[i].holder, _ = cmds[2*i].(*redis.StringCmd).Result()
		fence, _ := cmds[2*i+1].(*redis.StringCmd).Result()
		out[i].fence, _ = strconv.ParseInt(fence, 10, 64)
	}
	return out, nil
}

// setFailingOver records the master being failed over ("" once it is over).
func (c *Controller) setFailingOver(master string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failingOver = master
}

// setMaster records the master the workers follow now: the failover is over for them.
func (c *Controller) setMaster(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.previousMaster, c.master, c.failingOver = c.master, addr, ""
}

// writeFailovers is the failover-replica part of the text summary: what the promotions lost,
// and the tokens across each.
func (s Summary) writeFailovers(b *strings.Builder) {
	fmt.Fprintf(b, "failovers: %d promotions, %d locks lost, %d overlapping holders (wrote after their lock went to another), "+
		"%d token jumps, %d token regressions\n", s.Promotions, s.LocksLost, s.OverlappingHolders, s.TokenJumps, s.TokenRegressions)
	for _, p := range s.PromotionLog {
		fmt.Fprintf(b, "  at %.1fs: master %s killed, replica %s promoted %.1fs later, %d locks lost\n", p.AtS, p.From, p.To, p.DownS, p.LocksLost)
		if s.Protection != FencingTokens.String() {
			continue // no tokens to follow
		}
		for _, r := range p.Resources {
			first := "none yet"
			if r.FirstTokenAfter != 0 {
				first = strconv.FormatInt(r.FirstTokenAfter, 10)
			}
			fmt.Fprintf(b, "    %-22s token before %d, new master's counter %d, first token after %s\n",
				r.Key, r.TokenBefore, r.NewMasterCounter, first)
		}
	}
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }
