package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/relayrt/relay/jsonrpc"
)

// The deprecated HTTP+SSE transport of 2024-11-05, which servers still serve (MCP
// 2025-11-25, Transports › Backwards Compatibility): the client GETs the URL, the server's
// first event, "endpoint", names the URL to POST messages to, and every message of the
// server (answers, notifications, requests) comes on the GET's event stream. It is a
// stream of frames both ways, so it is a stream conn: a reader actor over the events, a
// writer actor that POSTs each frame.

// isOldTransport reports whether err, the failure of a POST of initialize, is what a server
// of the old transport answers to one: 400, 404 or 405 with no JSON-RPC error in the body.
func isOldTransport(err error) bool {
	var he *HTTPError
	if !errors.As(err, &he) {
		return false
	}
	switch he.Status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		return true
	}
	return false
}

// dialSSE opens the old transport at t.URL: it waits (until ctx ends) for the endpoint
// event, then returns a stream conn over it.
func (t *HTTPTransport) dialSSE(ctx context.Context, in *inbox) (conn, error) {
	hc := t.httpClient(nil)
	life, end := context.WithCancel(context.Background()) // the GET lasts as long as the conn
	req, err := http.NewRequestWithContext(life, http.MethodGet, t.URL, nil)
	if err != nil {
		end()
		return nil, err
	}
	for k, vs := range t.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Accept", "text/event-stream")
	stop := context.AfterFunc(ctx, end) // until the endpoint is known, ctx bounds the wait
	resp, err := hc.Do(req)
	if err != nil {
		end()
		return nil, fmt.Errorf("mcp/client: opening the HTTP+SSE transport: %w", err)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		resp.Body.Close()
		end()
		return nil, fmt.Errorf("mcp/client: %s is neither a Streamable HTTP endpoint nor an HTTP+SSE one (GET: HTTP %d, %s)",
			t.URL, resp.StatusCode, ct)
	}
	events := newSSEReader(resp.Body, t.maxMessage())
	var endpoint *url.URL
	for endpoint == nil {
		name, data, err := events.next()
		if err != nil {
			resp.Body.Close()
			end()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("mcp/client: the HTTP+SSE stream ended before its endpoint event: %w", err)
		}
		if name == "endpoint" {
			if endpoint, err = req.URL.Parse(string(bytes.TrimSpace(data))); err != nil {
				resp.Body.Close()
				end()
				return nil, fmt.Errorf("mcp/client: the HTTP+SSE endpoint %q: %w", data, err)
			}
			if !sameOrigin(endpoint, t.URL) {
				resp.Body.Close()
				end()
				return nil, fmt.Errorf("mcp/client: the HTTP+SSE endpoint %s is on another origin than %s: refusing to send messages there", endpoint, t.URL)
			}
		}
	}
	if !stop() { // ctx ended while the endpoint arrived
		resp.Body.Close()
		return nil, ctx.Err()
	}

	frames := make(chan []byte, 16)
	s := newStream(frames, in)
	readerDone := make(chan struct{})
	go func() { // the reader actor: each message event is a frame
		defer close(readerDone)
		defer close(frames)
		for {
			name, data, err := events.next()
			if errors.Is(err, ErrMessageTooLarge) {
				s.cause = fmt.Errorf("mcp/client: reading the HTTP+SSE stream: %w", err)
			}
			if err != nil {
				return
			}
			if name == "" || name == "message" {
				select {
				case frames <- append([]byte(nil), data...): // data is the reader's until its next event
				case <-life.Done():
					return
				}
			}
		}
	}()
	writerDone := make(chan struct{})
	go func() { // the writer actor: one POST per frame, in order
		defer close(writerDone)
		for f := range s.out {
			if life.Err() != nil {
				continue // closing: drain what is queued
			}
			post, err := http.NewRequestWithContext(life, http.MethodPost, endpoint.String(), bytes.NewReader(f))
			if err != nil {
				continue
			}
			for k, vs := range t.Header {
				post.Header[k] = append([]string(nil), vs...)
			}
			post.Header.Set("Content-Type", "application/json")
			r, err := hc.Do(post)
			if err == nil {
				body, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
				r.Body.Close()
				if r.StatusCode/100 != 2 {
					err = &HTTPError{Status: r.StatusCode, Body: string(body)}
				}
			}
			if err != nil && life.Err() == nil {
				// The answer will not come on the stream: the call it carried fails now.
				if m, derr := jsonrpc.Decode(f); derr == nil && m.Kind == jsonrpc.KindRequest {
					s.tell(routeMsg{id: string(m.ID), failed: err})
				}
			}
		}
	}()
	s.stop = func() error {
		// The writer has been given everything (out is closed): let it send what is
		// queued, for a moment, then end the GET and any POST still on its way.
		select {
		case <-writerDone:
		case <-time.After(time.Second):
		}
		end()
		resp.Body.Close()
		<-readerDone
		<-writerDone
		hc.CloseIdleConnections()
		return nil
	}
	return s, nil
}
