package demo

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

//go:embed cleanup.lua
var cleanupSource string

// cleanupScript deletes a demo worker's lock and, once no lock is left, its companions.
var cleanupScript = redis.NewScript(cleanupSource)

// RemoveKeys deletes, after Stop, every key the run left on every instance: the locks its
// workers still hold (a crashed worker's would wait for its TTL), compare-and-delete against the
// value its last section on that resource took, and the companions of each lock:demo:* key that
// no one holds any more (fence counters, wait queues and presence, levels, ended sets). A lock
// held by another client stays, with its companions: another demo run's too, whose workers
// have the same names. For servers the demo shares (--redis); the embedded ones go with the
// process.
func (c *Controller) RemoveKeys() error {
	var errs []error
	for i, addr := range c.cfg.Servers.Addrs {
		if err := c.removeKeysOn(i); err != nil {
			errs = append(errs, fmt.Errorf("demo: removing its keys from %s: %w", addr, err))
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) removeKeysOn(i int) error {
	if c.leases != nil {
		return c.removeLeasesOn(i)
	}
	return c.eachResource(i, func(ctx context.Context, cl redis.UniversalClient, key string) error {
		companions := protocol.CompanionKeys(key)
		return cleanupScript.Run(ctx, cl, append([]string{key}, companions[:]...), c.checker.lastOwner(key)).Err()
	})
}

// eachResource dials instance i and calls f for each of the run's lock keys, all within one
// 5 s bound (the end-of-run cleanup, the failover's wipe); it returns every error f gave.
func (c *Controller) eachResource(i int, f func(ctx context.Context, cl redis.UniversalClient, key string) error) error {
	cl := c.cfg.Servers.Dial(i)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, key := range c.resources {
		if err := f(ctx, cl, key); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// isDemoWorkerValue says whether a lock value was written by a demo worker.
func isDemoWorkerValue(value string) bool {
	v, err := protocol.ParseValue(value)
	return err == nil && strings.HasPrefix(v.Node, "demo-w")
}
