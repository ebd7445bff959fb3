package httpx_test

// Sessions under pressure: who owns them, who may evict whom, and what the evicted hear.

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/runtime"
)

// TestB2_CloseWaitsForEverySession: sessions that left the table while a handler still ran in
// them, one deleted and one evicted, are still the handler's: Close returns only once their
// handlers have ended and their goroutines are gone.
func TestB2_CloseWaitsForEverySession(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	f := newFixture(t, &httpx.MCPOptions{MaxSessions: 2, Runtime: []runtime.Option{runtime.WithDrainTimeout(time.Second)}})
	block := func(sid, key string, ctx context.Context) <-chan error {
		body := message(key, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": key}})
		return f.doAsync(f.request(ctx, http.MethodPost, body, "Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion, testTag, key))
	}
	deleted, evicted := f.initialize(t, `{}`), f.initialize(t, `{}`)

	// evicted: a handler runs on after its client went away (a disconnect is no cancel), and
	// the session is idle.
	ctx, cancel := context.WithCancel(context.Background())
	gone := block(evicted, "evicted", ctx)
	await(t, f.tk.started, "the handler in the session to be evicted")
	cancel()
	await(t, gone, "the client to go away")
	returned, _ := f.chans("evicted")
	await(t, returned, "the POST whose client went away to end")

	// deleted: DELETE while a handler runs, its POST still open.
	open := block(deleted, "deleted", context.Background())
	await(t, f.tk.started, "the handler in the session to be deleted")
	if r := f.do(f.request(context.Background(), http.MethodDelete, nil, "Mcp-Session-Id", deleted, "MCP-Protocol-Version", legacyVersion)); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %s", r)
	}
	f.initialize(t, `{}`)
	f.initialize(t, `{}`) // the table is full: the idle session goes
	if got := f.ping(t, evicted); got != http.StatusNotFound {
		t.Fatalf("the session that should have been evicted answers %d", got)
	}

	f.h.Close()
	ended := map[string]bool{}
	for len(f.tk.cancelled) > 0 {
		ended[<-f.tk.cancelled] = true
	}
	for _, key := range []string{"deleted", "evicted"} {
		if !ended[key] {
			t.Errorf("Close returned while the handler of the %s session still ran", key)
		}
	}
	await(t, open, "the deleted session's POST to end")
	f.close()
	if err := goleak.Find(leaks); err != nil {
		t.Errorf("goroutines left after Close: %v", err)
	}
}
