package fleet

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relayrt/relay/httpx"
)

// SessionStore is an httpx.SessionStore on Redis: any instance of the fleet serves any
// initialize-generation session. A record is one string key, its revision and a newline
// before it, with its TTL. Get renews the TTL in the same command (GETEX), so that reading a
// record on a request's path and keeping it alive cost one round trip; Put is a script that
// writes only over the revision before its own.
type SessionStore struct{ r *Redis }

var _ httpx.SessionStore = (*SessionStore)(nil)

// SessionStore returns the fleet's session store.
func (r *Redis) SessionStore() *SessionStore { return &SessionStore{r} }

func (s *SessionStore) key(id string) string { return s.r.opts.Prefix + "sess:" + id }

// putSession writes ARGV[1] "\n" ARGV[2] for ARGV[3] ms if the key holds revision ARGV[1]-1,
// or nothing when that is 0.
var putSession = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
local want = tonumber(ARGV[1]) - 1
local have = 0
if cur then
  have = tonumber(string.sub(cur, 1, string.find(cur, '\n', 1, true) - 1))
end
if have ~= want then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1] .. '\n' .. ARGV[2], 'PX', ARGV[3])
return 1
`)

// Put implements httpx.SessionStore.
func (s *SessionStore) Put(ctx context.Context, id string, rev uint64, record []byte, ttl time.Duration) (bool, error) {
	if rev == 0 {
		return false, nil
	}
	n, err := putSession.Run(ctx, s.r.client, []string{s.key(id)}, strconv.FormatUint(rev, 10), record, max(ttl.Milliseconds(), 1)).Int()
	if err != nil {
		return false, s.r.wrap(ctx, "keeping a session", err)
	}
	return n == 1, nil
}

// Get implements httpx.SessionStore.
func (s *SessionStore) Get(ctx context.Context, id string, ttl time.Duration) ([]byte, error) {
	v, err := s.r.client.GetEx(ctx, s.key(id), ttl).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, s.r.wrap(ctx, "reading a session", err)
	}
	i := bytes.IndexByte(v, '\n')
	if i < 0 {
		return nil, errors.New("fleet: a session's record in Redis has no revision; was it written by another program under this prefix?")
	}
	return v[i+1:], nil
}

// Delete implements httpx.SessionStore.
func (s *SessionStore) Delete(ctx context.Context, id string) error {
	return s.r.wrap(ctx, "deleting a session", s.r.client.Del(ctx, s.key(id)).Err())
}
