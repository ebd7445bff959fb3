package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/relayrt/relay/fleet"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/redistest"
	"github.com/relayrt/relay/internal/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open connects to srv with a prefix of the test's own, so that tests sharing a server see
// nothing of each other's, and closes the connection when the test ends.
func open(t testing.TB, srv *redistest.Server, opts fleet.Options) *fleet.Redis {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = "test:" + strings.ReplaceAll(t.Name(), "/", ":") + ":"
	}
	r, err := fleet.Open(context.Background(), srv.URL, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestEventStore(t *testing.T) {
	srv := redistest.Start(t)
	storetest.EventStore(t, func(t *testing.T, events int) httpx.EventStore {
		return open(t, srv, fleet.Options{StreamEvents: events}).EventStore()
	})
}

// TestEventStoreKeys: a stream and its session's set expire EventAge after the last event,
// each Append renewing it; Forget leaves no key behind; prefixes keep fleets apart.
func TestEventStoreKeys(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer raw.Close()
	s := open(t, srv, fleet.Options{Prefix: "a:", EventAge: 400 * time.Millisecond}).EventStore()
	other := open(t, srv, fleet.Options{Prefix: "b:"}).EventStore()
	for i := uint64(1); i <= 3; i++ {
		if err := s.Append(ctx, "sess", "p1", i, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	keys, _ := raw.Keys(ctx, "*").Result()
	if len(keys) != 2 {
		t.Fatalf("keys after three appends to one stream: %q, want the stream and its session's set", keys)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "a:") {
			t.Errorf("key %q is outside the prefix", k)
		}
		if ttl := raw.PTTL(ctx, k).Val(); ttl <= 0 || ttl > 400*time.Millisecond {
			t.Errorf("key %q expires in %v, want within EventAge", k, ttl)
		}
	}
	if _, ok, _ := other.After(ctx, "sess", "p1", 0); ok {
		t.Error("another prefix sees the events")
	}
	time.Sleep(250 * time.Millisecond)
	s.Append(ctx, "sess", "p1", 4, []byte("x")) // renews the stream's life
	time.Sleep(250 * time.Millisecond)
	if frames, ok, err := s.After(ctx, "sess", "p1", 0); err != nil || !ok || len(frames) != 4 {
		t.Errorf("a stream appended to within EventAge: %d frames, %v, %v; want all 4", len(frames), ok, err)
	}
	time.Sleep(500 * time.Millisecond)
	if _, ok, err := s.After(ctx, "sess", "p1", 0); err != nil || ok {
		t.Errorf("a stream quiet for longer than EventAge is still resumable (%v)", err)
	}
	if n := raw.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d keys outlived EventAge", n)
	}
	s.Append(ctx, "sess", "p1", 1, []byte("x"))
	s.Append(ctx, "sess", "GET", 1, []byte("x"))
	if err := s.Forget(ctx, "sess"); err != nil {
		t.Fatal(err)
	}
	if keys, _ := raw.Keys(ctx, "*").Result(); len(keys) != 0 {
		t.Errorf("keys left after Forget: %q", keys)
	}
}
