package httpx_test

// Sessions under pressure: who owns them, who may evict whom, and what the evicted hear.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
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

// TestB2_SessionsWaitingOnTheirClientAreEvicted: a wave of sessions each holding a request of
// the server's to its client (elicitation/create) that the client never answers fills the
// table; new initializes still succeed, wave after wave, each evicting the session that has
// waited longest on its client. The evicted session's client is told on its open stream, and
// its id is gone; the other sessions, and the newcomers, are untouched.
func TestB2_SessionsWaitingOnTheirClientAreEvicted(t *testing.T) {
	const table = 4
	f := newFixture(t, &httpx.MCPOptions{MaxSessions: table})
	type waiting struct {
		sid  string
		resp *http.Response
		sse  *sseReader
		ask  rpcMsg
	}
	var wave []waiting
	defer func() {
		for _, w := range wave {
			w.resp.Body.Close()
		}
	}()
	for i := range table {
		sid := f.initialize(t, `{"elicitation":{}}`)
		resp, err := f.c.Do(f.request(context.Background(), http.MethodPost, message(i, "tools/call", map[string]any{"name": "ask"}),
			"Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion))
		if err != nil {
			t.Fatal(err)
		}
		w := waiting{sid: sid, resp: resp, sse: &sseReader{r: bufio.NewReader(resp.Body)}}
		wave = append(wave, w)
		if w.ask = w.sse.nextMsg(t); w.ask.Method != "elicitation/create" {
			t.Fatalf("session %d: first event %+v, want elicitation/create", i, w.ask)
		}
		wave[i] = w
	}
	var newcomers []string
	for i := range 2 {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
		r := f.post(body)
		if r.status != 200 || r.header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize %d with every session waiting on its client: got %s, want 200 and a session", i, r)
		}
		newcomers = append(newcomers, r.header.Get("Mcp-Session-Id"))
		evicted := wave[i]
		m := evicted.sse.nextMsg(t)
		if string(m.ID) != fmt.Sprint(i) || m.code() != -32000 || !strings.Contains(m.Error.Message, "evicted") {
			t.Errorf("the evicted session %d's stream: %+v, want its request's error saying the session was evicted", i, m)
		}
		if _, err := evicted.sse.next(); err != io.EOF {
			t.Errorf("the evicted session %d's stream goes on: %v", i, err)
		}
		if got := f.ping(t, evicted.sid); got != http.StatusNotFound {
			t.Errorf("the evicted session %d answers %d, want 404", i, got)
		}
	}
	if n := f.h.Sessions(); n != table {
		t.Errorf("Sessions() = %d, want %d", n, table)
	}
	for i, sid := range newcomers {
		if got := f.ping(t, sid); got != 200 {
			t.Errorf("newcomer %d: %d, want 200", i, got)
		}
	}
	for _, w := range wave[2:] { // the others still wait, and are served when answered
		answer := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":"Ada"}}}`, w.ask.ID))
		if r := f.legacyPost(w.sid, answer); r.status != http.StatusAccepted {
			t.Fatalf("an answer in a session left alone: %s", r)
		}
		if m := w.sse.nextMsg(t); m.Error != nil || m.text(t) != "hello Ada (accept)" {
			t.Errorf("a session left alone: final %+v", m)
		}
	}
}

// TestB2_SessionsPerClientAreBounded: one client (here a principal) holds at most
// MaxSessionsPerClient sessions; past it, its own session idle longest makes room, never
// another client's, and when all of its sessions are working it is refused with 429.
func TestB2_SessionsPerClientAreBounded(t *testing.T) {
	f := newFixture(t, &httpx.MCPOptions{MaxSessions: 10, MaxSessionsPerClient: 2,
		Authenticator: httpx.BearerTokens(map[string]string{"tok-ada": "ada", "tok-bob": "bob"})})
	ada, bob := []string{"Authorization", "Bearer tok-ada"}, []string{"Authorization", "Bearer tok-bob"}
	ping := func(sid string, auth []string) int {
		return f.legacyPost(sid, message("p", "ping", nil), auth...).status
	}
	block := func(sid, key string) {
		body := message(key, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": key}})
		f.doAsync(f.request(context.Background(), http.MethodPost, body, append([]string{"Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion}, ada...)...))
		await(t, f.tk.started, "a working request in "+key)
	}
	b1 := f.initialize(t, `{}`, bob...) // the oldest idle session of all
	a1 := f.initialize(t, `{}`, ada...)
	a2 := f.initialize(t, `{}`, ada...)
	block(a2, "a2")
	a3 := f.initialize(t, `{}`, ada...) // ada is at her limit: her idle a1 goes, not bob's older b1
	if got := ping(a1, ada); got != http.StatusNotFound {
		t.Errorf("ada's idle session past her limit: %d, want 404 (evicted)", got)
	}
	if got := ping(b1, bob); got != 200 {
		t.Errorf("bob's session, older but another client's: %d, want 200", got)
	}
	block(a3, "a3")
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	r := f.post(body, ada...)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || r.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("ada's initialize with both of her sessions working: got %s, want 429 with Retry-After", r)
	}
	if sid := f.initialize(t, `{}`, bob...); sid == "" {
		t.Error("bob could not open a session")
	}
	if n := f.h.Sessions(); n != 4 {
		t.Errorf("Sessions() = %d, want 4", n)
	}
}
