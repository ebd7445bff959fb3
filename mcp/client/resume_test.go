package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// resumable is a server of the initialize generation whose event streams end early:
// a tools/call's stream ends after its priming event, the session's GET stream after its
// first event; each GET is given to get, which answers it.
type resumable struct {
	get func(w http.ResponseWriter, r *http.Request, n int)

	mu     sync.Mutex
	gets   []http.Header
	callID json.RawMessage // the id of the last tools/call
}

func (s *resumable) start(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			s.mu.Lock()
			s.gets = append(s.gets, r.Header.Clone())
			n := len(s.gets)
			s.mu.Unlock()
			s.get(w, r, n)
			return
		}
		if r.Method == http.MethodDelete {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &m)
		w.Header().Set("Mcp-Session-Id", "s1")
		switch m.Method {
		case "initialize":
			reply(w, 200, map[string]any{"id": m.ID, "result": map[string]any{"protocolVersion": mcp.Version20251125,
				"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "resumable", "version": "1"}}})
		case "tools/call":
			s.mu.Lock()
			s.callID = m.ID
			s.mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: call-0\nretry: 10\ndata: \n\n") // then the stream ends, unanswered
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func (s *resumable) headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.gets...)
}

func sse(w http.ResponseWriter, events string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, events)
	w.(http.Flusher).Flush()
}

// MCP 2025-11-25, Transports › Resumability and Redelivery: a call's stream that ends
// before its answer, after an event id, is resumed with GET and Last-Event-ID in the
// session, once the retry delay has passed; the answer comes on the resumed stream.
func TestHTTP_ACallsStreamIsResumedWithLastEventID(t *testing.T) {
	var s *resumable
	s = &resumable{get: func(w http.ResponseWriter, r *http.Request, n int) {
		if r.Header.Get("Last-Event-ID") != "call-0" {
			w.WriteHeader(http.StatusMethodNotAllowed) // no stream of the session's own
			return
		}
		s.mu.Lock()
		id := s.callID
		s.mu.Unlock()
		sse(w, `id: call-1`+"\n"+`data: {"jsonrpc":"2.0","id":`+string(id)+`,"result":{"content":[{"type":"text","text":"resumed"}]}}`+"\n\n")
	}}
	url := s.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.HTTP(url), client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if tc, _ := res.Content[0].(*mcp.TextContent); tc == nil || tc.Text != "resumed" {
		t.Fatalf("result %#v", res.Content)
	}
	var resumed http.Header
	for _, h := range s.headers() {
		if h.Get("Last-Event-ID") != "" {
			resumed = h
		}
	}
	if resumed == nil || resumed.Get("Mcp-Session-Id") != "s1" || resumed.Get("Accept") != "text/event-stream" {
		t.Fatalf("the resuming GET's headers %v, want Last-Event-ID call-0 in session s1, accepting text/event-stream", resumed)
	}
}

// The session's own stream (GET), ended by the server, is opened again with the
// Last-Event-ID of its last event; once the server answers 405, it is left alone.
func TestHTTP_TheSessionsStreamIsResumedWithLastEventID(t *testing.T) {
	third := make(chan struct{})
	s := &resumable{get: func(w http.ResponseWriter, r *http.Request, n int) {
		switch n {
		case 1:
			sse(w, "id: g-1\nretry: 10\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		case 2:
			sse(w, "id: g-2\nretry: 10\n\n")
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
			if n == 3 {
				close(third)
			}
		}
	}}
	url := s.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.HTTP(url), client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-third:
	case <-ctx.Done():
		t.Fatal("the stream was not opened a third time")
	}
	c.Close() // waits for the stream's goroutine: no GET after it
	got := s.headers()
	if len(got) != 3 {
		t.Fatalf("%d GETs, want 3: the first, two resumptions, and none after 405", len(got))
	}
	for i, want := range []string{"", "g-1", "g-2"} {
		if id := got[i].Get("Last-Event-ID"); id != want || got[i].Get("Mcp-Session-Id") != "s1" {
			t.Errorf("GET %d: Last-Event-ID %q session %q, want %q in s1", i+1, id, got[i].Get("Mcp-Session-Id"), want)
		}
	}
}
