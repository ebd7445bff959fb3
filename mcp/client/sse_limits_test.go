package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// discovered answers server/discover as a 2026-07-28 server.
func discovered(w http.ResponseWriter, id json.RawMessage) {
	reply(w, 200, map[string]any{"id": id, "result": map[string]any{"resultType": "complete",
		"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}},
		"serverInfo": map[string]any{"name": "sse", "version": "1"}, "ttlMs": 0, "cacheScope": "private"}})
}

// writeLongLine writes prefix and then n bytes of one line, in pieces, until the client
// stops reading.
func writeLongLine(w http.ResponseWriter, prefix string, n int) {
	w.Write([]byte(prefix))
	piece := bytes.Repeat([]byte("a"), 64<<10)
	for written := 0; written < n; written += len(piece) {
		if _, err := w.Write(piece); err != nil {
			return
		}
	}
	w.Write([]byte("\n\n"))
}

// MCP 2026-07-28, Transports › Streamable HTTP: a response stream's event is read up to
// HTTPTransport.MaxMessage and no further; the call fails saying so.
func TestHTTP_AnEventOverMaxMessageFailsTheCall(t *testing.T) {
	var s scripted
	url := s.start(t, func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		if method == "server/discover" {
			discovered(w, id)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		writeLongLine(w, "event: message\ndata: ", 8<<20)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, &client.HTTPTransport{URL: url, MaxMessage: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.CallTool(ctx, "echo", map[string]any{"text": "hi"})
	if !errors.Is(err, client.ErrMessageTooLarge) || !strings.Contains(err.Error(), "MaxMessage") {
		t.Fatalf("CallTool: %v, want ErrMessageTooLarge saying to raise MaxMessage", err)
	}
}

// A JSON answer over MaxMessage fails the same way, instead of being cut and misread.
func TestHTTP_AJSONAnswerOverMaxMessageFailsTheCall(t *testing.T) {
	var s scripted
	url := s.start(t, func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		if method == "server/discover" {
			discovered(w, id)
			return
		}
		reply(w, 200, map[string]any{"id": id, "result": map[string]any{"content": []any{
			map[string]any{"type": "text", "text": strings.Repeat("a", 2<<20)}}}})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, &client.HTTPTransport{URL: url, MaxMessage: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.CallTool(ctx, "echo", map[string]any{"text": "hi"})
	if !errors.Is(err, client.ErrMessageTooLarge) {
		t.Fatalf("CallTool: %v, want ErrMessageTooLarge", err)
	}
}

// manyLines is an answer to id as one event whose JSON is spread over 20,000 data lines:
// the LFs that join them are JSON whitespace.
func manyLines(id json.RawMessage, text string) string {
	return fmt.Sprintf("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\n%sdata: \"result\":{\"content\":[{\"type\":\"text\",\"text\":%q}]}}\n\n",
		id, strings.Repeat("data: \n", 20_000), text)
}

// An event of 20,000 data lines reaches the call whole, over a response stream.
func TestHTTP_AnEventOfManyDataLinesIsOneMessage(t *testing.T) {
	var s scripted
	url := s.start(t, func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		if method == "server/discover" {
			discovered(w, id)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(": keep-alive\n\nid: 1\nretry: 10\ndata: \n\n" + manyLines(id, "many")))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.HTTP(url))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if tc, _ := res.Content[0].(*mcp.TextContent); tc == nil || tc.Text != "many" {
		t.Fatalf("result %#v", res.Content)
	}
}

// oldServer is a server of the deprecated HTTP+SSE transport (MCP 2024-11-05): a GET
// opens the event stream, whose first event names the URL to POST to; every answer comes
// on the stream. answer writes the events that answer a request; endpoint, when set,
// replaces the endpoint event; refuse, when set, may refuse a POST with an HTTP status.
type oldServer struct {
	endpoint func(w http.ResponseWriter)
	answer   func(id json.RawMessage, method string) string
	refuse   func(method string) int

	mu     sync.Mutex
	stream chan string
}

func (o *oldServer) start(t *testing.T) string {
	o.stream = make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			if o.endpoint != nil {
				o.endpoint(w)
				return
			}
			w.Write([]byte("event: endpoint\ndata: /messages?session=1\n\n"))
			w.(http.Flusher).Flush()
			for {
				select {
				case ev := <-o.stream:
					if _, err := w.Write([]byte(ev)); err != nil {
						return
					}
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		case r.Method == http.MethodPost && r.URL.Path == "/messages":
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			json.NewDecoder(r.Body).Decode(&m)
			if o.refuse != nil {
				if status := o.refuse(m.Method); status != 0 {
					http.Error(w, "refused "+m.Method, status)
					return
				}
			}
			w.WriteHeader(http.StatusAccepted)
			if m.ID != nil && m.Method != "" {
				o.stream <- o.answer(m.ID, m.Method)
			}
		default:
			w.WriteHeader(http.StatusMethodNotAllowed) // POST to the SSE URL: the old transport
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/sse"
}

// oldAnswers answers initialize, and tools/call with an event of 20,000 data lines.
func oldAnswers(id json.RawMessage, method string) string {
	if method == "initialize" {
		return fmt.Sprintf("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{},\"serverInfo\":{\"name\":\"old\",\"version\":\"1\"}}}\n\n", id)
	}
	return manyLines(id, "old many")
}

// The HTTP+SSE transport reads its stream with the same reader: an event of 20,000 data
// lines is one message.
func TestSSETransport_AnEventOfManyDataLinesIsOneMessage(t *testing.T) {
	o := &oldServer{answer: oldAnswers}
	url := o.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.HTTP(url), client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.ServerInfo().Name != "old" {
		t.Fatalf("server %+v", c.ServerInfo())
	}
	res, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if tc, _ := res.Content[0].(*mcp.TextContent); tc == nil || tc.Text != "old many" {
		t.Fatalf("result %#v", res.Content)
	}
}

// An HTTP+SSE endpoint event over MaxMessage fails Connect, saying so.
func TestSSETransport_AnEndpointEventOverMaxMessageFailsConnect(t *testing.T) {
	o := &oldServer{answer: oldAnswers, endpoint: func(w http.ResponseWriter) {
		writeLongLine(w, "event: endpoint\ndata: /", 8<<20)
	}}
	url := o.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, &client.HTTPTransport{URL: url, MaxMessage: 1 << 20}, client.WithVersion(mcp.Version20251125))
	if err == nil {
		c.Close()
		t.Fatal("Connect succeeded")
	}
	if !errors.Is(err, client.ErrMessageTooLarge) {
		t.Fatalf("Connect: %v, want ErrMessageTooLarge", err)
	}
}

// A message event over MaxMessage on the HTTP+SSE stream ends the connection: the call
// waiting for it fails, and the stream is read no further.
func TestSSETransport_AMessageOverMaxMessageEndsTheConnection(t *testing.T) {
	o := &oldServer{answer: func(id json.RawMessage, method string) string {
		if method == "initialize" {
			return oldAnswers(id, method)
		}
		return "event: message\ndata: " + strings.Repeat("a", 2<<20) + "\n\n"
	}}
	url := o.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, &client.HTTPTransport{URL: url, MaxMessage: 1 << 20}, client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.CallTool(ctx, "echo", map[string]any{"text": "hi"})
	if !errors.Is(err, client.ErrMessageTooLarge) {
		t.Fatalf("CallTool: %v, want ErrMessageTooLarge", err)
	}
}

// A POST of the HTTP+SSE transport that the server refuses (any status but 2xx: its answer
// will never come on the stream) fails the call it carried at once, with the server's
// status, instead of leaving it to wait for its context.
func TestSSETransport_ARefusedPostFailsItsCall(t *testing.T) {
	o := &oldServer{answer: oldAnswers, refuse: func(method string) int {
		if method == "tools/call" {
			return http.StatusServiceUnavailable
		}
		return 0
	}}
	url := o.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.HTTP(url), client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	_, err = c.CallTool(cctx, "echo", map[string]any{"text": "hi"})
	var he *client.HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusServiceUnavailable || !strings.Contains(he.Body, "refused tools/call") {
		t.Fatalf("a refused POST: %v, want the server's HTTP 503", err)
	}
}
