package httpx_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/storetest"
	"github.com/relayrt/relay/mcp"
)

// openStream POSTs a block call with a progress token in a legacy session and returns the
// event stream, once its progress event (the first with data) has been read.
func openStream(t *testing.T, f *fixture, sid string, ctx context.Context) (*sseReader, *http.Response) {
	t.Helper()
	req := f.request(ctx, http.MethodPost, message(21, "tools/call", map[string]any{"name": "block",
		"arguments": map[string]any{"key": "R"}, "_meta": map[string]any{"progressToken": "tok"}}),
		"Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion)
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %q, want an event stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sse := &sseReader{r: bufio.NewReader(resp.Body)}
	primed := ""
	if b, err := sse.r.Peek(1); err == nil && len(b) > 0 {
		// the priming event comes first: read it alone to see its id
		for line, _ := sse.r.ReadString('\n'); line != "\n"; line, _ = sse.r.ReadString('\n') {
			if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id:"); ok {
				primed = strings.TrimSpace(id)
			}
			if r, ok := strings.CutPrefix(strings.TrimSpace(line), "retry:"); ok {
				sse.retry = strings.TrimSpace(r)
			}
		}
	}
	if primed == "" || sse.retry == "" {
		t.Fatalf("the stream did not start with a priming event (id %q, retry %q)", primed, sse.retry)
	}
	if m := sse.nextMsg(t); m.Method != "notifications/progress" || sse.lastID == "" || sse.lastID == primed {
		t.Fatalf("first event %+v with id %q (primed %q), want progress with an id of its own", m, sse.lastID, primed)
	}
	await(t, f.tk.started, "the handler to start")
	return sse, resp
}

// resumeGET resumes the session's stream after lastID.
func resumeGET(t *testing.T, f *fixture, sid, lastID string) (*sseReader, reply, *http.Response) {
	t.Helper()
	req := f.request(context.Background(), http.MethodGet, nil, "Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion,
		"Accept", "text/event-stream", "Last-Event-ID", lastID)
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var b strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&b)
		return nil, reply{status: resp.StatusCode, body: []byte(b.String())}, nil
	}
	return &sseReader{r: bufio.NewReader(resp.Body)}, reply{status: 200}, resp
}

// TestB2_AStreamThatBrokeIsResumedWithLastEventID: a request's event stream is primed (an id
// and a retry interval, no data) and its events carry ids; the client loses the stream, the
// request finishes meanwhile, and a GET with Last-Event-ID gets what it missed — the answer —
// and then ends (MCP 2025-11-25, Transports › Streamable HTTP › Resumability and Redelivery).
func TestB2_AStreamThatBrokeIsResumedWithLastEventID(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	sse, resp := openStream(t, f, sid, ctx)
	last := sse.lastID
	cancel() // the stream breaks
	resp.Body.Close()
	f.tk.releaseAll()
	await(t, f.tk.finished, "the handler to finish")
	again, r, resp2 := resumeGET(t, f, sid, last)
	if again == nil {
		t.Fatalf("GET with Last-Event-ID %s: %s", last, r)
	}
	defer resp2.Body.Close()
	if m := again.nextMsg(t); string(m.ID) != "21" || m.text(t) != "released R" {
		t.Fatalf("resumed: %+v, want the answer to 21", m)
	}
	if b, err := again.next(); err == nil {
		t.Errorf("the resumed stream goes on after the answer: %s", b)
	}
}

// TestB2_AStreamResumedMidRequestGoesOnLive: resumed while the request still runs, from its
// priming event: the GET replays what was sent (the progress) and then carries the rest live.
func TestB2_AStreamResumedMidRequestGoesOnLive(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sse, resp := openStream(t, f, sid, ctx)
	stream, _, _ := strings.Cut(sse.lastID, ".")
	cancel()
	resp.Body.Close()
	again, r, resp2 := resumeGET(t, f, sid, stream+".0")
	if again == nil {
		t.Fatalf("GET with Last-Event-ID %s.0: %s", stream, r)
	}
	defer resp2.Body.Close()
	if m := again.nextMsg(t); m.Method != "notifications/progress" {
		t.Fatalf("replayed: %+v, want the progress", m)
	}
	f.tk.releaseAll()
	if m := again.nextMsg(t); string(m.ID) != "21" || m.text(t) != "released R" {
		t.Fatalf("live: %+v, want the answer to 21", m)
	}
}

// TestB2_PollAfterClosesTheStreamAndTheClientResumes: with PollAfter the server closes a
// request's stream that has gone on that long without its answer (SSE polling); the client
// comes back with Last-Event-ID and gets the answer.
func TestB2_PollAfterClosesTheStreamAndTheClientResumes(t *testing.T) {
	// Long enough that the handler's progress reaches the POST first, even on a loaded machine.
	f := newFixture(t, &httpx.MCPOptions{PollAfter: 500 * time.Millisecond})
	sid := f.initialize(t, `{}`)
	sse, resp := openStream(t, f, sid, context.Background())
	defer resp.Body.Close()
	if b, err := sse.next(); err == nil {
		t.Fatalf("the stream went on past PollAfter: %s", b)
	}
	f.tk.releaseAll()
	again, r, resp2 := resumeGET(t, f, sid, sse.lastID)
	if again == nil {
		t.Fatalf("GET with Last-Event-ID %s: %s", sse.lastID, r)
	}
	defer resp2.Body.Close()
	if m := again.nextMsg(t); string(m.ID) != "21" {
		t.Fatalf("resumed: %+v, want the answer to 21", m)
	}
}

// TestB2_TheGETStreamIsResumedToo: the session's GET stream is primed and numbered across
// GETs; what was sent while no GET was open is replayed after Last-Event-ID.
func TestB2_TheGETStreamIsResumedToo(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	get, r, resp := resumeGET(t, f, sid, "")
	if get == nil {
		t.Fatalf("GET: %s", r)
	}
	add := func(name string) {
		mcp.AddTool(f.mcp, &mcp.Tool{Name: name, Description: "Added by the test."},
			func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
				return mcp.TextResult(name), nil
			})
	}
	add("first")
	if m := get.nextMsg(t); m.Method != "notifications/tools/list_changed" || !strings.HasPrefix(get.lastID, "g.") {
		t.Fatalf("GET stream: %+v with id %q, want tools/list_changed with a g. id", m, get.lastID)
	}
	last := get.lastID
	resp.Body.Close()
	add("second") // sent while no GET is open (or to one whose client has gone)
	again, r, resp2 := resumeGET(t, f, sid, last)
	if again == nil {
		t.Fatalf("GET with Last-Event-ID %s: %s", last, r)
	}
	defer resp2.Body.Close()
	if m := again.nextMsg(t); m.Method != "notifications/tools/list_changed" || again.lastID == last {
		t.Fatalf("replayed: %+v with id %q, want the list change sent while no GET was open", m, again.lastID)
	}
}

// TestB2_AnUnknownOrMalformedLastEventID: an id this server did not make is 400; one whose
// events are not kept is 404 (the client sends its request again).
func TestB2_AnUnknownOrMalformedLastEventID(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	if _, r, _ := resumeGET(t, f, sid, "nonsense"); r.status != http.StatusBadRequest {
		t.Errorf("Last-Event-ID nonsense: %s, want 400", r)
	}
	if _, r, _ := resumeGET(t, f, sid, "p99.3"); r.status != http.StatusNotFound {
		t.Errorf("Last-Event-ID of no stream: %s, want 404", r)
	}
}

// TestA_ModernStreamsHaveNoEventIDs: 2026-07-28 resumes nothing: its streams carry no ids and
// no priming event.
func TestA_ModernStreamsHaveNoEventIDs(t *testing.T) {
	f := newFixture(t, nil)
	body, hdr := modernCall(5, "tools/call", map[string]any{"name": "progress", "arguments": map[string]any{"steps": 2},
		"_meta": meta("progressToken", "t")})
	r := f.post(body, hdr...)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("got %s, want an event stream", r)
	}
	if strings.Contains(string(r.body), "id:") || strings.Contains(string(r.body), "retry:") {
		t.Errorf("a 2026-07-28 stream carries event ids: %s", r.body)
	}
}

// TestMemoryEventStore: the memory store passes the suite every EventStore passes (package
// fleet's Redis store runs it too).
func TestMemoryEventStore(t *testing.T) {
	storetest.EventStore(t, func(_ *testing.T, events int) httpx.EventStore {
		return httpx.NewMemoryEventStore(events, 1<<20, time.Hour)
	})
}

// TestMemoryEventStoreBounds: beyond the suite's bound in events, the memory store keeps at
// most its bytes, and none past its age; a stream whose early events went cannot be resumed
// from before them.
func TestMemoryEventStoreBounds(t *testing.T) {
	ctx := context.Background()
	b := httpx.NewMemoryEventStore(100, 10, time.Hour)
	for i := 1; i <= 4; i++ {
		b.Append(ctx, "s", "p1", uint64(i), []byte("abcd"))
	}
	if frames, ok, _ := b.After(ctx, "s", "p1", 2); !ok || len(frames) != 2 {
		t.Errorf("byte bound: After 2 = %q %v, want the last two (8 of 10 bytes)", frames, ok)
	}
	if _, ok, _ := b.After(ctx, "s", "p1", 1); ok {
		t.Error("byte bound: resumed from before the events it let go")
	}
	b.Forget(ctx, "s")
	if _, ok, _ := b.After(ctx, "s", "p1", 3); ok {
		t.Error("a forgotten session's stream is still resumable")
	}
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	a := httpx.NewMemoryEventStore(100, 1<<20, time.Minute)
	httpx.SetEventStoreClock(a, func() time.Time { return now })
	a.Append(ctx, "s", "g", 1, []byte("old"))
	now = now.Add(45 * time.Second)
	a.Append(ctx, "s", "g", 2, []byte("new"))
	now = now.Add(30 * time.Second) // the first is 75 s old, the second 30 s
	if _, ok, _ := a.After(ctx, "s", "g", 0); ok {
		t.Error("age bound: resumed from before an event older than the store's age")
	}
	if frames, ok, _ := a.After(ctx, "s", "g", 1); !ok || len(frames) != 1 || string(frames[0]) != "new" {
		t.Errorf("age bound: After 1 = %q %v, want the newer event", frames, ok)
	}
}

// TestB2_PollAfterOpensAStreamForAQuietRequest: a request that sends nothing before its
// answer gets, at PollAfter, an event stream with only its priming event, which closes; the
// client resumes it and gets the answer (the 0.2 suite's server-sse-polling scenario).
func TestB2_PollAfterOpensAStreamForAQuietRequest(t *testing.T) {
	f := newFixture(t, &httpx.MCPOptions{PollAfter: 50 * time.Millisecond})
	sid := f.initialize(t, `{}`)
	req := f.request(context.Background(), http.MethodPost, message(31, "tools/call", map[string]any{"name": "block",
		"arguments": map[string]any{"key": "Q"}}), "Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion)
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %q, want an event stream at PollAfter", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sse := &sseReader{r: bufio.NewReader(resp.Body)}
	if b, err := sse.next(); err == nil {
		t.Fatalf("an event with data on a quiet request's stream: %s", b)
	}
	if sse.lastID == "" || sse.retry == "" {
		t.Fatalf("the stream closed without a priming event (id %q, retry %q)", sse.lastID, sse.retry)
	}
	await(t, f.tk.started, "the handler to start")
	f.tk.releaseAll()
	again, r, resp2 := resumeGET(t, f, sid, sse.lastID)
	if again == nil {
		t.Fatalf("GET with Last-Event-ID %s: %s", sse.lastID, r)
	}
	defer resp2.Body.Close()
	if m := again.nextMsg(t); string(m.ID) != "31" || m.text(t) != "released Q" {
		t.Fatalf("resumed: %+v, want the answer to 31", m)
	}
}

// TestB2_ACancelledRequestLeavesNothingBehind: once a legacy client cancels a request, the
// session is done with it: its id may be used again (before, it stayed "in flight" for the
// session's life, and so did the session's record of it).
func TestB2_ACancelledRequestLeavesNothingBehind(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := f.request(ctx, http.MethodPost, message(11, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "C"}}),
		"Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion)
	done := f.doAsync(req)
	await(t, f.tk.started, "the handler to start")
	if r := f.legacyPost(sid, message(nil, "notifications/cancelled", map[string]any{"requestId": 11})); r.status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %s", r)
	}
	await(t, f.tk.cancelled, "the handler to see the cancel")
	await(t, done, "the cancelled POST to end")
	r := f.legacyPost(sid, message(11, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "again"}}))
	if m := r.rpc(t); m.Error != nil || m.text(t) != "again" {
		t.Fatalf("id 11 used again after its request was cancelled: %s", r)
	}
}

// TestB2_ASessionWhoseStreamWasPolledIsWorking: a request whose stream PollAfter closed still
// runs, and its client will resume it; the session is at work, not idle: a newcomer that needs
// its place is refused rather than given it.
func TestB2_ASessionWhoseStreamWasPolledIsWorking(t *testing.T) {
	f := newFixture(t, &httpx.MCPOptions{PollAfter: 50 * time.Millisecond, MaxSessions: 1})
	sid := f.initialize(t, `{}`)
	r := f.legacyPost(sid, message(41, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "W"}}))
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("the polled POST: %s", r)
	}
	await(t, f.tk.started, "the handler to start")
	body := []byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + legacyVersion +
		`","capabilities":{},"clientInfo":{"name":"newcomer","version":"1"}}}`)
	if r := f.post(body); r.status != http.StatusServiceUnavailable {
		t.Errorf("a newcomer while the only session works on a polled request: %s, want 503", r)
	}
	if got := f.ping(t, sid); got != http.StatusOK {
		t.Errorf("the working session answers %d, want 200: it was evicted", got)
	}
}

// TestB2_ACancelledRequestsStreamResumesWithoutError: a client may resume the stream of a
// request it has cancelled (the official TypeScript client does, when the stream was polled
// shut before its cancel). Nothing is owed, and the GET is not an error: it becomes the
// session's stream.
func TestB2_ACancelledRequestsStreamResumesWithoutError(t *testing.T) {
	f := newFixture(t, &httpx.MCPOptions{PollAfter: 50 * time.Millisecond})
	sid := f.initialize(t, `{}`)
	req := f.request(context.Background(), http.MethodPost, message(51, "tools/call", map[string]any{"name": "block",
		"arguments": map[string]any{"key": "X"}}), "Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion)
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sse := &sseReader{r: bufio.NewReader(resp.Body)}
	sse.next() // the polled stream: its priming event, then its end
	resp.Body.Close()
	if sse.lastID == "" {
		t.Fatalf("the polled POST was not primed (%q)", resp.Header.Get("Content-Type"))
	}
	await(t, f.tk.started, "the handler to start")
	if r := f.legacyPost(sid, message(nil, "notifications/cancelled", map[string]any{"requestId": 51})); r.status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %s", r)
	}
	await(t, f.tk.cancelled, "the handler to see the cancel")
	again, r, resp2 := resumeGET(t, f, sid, sse.lastID)
	if again == nil {
		t.Fatalf("GET with the cancelled request's Last-Event-ID %s: %s, want the session's stream", sse.lastID, r)
	}
	resp2.Body.Close()
}
