package scanner

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/lockscope/lockscope/connect"
	"github.com/lockscope/lockscope/locklib/protocol"
	"github.com/redis/go-redis/v9"
)

// hints subscribes to what may tell Watch early that a lock changed: locklib's events
// channel, and keyspace notifications for the pattern (delivered only if the server has
// notify-keyspace-events on; the scanner turns them on only with ConfigureNotifications).
// The channel carries key names, drops hints when full, and ends with ctx. A cluster's
// keyspace notifications are node-local, so only the events channel is used there.
func (s *Scanner) hints(ctx context.Context, warn func(string)) <-chan string {
	out := make(chan string, 256)
	for i, c := range s.target.Clients {
		if s.opts.ConfigureNotifications && s.target.Mode != connect.Cluster {
			if err := enableNotifications(ctx, c); err != nil {
				warn("could not enable keyspace notifications on " + s.addr(i) + ": " + err.Error())
			}
		}
		sub := c.Subscribe(ctx, protocol.EventsChannel)
		if s.target.Mode != connect.Cluster {
			if err := sub.PSubscribe(ctx, "__keyspace@*__:"+s.opts.Pattern); err != nil {
				warn("keyspace notifications unavailable on " + s.addr(i) + ": " + err.Error())
			}
		}
		go s.forwardHints(ctx, sub, out)
		if s.target.Mode == connect.Cluster {
			break // one subscription sees every node's PUBLISH
		}
	}
	return out
}

func (s *Scanner) forwardHints(ctx context.Context, sub *redis.PubSub, out chan<- string) {
	defer sub.Close()
	msgs := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			key := hintKey(m)
			if key == "" || !MatchGlob(s.opts.Pattern, key) {
				continue
			}
			select {
			case out <- key:
			default: // a full queue: the next pass catches up
			}
		}
	}
}

// hintKey extracts the key a message is about.
func hintKey(m *redis.Message) string {
	if m.Channel == protocol.EventsChannel {
		var ev protocol.Event
		if json.Unmarshal([]byte(m.Payload), &ev) != nil {
			return ""
		}
		return ev.Key
	}
	// __keyspace@<db>__:<key>
	if _, key, ok := strings.Cut(m.Channel, "__:"); ok {
		return key
	}
	return ""
}

// enableNotifications adds keyspace events for generic, string, hash, expired and evicted
// changes to whatever notify-keyspace-events already holds (never removes a flag).
func enableNotifications(ctx context.Context, c redis.UniversalClient) error {
	cur, err := c.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return err
	}
	flags := cur["notify-keyspace-events"]
	for _, f := range "Kg$hxe" {
		if !strings.ContainsRune(flags, f) {
			flags += string(f)
		}
	}
	return c.ConfigSet(ctx, "notify-keyspace-events", flags).Err()
}
