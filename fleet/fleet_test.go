package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/relayrt/relay/fleet"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/redistest"
	"github.com/relayrt/relay/internal/storetest"
	"github.com/relayrt/relay/mcp"
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
	s := open(t, srv, fleet.Options{Prefix: "a:", EventAge: time.Second}).EventStore()
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
		if ttl := raw.PTTL(ctx, k).Val(); ttl <= 0 || ttl > time.Second {
			t.Errorf("key %q expires in %v, want within EventAge", k, ttl)
		}
	}
	if _, ok, _ := other.After(ctx, "sess", "p1", 0); ok {
		t.Error("another prefix sees the events")
	}
	time.Sleep(600 * time.Millisecond)
	s.Append(ctx, "sess", "p1", 4, []byte("x")) // renews the stream's life
	time.Sleep(600 * time.Millisecond)
	if frames, ok, err := s.After(ctx, "sess", "p1", 0); err != nil || !ok || len(frames) != 4 {
		t.Errorf("a stream appended to within EventAge: %d frames, %v, %v; want all 4", len(frames), ok, err)
	}
	time.Sleep(1200 * time.Millisecond)
	if _, ok, err := s.After(ctx, "sess", "p1", 0); err != nil || ok {
		t.Errorf("a stream quiet for longer than EventAge is still resumable (%v)", err)
	}
	if keys, _ := raw.Keys(ctx, "*").Result(); len(keys) != 0 { // KEYS, unlike DBSIZE, skips the expired
		t.Errorf("keys outlived EventAge: %q", keys)
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

func TestTaskStore(t *testing.T) {
	srv := redistest.Start(t)
	storetest.TaskStore(t, func(t *testing.T, o storetest.TaskOptions) storetest.Tasks {
		st := open(t, srv, fleet.Options{}).TaskStore(&fleet.TaskStoreOptions{
			MaxTasks: o.MaxTasks, MaxPerPrincipal: o.MaxPerPrincipal, MaxBytes: o.MaxBytes, Now: o.Now})
		return storetest.Tasks{Store: st, Len: func() int {
			n, err := st.Len(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}}
	})
}

// TestTaskStoreSharedByInstances: two instances of a fleet see one store: a task made
// through one is read and updated through the other, concurrent updates through both lose
// nothing, and the bounds are the fleet's, not each instance's.
func TestTaskStoreSharedByInstances(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	opts := fleet.Options{Prefix: "shared:"}
	clock := storetest.NewClock()
	bounds := &fleet.TaskStoreOptions{MaxTasks: 3, Now: clock.Now}
	a, b := open(t, srv, opts).TaskStore(bounds), open(t, srv, opts).TaskStore(bounds)
	if err := a.Create(ctx, &mcp.TaskRecord{ID: "t", Principal: "p", Status: mcp.TaskWorking, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update(ctx, "p", "t", func(r *mcp.TaskRecord) bool {
		r.Answers = map[string]json.RawMessage{}
		return true
	}); err != nil {
		t.Fatalf("updating through the other instance: %v", err)
	}
	var wg sync.WaitGroup
	for i := range 40 {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Go(func() {
			if _, err := st.Update(ctx, "p", "t", func(r *mcp.TaskRecord) bool {
				r.Answers[strconv.Itoa(i)] = json.RawMessage(`true`)
				return true
			}); err != nil {
				t.Errorf("update %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if got, err := a.Get(ctx, "p", "t"); err != nil || len(got.Answers) != 40 {
		t.Errorf("after 40 updates through two instances: %v answers, %v", len(got.Answers), err)
	}
	b.Create(ctx, &mcp.TaskRecord{ID: "u", Principal: "p", TTL: time.Minute})
	a.Create(ctx, &mcp.TaskRecord{ID: "v", Principal: "q", TTL: time.Minute})
	if err := b.Create(ctx, &mcp.TaskRecord{ID: "w", Principal: "q", TTL: time.Minute}); !errors.Is(err, mcp.ErrTaskLimit) {
		t.Errorf("a fourth task in a fleet bounded to 3: %v, want ErrTaskLimit", err)
	}
	// Once every task has expired and been swept, the store's bookkeeping is empty again.
	clock.Advance(time.Minute)
	if err := b.Create(ctx, &mcp.TaskRecord{ID: "x", Principal: "q", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer raw.Close()
	keys, _ := raw.Keys(ctx, "shared:*").Result()
	slices.Sort(keys)
	want := []string{"shared:task:x", "shared:tasks:bytes", "shared:tasks:counts", "shared:tasks:expiries", "shared:tasks:meta"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys after the sweep: %q, want %q", keys, want)
	}
	if n := raw.Get(ctx, "shared:tasks:bytes").Val(); n != "0" {
		t.Errorf("bytes counted after the sweep: %s, want 0 (x has none)", n)
	}
	if counts := raw.HGetAll(ctx, "shared:tasks:counts").Val(); len(counts) != 1 || counts["q"] != "1" {
		t.Errorf("counts after the sweep: %v, want q's one task", counts)
	}
	if ttl := raw.PTTL(ctx, "shared:task:x").Val(); ttl <= time.Minute || ttl > 2*time.Minute {
		t.Errorf("a task with a TTL of a minute expires from Redis in %v, want a minute past it", ttl)
	}
}

func TestBus(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Bus(t, func(t *testing.T) (mcp.Bus, mcp.Bus) {
		opts := fleet.Options{Prefix: "test:" + strings.ReplaceAll(t.Name(), "/", ":") + ":"}
		return open(t, srv, opts).Bus(), open(t, srv, opts).Bus()
	})
}

func TestSessionStore(t *testing.T) {
	srv := redistest.Start(t)
	storetest.SessionStore(t, func(t *testing.T) httpx.SessionStore {
		return open(t, srv, fleet.Options{}).SessionStore()
	})
}

// ScopedURL puts a scope of its own after the URL's key prefix, or after the default one.
func TestScopedURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis://127.0.0.1:6379", "redis://127.0.0.1:6379?prefix=" + url.QueryEscape(fleet.DefaultPrefix+"s:")},
		{"rediss://u:p@h:1/2?prefix=a:", "rediss://u:p@h:1/2?prefix=a%3As%3A"},
	} {
		if got, err := fleet.ScopedURL(tc.in, "s"); err != nil || got != tc.want {
			t.Errorf("ScopedURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := fleet.ScopedURL("http://h:1", "s"); err == nil {
		t.Error("ScopedURL took an http URL")
	}
}
