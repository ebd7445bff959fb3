package fleet

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/relayrt/relay/httpx"
)

// EventStore is an httpx.EventStore on Redis: any instance of the fleet resumes any
// session's SSE stream. Each stream is a Redis stream of at most Options.StreamEvents
// events, let go Options.EventAge after its last one; a set per session names its streams,
// so that Forget deletes them.
//
// Its bounds differ from the memory store's, which are across all sessions: each stream is
// bounded on its own, in events and in age since its last event (not each event's), and
// nothing bounds it in bytes but Redis's maxmemory. The suite both pass (internal/storetest)
// holds them to the same order, gaps and Forget.
type EventStore struct{ r *Redis }

var _ httpx.EventStore = (*EventStore)(nil)

// EventStore returns the fleet's event store.
func (r *Redis) EventStore() *EventStore { return &EventStore{r} }

// sessionTag names a session's keys. The session is length-prefixed so that no session and
// stream names run together into another's, and braced so that a Redis Cluster would keep a
// session's keys on one node.
func (s *EventStore) sessionTag(session string) string {
	return "{" + strconv.Itoa(len(session)) + ":" + session + "}"
}

func (s *EventStore) streamKey(session, stream string) string {
	return s.r.opts.Prefix + "ev:" + s.sessionTag(session) + ":" + stream
}

func (s *EventStore) sessionKey(session string) string {
	return s.r.opts.Prefix + "evs:" + s.sessionTag(session)
}

// Append implements httpx.EventStore, in one round trip: the event, the stream's bound, its
// expiry and its session's record of it go in one transaction, so that no stream is kept
// without an expiry.
func (s *EventStore) Append(ctx context.Context, session, stream string, seq uint64, frame []byte) error {
	key, set := s.streamKey(session, stream), s.sessionKey(session)
	age := s.r.opts.EventAge
	cmds, err := s.r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: int64(s.r.opts.StreamEvents),
			Values: []any{"s", seq, "f", frame}})
		p.PExpire(ctx, key, age)
		p.SAdd(ctx, set, key)
		p.PExpire(ctx, set, age)
		return nil
	})
	if err != nil && strings.HasPrefix(err.Error(), "EXECABORT") {
		// Redis refused the transaction for a command's error (OOM, say): that one says why.
		for _, c := range cmds {
			if c.Err() != nil && !strings.HasPrefix(c.Err().Error(), "EXECABORT") {
				err = c.Err()
				break
			}
		}
	}
	return s.r.wrap(ctx, "appending an SSE event", err)
}

// After implements httpx.EventStore. Events are kept in the order appended; a stream
// whose numbers jump (an event that never reached the store) can be resumed only from after
// the jump, as the memory store's.
func (s *EventStore) After(ctx context.Context, session, stream string, seq uint64) ([][]byte, bool, error) {
	entries, err := s.r.client.XRange(ctx, s.streamKey(session, stream), "-", "+").Result()
	if err != nil {
		return nil, false, s.r.wrap(ctx, "reading SSE events to resume", err)
	}
	seqs := make([]uint64, len(entries))
	for i, e := range entries {
		n, _ := e.Values["s"].(string)
		if seqs[i], err = strconv.ParseUint(n, 10, 64); err != nil {
			seqs[i] = 0 // not ours: breaks the run, as a gap does
		}
	}
	// The run that can be replayed is the longest one of consecutive numbers that ends with
	// the last event.
	first := len(entries) - 1
	for first > 0 && seqs[first-1]+1 == seqs[first] {
		first--
	}
	if first < 0 || seqs[first] == 0 || seqs[first] > seq+1 {
		return nil, false, nil
	}
	var frames [][]byte
	for i := first; i < len(entries); i++ {
		if seqs[i] > seq {
			f, _ := entries[i].Values["f"].(string)
			frames = append(frames, []byte(f))
		}
	}
	return frames, true, nil
}

// forget deletes a session's streams and their set in one atomic step, so that an Append
// racing with it either goes with the session or was not yet recorded in the set (and then
// expires with its own TTL).
var forget = redis.NewScript(`
local keys = redis.call('SMEMBERS', KEYS[1])
for i = 1, #keys, 500 do
  redis.call('DEL', unpack(keys, i, math.min(i + 499, #keys)))
end
redis.call('DEL', KEYS[1])
return #keys`)

// Forget implements httpx.EventStore.
func (s *EventStore) Forget(ctx context.Context, session string) error {
	err := forget.Run(ctx, s.r.client, []string{s.sessionKey(session)}).Err()
	if err == redis.Nil {
		err = nil
	}
	return s.r.wrap(ctx, "forgetting a session's SSE events", err)
}
