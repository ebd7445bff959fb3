package httpx_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestB2_JSONRPCErrorsTravelInHTTP200: inside an initialize-generation session a JSON-RPC
// error is a well-formed response and travels in HTTP 200 (MCP 2025-11-25, Transports ›
// Streamable HTTP); a 404 there means "your session is gone" to a client, and a 400 loses
// the JSON-RPC code in the official SDKs' transport errors. 2026-07-28 requests keep their
// status mapping (TestA13 tests).
func TestB2_JSONRPCErrorsTravelInHTTP200(t *testing.T) {
	f := newFixture(t, nil)
	sid := f.initialize(t, `{}`)
	for _, c := range []struct {
		name, body string
		code       int
	}{
		{"unknown method", string(message(1, "nope/nope", nil)), -32601},
		{"unknown tool", string(message(2, "tools/call", map[string]any{"name": "nope", "arguments": map[string]any{}})), -32602},
	} {
		r := f.legacyPost(sid, []byte(c.body), "Accept", "application/json")
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: HTTP %d %q, want 200 application/json", c.name, r.status, r.header.Get("Content-Type"))
			continue
		}
		if got := r.rpc(t).code(); got != c.code {
			t.Errorf("%s: code %d, want %d (%s)", c.name, got, c.code, r.body)
		}
	}
}

// TestB2_ACancelledRequestsPOSTEndsAsARequestsDoes: once a legacy client cancels a request
// (notifications/cancelled), the request's POST ends as a client expects a request's POST to:
// a text/event-stream that closes with nothing on it, or, for a client that takes only JSON,
// application/json with an error for the request's id — never 200 or 204 with no content type,
// which the official TypeScript client reports as a transport error on every cancel.
func TestB2_ACancelledRequestsPOSTEndsAsARequestsDoes(t *testing.T) {
	for _, accept := range []string{"application/json, text/event-stream", "application/json"} {
		t.Run(accept, func(t *testing.T) {
			f := newFixture(t, nil)
			sid := f.initialize(t, `{}`)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			req := f.request(ctx, http.MethodPost, message(11, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "C"}}),
				"Mcp-Session-Id", sid, "MCP-Protocol-Version", legacyVersion, "Accept", accept)
			type result struct {
				r   reply
				err error
			}
			done := make(chan result, 1)
			go func() {
				r, err := f.tryDo(req)
				done <- result{r, err}
			}()
			await(t, f.tk.started, "the handler to start")
			if r := f.legacyPost(sid, message(nil, "notifications/cancelled", map[string]any{"requestId": 11})); r.status != http.StatusAccepted {
				t.Fatalf("notifications/cancelled: got %s, want 202", r)
			}
			await(t, f.tk.cancelled, "the handler to see the cancel")
			got := await(t, done, "the cancelled POST to end")
			if got.err != nil {
				t.Fatalf("the cancelled POST: %v", got.err)
			}
			ct := got.r.header.Get("Content-Type")
			switch {
			case got.r.status != http.StatusOK:
				t.Errorf("HTTP %d, want 200", got.r.status)
			case strings.Contains(accept, "text/event-stream"):
				if !strings.HasPrefix(ct, "text/event-stream") || strings.Contains(string(got.r.body), "data:") {
					t.Errorf("Content-Type %q, body %q: want an SSE stream that closes with no event", ct, got.r.body)
				}
			default:
				if !strings.HasPrefix(ct, "application/json") || !strings.Contains(string(got.r.body), `"id":11`) || !strings.Contains(string(got.r.body), `"error"`) {
					t.Errorf("Content-Type %q, body %q: want a JSON error for id 11", ct, got.r.body)
				}
			}
		})
	}
}

// TestA13_AVersionlessNotificationIsAccepted: a notification with no session and no
// version (the official Go SDK sends its 2026-07-28 notifications/cancelled so) is accepted
// and ignored, 202: nothing is owed for it, and an error would reach that client as a failure
// of its next call. A request so is still refused.
func TestA13_AVersionlessNotificationIsAccepted(t *testing.T) {
	f := newFixture(t, nil)
	r := f.post(message(nil, "notifications/cancelled", map[string]any{"requestId": 4, "reason": "unsubscribed"}))
	if r.status != http.StatusAccepted || len(r.body) != 0 {
		t.Errorf("a notification with no session or version: %s, want 202 and no body", r)
	}
	if r := f.post(message(5, "tools/list", nil)); r.status != http.StatusBadRequest {
		t.Errorf("a request with no session or version: %s, want 400", r)
	}
}
