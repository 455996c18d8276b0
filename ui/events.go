package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/lockscope/lockscope/locklib/protocol"
)

// maxEventPayload bounds what is decoded from the events channel: anyone who can PUBLISH may
// write there, and a legitimate event is a few hundred bytes.
const maxEventPayload = 8 << 10

// dedupWindow is how many recent events are remembered to drop the copies a Redlock client
// publishes on each of its instances.
const dedupWindow = 512

// subscribeEvents subscribes to locklib's event channel on every client (a Redlock target
// has N independent servers; a cluster client's SUBSCRIBE reaches the cluster-wide channel)
// and merges the decoded, de-duplicated events into one channel, closed when ctx ends.
// go-redis re-subscribes by itself after a connection drop; events published meanwhile are
// lost (pub/sub is fire-and-forget), which the scanner's rescans make up for.
func subscribeEvents(ctx context.Context, clients []redis.UniversalClient) <-chan protocol.Event {
	out := make(chan protocol.Event, 256)
	if len(clients) == 0 {
		close(out)
		return out
	}
	raw := make(chan string, 256)
	var wg sync.WaitGroup
	for _, c := range clients {
		ps := c.Subscribe(ctx, protocol.EventsChannel)
		wg.Go(func() {
			defer ps.Close()
			ch := ps.Channel()
			for {
				select {
				case <-ctx.Done():
					return
				case msg, ok := <-ch:
					if !ok {
						return
					}
					select {
					case raw <- msg.Payload:
					case <-ctx.Done():
						return
					}
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(raw)
	}()
	go func() {
		defer close(out)
		seen := newRecentSet(dedupWindow)
		for payload := range raw {
			ev, err := decodeEvent(payload)
			if err != nil || !seen.add(eventIdentity(ev)) {
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				// Drain raw so the subscribers can finish.
			}
		}
	}()
	return out
}

// decodeEvent parses one message of the events channel.
func decodeEvent(payload string) (protocol.Event, error) {
	var ev protocol.Event
	if len(payload) > maxEventPayload {
		return ev, fmt.Errorf("ui: event of %d bytes is too large", len(payload))
	}
	if err := json.Unmarshal([]byte(payload), &ev); err != nil {
		return ev, fmt.Errorf("ui: bad event: %w", err)
	}
	if ev.Type == "" || ev.Key == "" {
		return ev, fmt.Errorf("ui: event without type or key")
	}
	return ev, nil
}

// eventIdentity is what makes two copies of one event the same event.
func eventIdentity(ev protocol.Event) string {
	return ev.Type + "\x00" + ev.Key + "\x00" + ev.Value + "\x00" + ev.Node + "\x00" + strconv.FormatInt(ev.AtMs, 10)
}

// recentSet remembers the last n distinct strings.
type recentSet struct {
	ring []string
	next int
	have map[string]struct{}
}

func newRecentSet(n int) *recentSet {
	return &recentSet{ring: make([]string, n), have: make(map[string]struct{}, n)}
}

// add reports whether s is new, remembering it.
func (r *recentSet) add(s string) bool {
	if _, ok := r.have[s]; ok {
		return false
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.have, old)
	}
	r.ring[r.next] = s
	r.have[s] = struct{}{}
	r.next = (r.next + 1) % len(r.ring)
	return true
}
