package redistest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// OwnerRelease is a lock owner's own compare-and-delete, written with WATCH/MULTI so that it
// is independent of the Lua scripts under test: race tests use it as the owner's side. held
// is false when key no longer held value; a foreign value is an error (someone else's lock
// sits where the owner's should be).
func OwnerRelease(ctx context.Context, c *redis.Client, key, value string) (held bool, err error) {
	for {
		err = c.Watch(ctx, func(tx *redis.Tx) error {
			cur, err := tx.Get(ctx, key).Result()
			if errors.Is(err, redis.Nil) {
				held = false
				return nil
			}
			if err != nil {
				return err
			}
			if cur != value {
				return fmt.Errorf("the owner found a foreign value %q", cur)
			}
			held = true
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Del(ctx, key).Err() })
			return err
		}, key)
		if !errors.Is(err, redis.TxFailedErr) {
			return held, err
		}
	}
}

// Value reads key with GET: its value and true, or "" and false when the key does not
// exist. Any other error fails the test.
func Value(tb testing.TB, c *redis.Client, key string) (string, bool) {
	tb.Helper()
	v, err := c.Get(context.Background(), key).Result()
	if errors.Is(err, redis.Nil) {
		return "", false
	}
	if err != nil {
		tb.Fatal(err)
	}
	return v, true
}
