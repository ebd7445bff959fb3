package fleet_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relayrt/relay/fleet"
	"github.com/relayrt/relay/internal/redistest"
	"github.com/relayrt/relay/mcp"
)

// unavailableWithin checks that err wraps ErrUnavailable, says to retry, and came within
// bound.
func unavailableWithin(t *testing.T, what string, err error, took, bound time.Duration) {
	t.Helper()
	if !errors.Is(err, fleet.ErrUnavailable) {
		t.Errorf("%s while Redis is down: %v, want ErrUnavailable", what, err)
	} else if !strings.HasSuffix(err.Error(), "; retry") {
		t.Errorf("%s: %q does not say to retry", what, err)
	}
	if took > bound {
		t.Errorf("%s took %v to fail, want at most %v", what, took, bound)
	}
}

// TestRedisDownAndBack: while Redis is down, every call fails soon with ErrUnavailable and a
// subscription's channel closes; once Redis is back on the same address, every call succeeds
// again with no help, and a subscriber that subscribes again hears what is published.
func TestRedisDownAndBack(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const timeout = 500 * time.Millisecond
	r := open(t, srv, fleet.Options{Timeout: timeout})
	events, tasks, bus := r.EventStore(), r.TaskStore(nil), r.Bus()
	other := open(t, srv, fleet.Options{Prefix: "test:TestRedisDownAndBack:", Timeout: timeout}).Bus()
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, err := bus.Subscribe(subCtx, "changes")
	if err != nil {
		t.Fatal(err)
	}
	if err := events.Append(ctx, "s", "p1", 1, []byte("e1")); err != nil {
		t.Fatal(err)
	}
	if err := tasks.Create(ctx, &mcp.TaskRecord{ID: "t", Status: mcp.TaskWorking, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	select {
	case _, ok := <-sub:
		if ok {
			t.Error("a message arrived as Redis went down")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a subscription's channel is still open 5 s after Redis went down")
	}
	calls := map[string]func() error{
		"Append": func() error { return events.Append(ctx, "s", "p1", 2, []byte("e2")) },
		"After":  func() error { _, _, err := events.After(ctx, "s", "p1", 0); return err },
		"Forget": func() error { return events.Forget(ctx, "s") },
		"Create": func() error { return tasks.Create(ctx, &mcp.TaskRecord{ID: "u", TTL: time.Hour}) },
		"Get":    func() error { _, err := tasks.Get(ctx, "", "t"); return err },
		"Update": func() error {
			_, err := tasks.Update(ctx, "", "t", func(*mcp.TaskRecord) bool { return true })
			return err
		},
		"Len":       func() error { _, err := tasks.Len(ctx); return err },
		"Publish":   func() error { return bus.Publish(ctx, "changes", []byte("x")) },
		"Subscribe": func() error { _, err := bus.Subscribe(subCtx, "changes"); return err },
	}
	for what, call := range calls {
		start := time.Now()
		err := call()
		unavailableWithin(t, what, err, time.Since(start), 4*timeout)
	}

	srv.Restart()
	// The client reconnects by itself: the first call after the restart succeeds.
	for what, call := range calls {
		if what == "Subscribe" || what == "Update" || what == "Get" {
			continue // below: the restarted Redis is empty
		}
		if err := call(); err != nil {
			t.Errorf("%s once Redis is back: %v", what, err)
		}
	}
	if _, err := tasks.Get(ctx, "", "t"); !errors.Is(err, mcp.ErrTaskNotFound) {
		t.Errorf("a task lost with Redis's data: %v, want ErrTaskNotFound", err)
	}
	if _, err := tasks.Update(ctx, "", "u", func(r *mcp.TaskRecord) bool { r.Status = mcp.TaskCompleted; return true }); err != nil {
		t.Errorf("updating a task made once Redis was back: %v", err)
	}
	again, err := bus.Subscribe(subCtx, "changes")
	if err != nil {
		t.Fatalf("subscribing again once Redis is back: %v", err)
	}
	if err := other.Publish(ctx, "changes", []byte("after")); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-again:
		if string(msg) != "after" {
			t.Errorf("the new subscription got %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Error("the new subscription heard nothing")
	}
}

// TestOpenFailsClearly: Open refuses what is not a Redis URL, and fails with ErrUnavailable
// within its timeout when nothing answers, whether nothing listens or a listener never
// replies.
func TestOpenFailsClearly(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"http://127.0.0.1:6379", "127.0.0.1:6379", "redis://h:1/notadb"} {
		if r, err := fleet.Open(ctx, url, nil); err == nil {
			r.Close()
			t.Errorf("Open(%q) succeeded", url)
		} else if errors.Is(err, fleet.ErrUnavailable) {
			t.Errorf("Open(%q): %v; a bad URL is not worth a retry", url, err)
		}
	}
	if _, err := fleet.Open(ctx, "redis://:secret@127.0.0.1:1/0?x=1", nil); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open of a URL with a password: %v", err)
	}

	const timeout = 300 * time.Millisecond
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	start := time.Now()
	_, err = fleet.Open(ctx, "redis://"+addr, &fleet.Options{Timeout: timeout})
	unavailableWithin(t, "Open with nothing listening", err, time.Since(start), 4*timeout)

	// A listener that accepts and never answers: the calls time out rather than hang.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	defer func() {
		silent.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	}()
	start = time.Now()
	_, err = fleet.Open(ctx, "redis://"+silent.Addr().String(), &fleet.Options{Timeout: timeout})
	unavailableWithin(t, "Open with a listener that never answers", err, time.Since(start), 4*timeout)
}

// TestCloseEndsSubscriptions: Close closes every subscription's channel, and what comes
// after fails, saying so.
func TestCloseEndsSubscriptions(t *testing.T) {
	srv := redistest.Start(t)
	r, err := fleet.Open(context.Background(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := r.Bus().Subscribe(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ch; ok {
		t.Error("a message on a closed connection's subscription")
	}
	if _, err := r.Bus().Subscribe(context.Background(), "t"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Subscribe after Close: %v", err)
	}
	if err := r.Bus().Publish(context.Background(), "t", nil); err == nil || errors.Is(err, fleet.ErrUnavailable) {
		t.Errorf("Publish after Close: %v, want an error that is not worth a retry", err)
	}
	r.Close() // twice is harmless
}

// TestTLS: over rediss://, with Redis's CA given, the stores and the bus work; without it,
// Open says the certificate is not trusted, which no retry mends; and a redis:// URL on a
// TLS port, or Options.TLS with a redis:// URL, are refused clearly.
func TestTLS(t *testing.T) {
	srv := redistest.StartTLS(t)
	ctx := context.Background()
	opts := fleet.Options{Prefix: "tls:", TLS: &tls.Config{RootCAs: srv.CA}}
	a, b := open(t, srv, opts), open(t, srv, opts)
	if err := a.EventStore().Append(ctx, "s", "p1", 1, []byte("e")); err != nil {
		t.Fatal(err)
	}
	if frames, ok, err := b.EventStore().After(ctx, "s", "p1", 0); err != nil || !ok || len(frames) != 1 {
		t.Errorf("over TLS: After = %q %v %v", frames, ok, err)
	}
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := b.Bus().Subscribe(subCtx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Bus().Publish(ctx, "t", []byte("over TLS")); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-ch:
		if string(msg) != "over TLS" {
			t.Errorf("got %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Error("nothing received over TLS")
	}

	_, err = fleet.Open(ctx, srv.URL, &fleet.Options{Timeout: time.Second})
	if err == nil || errors.Is(err, fleet.ErrUnavailable) || !strings.Contains(err.Error(), "Options.TLS") {
		t.Errorf("Open without Redis's CA: %v; want a certificate error saying to give the CA", err)
	}
	plain := "redis://" + srv.Addr
	_, err = fleet.Open(ctx, plain, &fleet.Options{Timeout: 300 * time.Millisecond})
	if err == nil {
		t.Error("a redis:// URL on a TLS port connected")
	}
	if _, err := fleet.Open(ctx, plain, &opts); err == nil || !strings.Contains(err.Error(), "rediss://") {
		t.Errorf("Options.TLS with a redis:// URL: %v", err)
	}
}

// TestRedisFull: a Redis at its maxmemory refuses writes; the error wraps ErrUnavailable
// (what the fleet keeps expires, so a retry may succeed) and names the cause.
func TestRedisFull(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	r := open(t, srv, fleet.Options{})
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer raw.Close()
	if err := raw.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	err := r.EventStore().Append(ctx, "s", "p1", 1, []byte("e"))
	if !errors.Is(err, fleet.ErrUnavailable) || !strings.Contains(err.Error(), "OOM") {
		t.Errorf("Append to a full Redis: %v, want ErrUnavailable naming OOM", err)
	}
	err = r.TaskStore(nil).Create(ctx, &mcp.TaskRecord{ID: "t", TTL: time.Minute})
	if !errors.Is(err, fleet.ErrUnavailable) || !strings.Contains(err.Error(), "OOM") {
		t.Errorf("Create in a full Redis: %v, want ErrUnavailable naming OOM", err)
	}
	raw.ConfigSet(ctx, "maxmemory", "0")
	if err := r.EventStore().Append(ctx, "s", "p1", 1, []byte("e")); err != nil {
		t.Errorf("once Redis has room: %v", err)
	}
}

// TestRedisHangs: a Redis that stops answering without closing its connections (a hung
// process) fails calls within the bound rather than hanging them, and a subscription whose
// PING goes unanswered is closed; once Redis goes on, everything works again.
func TestRedisHangs(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const timeout = 200 * time.Millisecond
	r := open(t, srv, fleet.Options{Timeout: timeout})
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, err := r.Bus().Subscribe(subCtx, "t")
	if err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	paused := time.Now()
	start := time.Now()
	err = r.EventStore().Append(ctx, "s", "p1", 1, []byte("e"))
	unavailableWithin(t, "Append to a hung Redis", err, time.Since(start), 4*timeout)
	start = time.Now()
	_, err = r.TaskStore(nil).Get(ctx, "", "t")
	unavailableWithin(t, "Get from a hung Redis", err, time.Since(start), 4*timeout)
	select {
	case _, ok := <-sub:
		if ok {
			t.Error("a message from a hung Redis")
		}
		// Quiet for 5 timeouts, then a PING unanswered for 5 more.
		if took := time.Since(paused); took < 5*timeout {
			t.Errorf("the subscription was given up after %v, before its PING", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a subscription to a hung Redis is still open after 10 s")
	}
	srv.Resume()
	if err := r.EventStore().Append(ctx, "s", "p1", 1, []byte("e")); err != nil {
		t.Errorf("Append once Redis goes on: %v", err)
	}
	again, err := r.Bus().Subscribe(subCtx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Bus().Publish(ctx, "t", []byte("back")); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-again:
		if string(msg) != "back" {
			t.Errorf("got %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Error("the new subscription heard nothing")
	}
}
