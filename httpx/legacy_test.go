package httpx_test

// The initialize generation over Streamable HTTP: DIGEST B1, B2, B3.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/httpx"
)

// initialize opens a 2025-11-25 session with the given client capabilities and sends
// notifications/initialized; it returns the session id.
func (f *fixture) initialize(t *testing.T, caps string, hdr ...string) string {
	t.Helper()
	body := []byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + legacyVersion +
		`","capabilities":` + caps + `,"clientInfo":{"name":"legacy-client","version":"1"}}}`)
	r := f.post(body, hdr...)
	if r.status != 200 {
		t.Fatalf("initialize: %s", r)
	}
	m := r.rpc(t)
	if m.Error != nil || string(jsonField(m.Result, "protocolVersion")) != `"`+legacyVersion+`"` {
		t.Fatalf("initialize: %s", r.body)
	}
	sid := r.header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize minted no Mcp-Session-Id: %s", r)
	}
	if r := f.legacyPost(sid, message(nil, "notifications/initialized", nil), hdr...); r.status != http.StatusAccepted || len(r.body) != 0 {
		t.Fatalf("notifications/initialized: got %s, want 202 and no body", r)
	}
	return sid
}

// legacyPost sends a message of the session, with the negotiated MCP-Protocol-Version.
func (f *fixture) legacyPost(sid string, body []byte, hdr ...string) reply {
	f.t.Helper()
	return f.post(body, append([]string{"Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion}, hdr...)...)
}

func (f *fixture) ping(t *testing.T, sid string) int {
	t.Helper()
	return f.legacyPost(sid, message("ping", "ping", nil)).status
}

func TestB2_InitializeMintsARandomSessionID(t *testing.T) {
	f := newFixture(t, nil)
	seen := map[string]bool{}
	for range 20 {
		sid := f.initialize(t, `{}`)
		for _, c := range []byte(sid) {
			if c < 0x21 || c > 0x7e {
				t.Fatalf("B2 the session id %q has a byte outside visible ASCII: %#x", sid, c)
			}
		}
		raw := sid[strings.LastIndexByte(sid, '.')+1:]
		if b, err := base64.RawURLEncoding.DecodeString(raw); err != nil || len(b) < 16 {
			t.Fatalf("B2 the session id %q does not carry at least 128 random bits (%d bytes, %v)", sid, len(b), err)
		}
		if seen[sid] {
			t.Fatalf("B2 the session id %q was minted twice", sid)
		}
		seen[sid] = true
	}
	if h := f.h.Sessions(); h != 20 {
		t.Errorf("Sessions() = %d, want 20", h)
	}
}

func TestB2_SessionRules(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	list := message(2, "tools/list", map[string]any{})

	r := f.legacyPost(sid, list)
	if r.status != 200 || r.rpc(t).Error != nil || jsonField(r.rpc(t).Result, "tools") == nil {
		t.Fatalf("tools/list in the session: %s", r)
	}
	cases := []struct {
		rule   string
		hdr    []string
		status int
	}{
		{"B2 a request without the session id → 400", []string{"MCP-Protocol-Version", legacyVersion}, 400},
		{"B2/B3 a request without the session id or a version → 400", nil, 400},
		{"B2 an unknown session id → 404", []string{"Mcp-Session-Id", "no-such-session", "MCP-Protocol-Version", legacyVersion}, 404},
		{"B2 MCP-Protocol-Version 2025-03-26 inside a 2025-11-25 session → accepted", []string{"Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-03-26"}, 200},
		{"B2 a missing MCP-Protocol-Version inside a session is assumed 2025-03-26 → accepted", []string{"Mcp-Session-Id", sid}, 200},
		{"B2 an unsupported MCP-Protocol-Version → 400", []string{"Mcp-Session-Id", sid, "MCP-Protocol-Version", "1999-01-01"}, 400},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			r := f.post(list, tc.hdr...)
			if r.status != tc.status {
				t.Fatalf("got %s, want %d", r, tc.status)
			}
			if tc.status != 200 {
				if m := r.rpc(t); m.Error == nil {
					t.Errorf("the refusal has no JSON-RPC error body: %s", r)
				}
			}
		})
	}
	t.Run("B1 ping answers {}", func(t *testing.T) {
		r := f.legacyPost(sid, message(3, "ping", nil))
		if r.status != 200 || string(r.rpc(t).Result) != "{}" {
			t.Errorf("got %s", r)
		}
	})
}

func TestB2_DeleteEndsTheSession(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	other := f.initialize(t, `{}`)
	del := func(id string) reply {
		return f.do(f.request(context.Background(), http.MethodDelete, nil, "Mcp-Session-Id", id, "MCP-Protocol-Version", legacyVersion))
	}
	if r := del(sid); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: got %s, want 204", r)
	}
	if got := f.ping(t, sid); got != 404 {
		t.Errorf("a request of the deleted session: %d, want 404", got)
	}
	if r := del(sid); r.status != 404 {
		t.Errorf("DELETE again: got %s, want 404", r)
	}
	if got := f.ping(t, other); got != 200 {
		t.Errorf("another session after the DELETE: %d", got)
	}
	if n := f.h.Sessions(); n != 1 {
		t.Errorf("Sessions() = %d, want 1", n)
	}
}

// TestB2_ServerToClientRequestTravelsOnThePOSTStream: Elicit under 2025-11-25 is a JSON-RPC
// request on the tools/call POST's SSE stream; the client POSTs its answer (202), and the
// tool's result follows on the same stream, which then ends.
func TestB2_ServerToClientRequestTravelsOnThePOSTStream(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{"elicitation":{}}`)
	req := f.request(context.Background(), http.MethodPost, message(7, "tools/call", map[string]any{"name": "ask"}),
		"Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion)
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %q, want an SSE stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sse := &sseReader{r: bufio.NewReader(resp.Body)}
	ask := sse.nextMsg(t)
	if ask.Method != "elicitation/create" || ask.ID == nil || !strings.Contains(string(ask.Params), "Your name?") {
		t.Fatalf("first event %+v, want the elicitation/create request", ask)
	}
	answer := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":"Ada"}}}`, ask.ID))
	if r := f.legacyPost(sid, answer); r.status != http.StatusAccepted || len(r.body) != 0 {
		t.Fatalf("the client's answer: got %s, want 202 and no body", r)
	}
	final := sse.nextMsg(t)
	if string(final.ID) != "7" || final.text(t) != "hello Ada (accept)" {
		t.Fatalf("final event %+v", final)
	}
	if b, err := sse.next(); err == nil {
		t.Errorf("the stream goes on after the answer: %s", b)
	}
}

// TestB2_DisconnectIsNotCancellation: in this generation the client's disconnect leaves the
// request running; the handler is never cancelled and finishes when released.
func TestB2_DisconnectIsNotCancellation(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := f.request(ctx, http.MethodPost, message(9, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "L"}}),
		"Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion, testTag, "legacy-gone")
	done := f.doAsync(req)
	await(t, f.tk.started, "the handler to start")
	cancel()
	await(t, done, "the client to give up")
	returned, gone := f.chans("legacy-gone")
	await(t, gone, "the server to see the client go away")
	// A round trip through the same session's dispatcher: a cancel sent on the disconnect
	// would have reached the handler's context before this answer.
	if got := f.ping(t, sid); got != 200 {
		t.Fatalf("ping: %d", got)
	}
	select {
	case k := <-f.tk.cancelled:
		t.Fatalf("B2 the disconnect cancelled the handler (%s)", k)
	default:
	}
	f.tk.releaseAll()
	if k := await(t, f.tk.finished, "the handler to run to completion"); k != "L" {
		t.Fatalf("finished %q", k)
	}
	// The session is still usable, and the POST whose client went away has ended.
	if got := f.ping(t, sid); got != 200 {
		t.Errorf("ping after the request finished: %d", got)
	}
	select {
	case <-returned:
	case <-time.After(waitShort):
		t.Errorf("ServeHTTP never returned for the POST whose client went away (its goroutine leaks)")
	}
}

// TestB2_ExplicitCancelEndsTheRequest: a legacy client cancels with notifications/cancelled;
// the handler's context ends, and the cancelled request's POST is ended too rather than held
// open with nothing more to come.
func TestB2_ExplicitCancelEndsTheRequest(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := f.request(ctx, http.MethodPost, message(11, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "C"}}),
		"Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion, testTag, "legacy-cancel")
	done := f.doAsync(req)
	await(t, f.tk.started, "the handler to start")
	r := f.legacyPost(sid, message(nil, "notifications/cancelled", map[string]any{"requestId": 11, "reason": "user"}))
	if r.status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: got %s, want 202", r)
	}
	if k := await(t, f.tk.cancelled, "the handler to see the cancel"); k != "C" {
		t.Fatalf("cancelled %q", k)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the cancelled POST failed: %v", err)
		}
	case <-time.After(waitShort):
		t.Errorf("the cancelled request's POST is held open although nothing more will be sent on it")
		cancel()
		<-done
	}
}

// TestB2_AReusedIDIsRefusedAndTheFirstPOSTStillEnds: a client that sends a request with
// the id of one of its requests still in flight gets -32600 on the second POST at once, and
// the first POST is still answered (here it ends when the request is cancelled), instead of
// waiting forever for an answer the second one took.
func TestB2_AReusedIDIsRefusedAndTheFirstPOSTStillEnds(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := f.doAsync(f.request(ctx, http.MethodPost, message(12, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "first"}}),
		"Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion))
	await(t, f.tk.started, "the first request's handler to start")

	second := make(chan reply, 1)
	go func() {
		second <- f.legacyPost(sid, message(12, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "second"}}))
	}()
	select {
	case r := <-second:
		if m := r.rpc(t); m.Error == nil || m.Error.Code != -32600 {
			t.Errorf("the second request with id 12: %s, want error -32600", r)
		}
	case <-time.After(waitShort):
		t.Fatal("the second request with the id of one in flight was not answered")
	}

	if r := f.legacyPost(sid, message(nil, "notifications/cancelled", map[string]any{"requestId": 12, "reason": "user"})); r.status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: got %s, want 202", r)
	}
	if k := await(t, f.tk.cancelled, "the first handler to see the cancel"); k != "first" {
		t.Fatalf("cancelled %q, want the first request's handler", k)
	}
	select {
	case err := <-first:
		if err != nil {
			t.Errorf("the first POST failed: %v", err)
		}
	case <-time.After(waitShort):
		t.Errorf("the first POST is held open after its request was cancelled: the reused id orphaned it")
		cancel()
		<-first
	}
}

// TestB2_TheGETStreamIsCountedAmongOpenStreams: a session's GET stream counts in
// relay_http_sse_streams while it is open, as the POST streams do.
func TestB2_TheGETStreamIsCountedAmongOpenStreams(t *testing.T) {
	ops := httpx.NewOps(nil)
	f := newFixture(t, &httpx.MCPOptions{Ops: ops})
	sid := f.initialize(t, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { // reads the stream until the test cancels it
		defer close(done)
		f.tryDo(f.request(ctx, http.MethodGet, nil, "Accept", "text/event-stream",
			"Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion))
	}()
	streams := func() float64 { return gauge(t, ops, "relay_http_sse_streams") }
	waitFor(t, "the GET stream to be counted", func() bool { return streams() == 1 })
	cancel()
	<-done
	waitFor(t, "the closed GET stream to be counted out", func() bool { return streams() == 0 })
}

// TestB2_SessionsAreBoundedLRU: with MaxSessions n, the n+1st initialize evicts the least
// recently used idle session.
func TestB2_SessionsAreBoundedLRU(t *testing.T) {
	f := newFixture(t, &httpx.MCPOptions{MaxSessions: 3})
	s1 := f.initialize(t, `{}`)
	s2 := f.initialize(t, `{}`)
	s3 := f.initialize(t, `{}`)
	if got := f.ping(t, s1); got != 200 { // s1 is now more recent than s2
		t.Fatal(got)
	}
	s4 := f.initialize(t, `{}`)
	if got := f.ping(t, s2); got != 404 {
		t.Errorf("the least recently used session: %d, want 404 (evicted)", got)
	}
	for _, s := range []string{s1, s3, s4} {
		if got := f.ping(t, s); got != 200 {
			t.Errorf("session %s: %d, want 200", s, got)
		}
	}
	if n := f.h.Sessions(); n != 3 {
		t.Errorf("Sessions() = %d, want 3", n)
	}
}

// TestB2_AllSessionsBusyIs503: busy sessions are never evicted; a new initialize is refused
// with 503 and Retry-After until one is idle again.
func TestB2_AllSessionsBusyIs503(t *testing.T) {
	f := newFixture(t, &httpx.MCPOptions{MaxSessions: 2})
	sids := []string{f.initialize(t, `{}`), f.initialize(t, `{}`)}
	var wg sync.WaitGroup
	results := make([]reply, len(sids))
	for i, sid := range sids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := message(20+i, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": sid}})
			r, err := f.tryDo(f.request(context.Background(), http.MethodPost, body, "Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion))
			if err != nil {
				r = reply{status: -1, body: []byte(err.Error())}
			}
			results[i] = r
		}()
	}
	for range sids {
		await(t, f.tk.started, "a blocked request in each session")
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	r := f.post(body)
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("initialize with every session busy: got %s, want 503", r)
	}
	if r.header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
	if r.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a refused initialize carries a session id")
	}
	f.tk.releaseAll()
	wg.Wait()
	for i, res := range results {
		if res.status != 200 || !strings.Contains(string(res.body), "released") {
			t.Errorf("blocked request %d: %s", i, res)
		}
	}
	if sid := f.initialize(t, `{}`); sid == "" {
		t.Fatal("no session")
	}
	if n := f.h.Sessions(); n != 2 {
		t.Errorf("Sessions() = %d, want 2", n)
	}
}

// TestB2_IdleSessionsExpire: a session unused for SessionIdle ends (its id is then 404); a
// session with a request in flight does not.
func TestB2_IdleSessionsExpire(t *testing.T) {
	f := newFixture(t, &httpx.MCPOptions{SessionIdle: 100 * time.Millisecond})
	busy := f.initialize(t, `{}`)
	done := make(chan reply, 1)
	go func() {
		body := message(5, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "busy"}})
		r, err := f.tryDo(f.request(context.Background(), http.MethodPost, body, "Mcp-Session-Id", busy, "MCP-Protocol-Version", legacyVersion))
		if err != nil {
			r = reply{status: -1, body: []byte(err.Error())}
		}
		done <- r
	}()
	await(t, f.tk.started, "the busy session's request to start")
	idle := f.initialize(t, `{}`) // used after busy was last touched
	waitFor(t, "the idle session to expire", func() bool { return f.h.Sessions() == 1 })
	if got := f.ping(t, idle); got != 404 {
		t.Errorf("the expired session: %d, want 404", got)
	}
	f.tk.releaseAll()
	if r := await(t, done, "the busy request"); r.status != 200 {
		t.Errorf("the busy request: %s", r)
	}
	if got := f.ping(t, busy); got != 200 {
		t.Errorf("the session that was busy while the idle one expired: %d, want 200", got)
	}
}

// TestB2_ManySessionsStayBounded: 2,000 initializes that never DELETE, MaxSessions 100: the
// table, the heap and the goroutines stay bounded, and Close leaves nothing behind.
func TestB2_ManySessionsStayBounded(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	f := newFixture(t, &httpx.MCPOptions{MaxSessions: 100})
	const total, workers = 2000, 8
	goruntime.GC()
	var before goruntime.MemStats
	goruntime.ReadMemStats(&before)
	baseG := goruntime.NumGoroutine()

	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	maxSeen := 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += workers {
				resp, err := f.c.Do(f.request(context.Background(), http.MethodPost, body))
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					return
				}
				var b strings.Builder
				bufio.NewReader(resp.Body).WriteTo(&b)
				resp.Body.Close()
				n := f.h.Sessions()
				mu.Lock()
				if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") == "" {
					failures = append(failures, fmt.Sprintf("%d %s", resp.StatusCode, b.String()))
				}
				maxSeen = max(maxSeen, n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d initializes failed, e.g. %s", len(failures), failures[0])
	}
	if maxSeen > 100 || f.h.Sessions() > 100 {
		t.Errorf("Sessions() reached %d (now %d), want ≤ 100", maxSeen, f.h.Sessions())
	}
	// Evicted sessions stop on their own: the goroutines come back to a bound.
	waitFor(t, "the evicted sessions' goroutines to end", func() bool {
		return goruntime.NumGoroutine() <= baseG+100*8+50
	})
	goruntime.GC()
	var after goruntime.MemStats
	goruntime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 32<<20 {
		t.Errorf("the heap grew by %d MiB over 2,000 sessions bounded at 100", grown>>20)
	}
	t.Logf("heap %d KiB → %d KiB, goroutines %d → %d", before.HeapAlloc>>10, after.HeapAlloc>>10, baseG, goruntime.NumGoroutine())
	f.close()
	if err := goleak.Find(leaks); err != nil {
		t.Errorf("goroutines left after Close: %v", err)
	}
}

// TestB2_ProgressOnThePOSTStream: a legacy request's progress goes on its own POST's SSE
// stream, before its answer.
func TestB2_ProgressOnThePOSTStream(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	body := message(3, "tools/call", map[string]any{"name": "progress", "arguments": map[string]any{"steps": 2},
		"_meta": map[string]any{"progressToken": "p"}})
	resp, err := f.c.Do(f.request(context.Background(), http.MethodPost, body, "Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	sse := &sseReader{r: bufio.NewReader(resp.Body)}
	for i := 1; i <= 2; i++ {
		m := sse.nextMsg(t)
		var p struct {
			Token    string  `json:"progressToken"`
			Progress float64 `json:"progress"`
		}
		json.Unmarshal(m.Params, &p)
		if m.Method != "notifications/progress" || p.Token != "p" || p.Progress != float64(i) {
			t.Fatalf("event %d: %+v", i, m)
		}
	}
	if m := sse.nextMsg(t); string(m.ID) != "3" || m.text(t) != "done" {
		t.Fatalf("final %+v", m)
	}
}
