package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relayrt/relay/httpx"
)

// SessionStore is an httpx.SessionStore on Redis: any instance of the fleet serves any
// initialize-generation session. A record is one string key with its TTL; Get renews the
// TTL in the same command (GETEX), so that reading a record on a request's path and keeping
// it alive cost one round trip.
type SessionStore struct{ r *Redis }

var _ httpx.SessionStore = (*SessionStore)(nil)

// SessionStore returns the fleet's session store.
func (r *Redis) SessionStore() *SessionStore { return &SessionStore{r} }

func (s *SessionStore) key(id string) string { return s.r.opts.Prefix + "sess:" + id }

// Put implements httpx.SessionStore.
func (s *SessionStore) Put(ctx context.Context, id string, record []byte, ttl time.Duration) error {
	return s.r.wrap(ctx, "keeping a session", s.r.client.Set(ctx, s.key(id), record, ttl).Err())
}

// Get implements httpx.SessionStore.
func (s *SessionStore) Get(ctx context.Context, id string, ttl time.Duration) ([]byte, error) {
	rec, err := s.r.client.GetEx(ctx, s.key(id), ttl).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, s.r.wrap(ctx, "reading a session", err)
	}
	return rec, nil
}

// Delete implements httpx.SessionStore.
func (s *SessionStore) Delete(ctx context.Context, id string) error {
	return s.r.wrap(ctx, "deleting a session", s.r.client.Del(ctx, s.key(id)).Err())
}
