package httpx_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	sse := &sseReader{r: bufio.NewReader(resp.Body)}
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

// TestServe_ConnectionCap: with MaxConns connections open, Serve accepts no more; a client
// beyond the cap waits (in the listen backlog) and is served as soon as one closes.
func TestServe_ConnectionCap(t *testing.T) {
	f := newFixture(t, nil) // for its handler; served here by httpx.Serve
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- httpx.Serve(ctx, ln, f.h, &httpx.ServerOptions{MaxConns: 3, ShutdownTimeout: time.Second})
	}()
	defer func() {
		stop()
		if err := await(t, served, "Serve to return"); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	body, hdr := modernCall(1, "tools/list", nil)
	post := func(conn net.Conn) (int, error) {
		req := f.request(context.Background(), http.MethodPost, body, hdr...)
		req.URL.Host, req.Host = ln.Addr().String(), "127.0.0.1"
		if err := req.Write(conn); err != nil {
			return 0, err
		}
		status, _, _, err := response(conn, waitLong)
		return status, err
	}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := range 3 { // each served once, then kept open
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
		if status, err := post(conn); status != 200 {
			t.Fatalf("connection %d: %d %v", i, status, err)
		}
	}
	extra, err := net.Dial("tcp", ln.Addr().String()) // the kernel completes it; Serve does not accept it
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	answered := make(chan error, 1)
	go func() {
		status, err := post(extra)
		if err == nil && status != 200 {
			err = fmt.Errorf("status %d", status)
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("a fourth connection was served with 3 open and MaxConns 3 (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	held[0].Close()
	if err := await(t, answered, "the fourth connection to be served once one closed"); err != nil {
		t.Errorf("the fourth connection: %v", err)
	}
}
