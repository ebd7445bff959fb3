package httpx_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
)

// TestServe_ShutdownAnswersListenStreams: when Serve's context ends, a subscriptions/listen
// stream open on its handler is answered with the complete result DIGEST A9 asks of a
// graceful end, as shutdown begins, instead of being cut off at the shutdown timeout.
func TestServe_ShutdownAnswersListenStreams(t *testing.T) {
	tk := &tracker{started: make(chan string, 16), cancelled: make(chan string, 16), finished: make(chan string, 16),
		release: make(chan struct{}), allIn: make(chan struct{})}
	h := httpx.NewMCPHandler(newMCPServer(tk), &httpx.MCPOptions{Logger: zap.NewNop()})
	defer h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- httpx.Serve(ctx, ln, h, &httpx.ServerOptions{ShutdownTimeout: 3 * time.Second}) }()

	body, hdr := modernCall(9, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sse := &sseReader{bufio.NewReader(resp.Body)}
	if m := sse.nextMsg(t); m.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first event %+v, want the acknowledgement", m)
	}
	cancel()
	m := sse.nextMsg(t)
	var res struct {
		ResultType string                     `json:"resultType"`
		Meta       map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(m.Result, &res)
	if string(m.ID) != "9" || res.ResultType != "complete" || string(res.Meta[mcp.MetaSubscriptionID]) != "9" {
		t.Fatalf("the stream's last event %+v, want a complete result for subscription 9", m)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v", err)
	}
}
