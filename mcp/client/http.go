package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/relayrt/relay/jsonrpc"
)

// HTTPTransport speaks Streamable HTTP to one MCP endpoint (MCP 2026-07-28 and 2025-11-25,
// Transports › Streamable HTTP): one POST per message, each answered with one JSON object
// or an SSE stream whose last message is the answer.
type HTTPTransport struct {
	// URL is the endpoint, e.g. http://127.0.0.1:8080/mcp.
	URL string
	// Client makes the requests. When nil, each Streamable HTTP connection (Connect) has a
	// client of its own, whose transport has http.DefaultTransport's settings but for the
	// idle connections it keeps: up to DefaultMaxIdleConnsPerHost to a host
	// (http.DefaultTransport keeps 2), so that calls made at once reuse their connections
	// instead of opening new ones. They close with the connection (Client.Close), or after
	// 90 s unused. A program that has replaced http.DefaultTransport with a RoundTripper of
	// another type gets that one, as it is; so does a server of the HTTP+SSE transport.
	Client *http.Client
	// Header is added to every request (Authorization, say).
	Header http.Header
	// OAuth, when set, authorizes the requests with OAuth 2.1 once the server answers 401.
	OAuth *OAuth
	// MaxMessage is the largest message read from the server, a JSON body or one event of
	// an event stream (DefaultMaxMessage if <= 0). A larger one is refused before it is
	// read whole: the call fails with an error wrapping ErrMessageTooLarge.
	MaxMessage int
}

// DefaultMaxMessage is the largest message an HTTPTransport reads unless told otherwise.
const DefaultMaxMessage = 64 << 20

// DefaultMaxIdleConnsPerHost is how many idle connections to a host the client of an
// HTTPTransport without a Client keeps open for its next requests: as many calls as a
// connection has in flight at once reuse theirs, up to this many. Beyond it, a request
// that ends closes its connection and a new one is dialled for the next.
const DefaultMaxIdleConnsPerHost = 256

// ownTransport returns a transport for a connection of an HTTPTransport without a Client
// (see HTTPTransport.Client), or nil when http.DefaultTransport is not an *http.Transport.
func ownTransport() *http.Transport {
	dt, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil
	}
	t := dt.Clone()
	t.MaxIdleConns = 0 // no bound across hosts: the connection's requests go to one
	t.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	return t
}

// maxMessage is t.MaxMessage, or its default.
func (t *HTTPTransport) maxMessage() int {
	if t.MaxMessage > 0 {
		return t.MaxMessage
	}
	return DefaultMaxMessage
}

// HTTP returns a transport to the endpoint url.
func HTTP(url string) *HTTPTransport { return &HTTPTransport{URL: url} }

// HTTPError is the answer to a POST that was neither a JSON-RPC message nor accepted.
type HTTPError struct {
	Status int
	Body   string
}

// Error says the status and the body.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("mcp/client: HTTP %d: %s", e.Status, strings.TrimSpace(e.Body))
}

// sessionEndedError is a 404 to a request of the session id: the server ended it.
type sessionEndedError struct{ id string }

func (e *sessionEndedError) Error() string {
	return "mcp/client: the server ended session " + e.id + " (HTTP 404)"
}

// currentSession returns the session id of the initialize generation, "" when there is
// none.
func (h *httpConn) currentSession() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.session
}

type httpConn struct {
	t   *HTTPTransport
	hc  *http.Client
	own *http.Transport // hc's own transport, without HTTPTransport.Client; closed with the conn

	// The server's requests on a response stream are answered by goroutines of their own,
	// at most maxServing at once, which close ends and waits for.
	in        *inbox
	slots     chan struct{}
	serving   sync.WaitGroup
	closed    context.Context
	endServes context.CancelFunc

	mu      sync.Mutex
	session string // Mcp-Session-Id of the initialize generation
}

// httpClient is the client the transport's requests go through: Client, authorized with
// OAuth when it is set. Without a Client, it goes through own, or http.DefaultTransport when
// own is nil.
func (t *HTTPTransport) httpClient(own *http.Transport) *http.Client {
	hc := t.Client
	switch {
	case hc != nil:
	case own != nil:
		hc = &http.Client{Transport: own}
	default:
		hc = &http.Client{}
	}
	if t.OAuth != nil {
		wrapped := *hc
		wrapped.Transport = t.OAuth.roundTripper(hc.Transport, t.URL)
		hc = &wrapped
	}
	return hc
}

func (t *HTTPTransport) dial(ctx context.Context, in *inbox) (conn, error) {
	var own *http.Transport
	if t.Client == nil {
		own = ownTransport()
	}
	h := &httpConn{t: t, hc: t.httpClient(own), own: own, in: in, slots: make(chan struct{}, maxServing)}
	h.closed, h.endServes = context.WithCancel(context.Background())
	return h, nil
}

func (h *httpConn) newRequest(ctx context.Context, method string, body []byte, r *outgoing) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.t.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range h.t.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.version != "" {
		req.Header.Set("MCP-Protocol-Version", r.version)
	}
	if r.modern {
		req.Header.Set("Mcp-Method", r.method)
		if r.name != "" {
			req.Header.Set("Mcp-Name", encodeHeaderValue(r.name))
		}
		for k, v := range r.headers {
			req.Header.Set(k, v)
		}
	} else {
		h.mu.Lock()
		if h.session != "" {
			req.Header.Set("Mcp-Session-Id", h.session)
		}
		h.mu.Unlock()
	}
	return req, nil
}

func (h *httpConn) do(req *http.Request) (*http.Response, error) {
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		h.mu.Lock()
		h.session = sid
		h.mu.Unlock()
	}
	return resp, nil
}

func (h *httpConn) call(ctx context.Context, r *outgoing) (json.RawMessage, error) {
	req, err := h.newRequest(ctx, http.MethodPost, jsonrpc.AppendRequest(nil, r.id, r.method, r.params), r)
	if err != nil {
		return nil, err
	}
	res, err := h.answer(ctx, req, r)
	if err != nil && ctx.Err() != nil {
		if !r.modern {
			// The initialize generation: a disconnect is not a cancellation, so say it
			// (MCP 2025-11-25, Utilities › Cancellation). 2026-07-28 needs nothing more
			// than the closed stream (Basic › Patterns › Cancellation).
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			h.notify(cctx, &outgoing{method: "notifications/cancelled", params: cancelParams(r.id, "the caller went away"),
				version: r.version})
			cancel()
		}
		return nil, ctx.Err()
	}
	return res, err
}

// answer sends req and reads the answer to r from its response.
func (h *httpConn) answer(ctx context.Context, req *http.Request, r *outgoing) (json.RawMessage, error) {
	resp, err := h.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if sid := req.Header.Get("Mcp-Session-Id"); resp.StatusCode == http.StatusNotFound && sid != "" {
		// MCP 2025-11-25, Transports › Session Management: the server ended the session.
		h.mu.Lock()
		if h.session == sid {
			h.session = ""
		}
		h.mu.Unlock()
		return nil, &sessionEndedError{id: sid}
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusOK && ct == "text/event-stream":
		return h.readEvents(ctx, resp.Body, r)
	case ct == "application/json":
		max := h.t.maxMessage()
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
		if err != nil {
			return nil, err
		}
		if len(body) > max {
			return nil, fmt.Errorf("%w: a JSON answer of more than %d bytes; raise HTTPTransport.MaxMessage if the server's messages are this large",
				ErrMessageTooLarge, max)
		}
		m, derr := jsonrpc.Decode(body)
		if derr == nil && m.Kind == jsonrpc.KindResponse {
			if m.Error != nil {
				return nil, decodeError(m.Error)
			}
			if resp.StatusCode == http.StatusOK {
				if !m.ID.Equal(r.id) {
					return nil, fmt.Errorf("mcp/client: the server answered id %s to request %s", m.ID, r.id)
				}
				return append(json.RawMessage(nil), m.Result...), nil
			}
		}
		return nil, &HTTPError{Status: resp.StatusCode, Body: string(body)}
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return nil, &HTTPError{Status: resp.StatusCode, Body: string(body)}
}

// readEvents reads an SSE stream until the answer to r: notifications go to r.note, the
// requests of a legacy server are answered. A stream of the initialize generation that ends
// without the answer, after an event id, is resumed with GET and Last-Event-ID once its
// retry delay has passed (MCP 2025-11-25, Transports › Resumability and Redelivery), at
// most 10 times.
func (h *httpConn) readEvents(ctx context.Context, body io.Reader, r *outgoing) (json.RawMessage, error) {
	var lastID string
	retry := time.Second
	for attempt := 0; ; attempt++ {
		res, done, err := h.events(ctx, body, r, &lastID, &retry)
		if done || err != nil {
			return res, err
		}
		if r.modern || lastID == "" || attempt >= 10 {
			return nil, fmt.Errorf("mcp/client: the server closed the event stream of %s before answering", r.method)
		}
		if !pause(ctx, retry) {
			return nil, ctx.Err()
		}
		resp, err := h.resume(ctx, r, lastID)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body = resp.Body
	}
}

// resume GETs an event stream of the session (MCP 2025-11-25, Transports › Streamable
// HTTP): the one that goes on after the event lastID (Resumability and Redelivery), or,
// lastID "", the session's own stream (Listening for Messages from the Server). An answer
// but 200 is an *HTTPError: 405, the server offers no such stream; 404, the session ended.
func (h *httpConn) resume(ctx context.Context, r *outgoing, lastID string) (*http.Response, error) {
	req, err := h.newRequest(ctx, http.MethodGet, nil, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := h.do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, &HTTPError{Status: resp.StatusCode, Body: fmt.Sprintf("opening an event stream (Last-Event-ID %q): %s", lastID, body)}
	}
	return resp, nil
}

// The bounds of the reconnection time a server gives (its events' retry field): a server
// that says 0 and closes its streams at once would have the client reconnect in a tight
// loop, and one that says a year would stall a call's resume for as long as its context
// allows.
const (
	minReconnect = 100 * time.Millisecond
	maxReconnect = time.Minute
)

// reconnectDelay is the wait before a stream is opened again, the server's retry held
// within minReconnect and maxReconnect.
func reconnectDelay(retry time.Duration) time.Duration {
	return min(max(retry, minReconnect), maxReconnect)
}

// pause waits reconnectDelay(d), or until ctx ends: false then.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(reconnectDelay(d))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// events reads one stream; done reports that the answer (or an error answer) was read.
// lastID and retry are the stream's last event id and reconnection time, carried from
// stream to stream. An event over the transport's MaxMessage ends the stream with an error
// wrapping ErrMessageTooLarge; any other end of the stream is no error.
func (h *httpConn) events(ctx context.Context, body io.Reader, r *outgoing, lastID *string, retry *time.Duration) (res json.RawMessage, done bool, err error) {
	sr := newSSEReader(body, h.t.maxMessage())
	sr.lastID, sr.retry = *lastID, *retry
	defer func() { *lastID, *retry = sr.lastID, sr.retry }()
	for {
		_, data, rerr := sr.next()
		switch {
		case errors.Is(rerr, ErrMessageTooLarge):
			return nil, false, fmt.Errorf("mcp/client: reading an event stream: %w", rerr)
		case rerr != nil && ctx.Err() != nil:
			return nil, false, ctx.Err()
		case rerr != nil:
			return nil, false, nil
		}
		if res, done, err = h.event(ctx, data, r); done || err != nil {
			return res, done, err
		}
	}
}

// event handles one message of an SSE stream.
func (h *httpConn) event(ctx context.Context, data []byte, r *outgoing) (json.RawMessage, bool, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, false, nil // a priming event
	}
	m, err := jsonrpc.Decode(data)
	if err != nil && m.Kind != jsonrpc.KindResponse {
		return nil, false, nil
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		if !m.ID.Equal(r.id) {
			return nil, false, nil
		}
		if m.Error != nil {
			return nil, true, decodeError(m.Error)
		}
		return append(json.RawMessage(nil), m.Result...), true, nil
	case jsonrpc.KindNotification:
		switch {
		case h.in.elicitationComplete(m.Method, m.Params):
		case r.note != nil && (r.id != nil && !unasked(m.Method) || subscriptionOf(m.Params) != nil):
			r.note(m.Method, append(json.RawMessage(nil), m.Params...))
		case unasked(m.Method):
			h.in.notified(m.Method, append(json.RawMessage(nil), m.Params...))
		}
	case jsonrpc.KindRequest:
		h.answerServer(ctx, m, r.version)
	}
	return nil, false, nil
}

// answerServer answers a request the server made on a response stream (the initialize
// generation: MCP 2025-11-25, Transports › Streamable HTTP › Sending Messages to the
// Client) through the client's handlers, in a goroutine of its own, and POSTs the answer.
// The handler's context ends with the call that carried the request, or with close.
func (h *httpConn) answerServer(ctx context.Context, m jsonrpc.Message, version string) {
	// m is read out of the stream's buffer, which the next event overwrites while the
	// handler runs: what the goroutine keeps is copied.
	id, params := append(jsonrpc.ID(nil), m.ID...), append(json.RawMessage(nil), m.Params...)
	post := func(ctx context.Context, frame []byte) {
		req, err := h.newRequest(ctx, http.MethodPost, frame, &outgoing{version: version})
		if err != nil {
			return
		}
		if resp, err := h.do(req); err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
		}
	}
	select {
	case h.slots <- struct{}{}:
	default:
		post(ctx, jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "the client is answering too many requests at once: ask again later"}))
		return
	}
	h.mu.Lock() // close ends h.closed under mu: no goroutine starts once it waits for them
	if h.closed.Err() != nil {
		h.mu.Unlock()
		<-h.slots
		return
	}
	h.serving.Add(1)
	h.mu.Unlock()
	hctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.closed, cancel)
	go func() {
		defer h.serving.Done()
		defer func() { <-h.slots }()
		defer cancel()
		defer stop()
		res, err := h.in.serve(hctx, m.Method, params)
		if hctx.Err() == nil {
			post(hctx, reply(id, res, err))
		}
	}()
}

// listen opens the session's standalone event stream (MCP 2025-11-25, Transports ›
// Streamable HTTP › Listening for Messages from the Server), on which a server of the
// initialize generation sends the requests and notifications that belong to no call of
// ours, and keeps it open until close, resuming it with Last-Event-ID when it ends. A
// server that offers none (405) is left alone. The first GET is answered before listen
// returns, or ctx ends: a server asks on the stream only once it is open.
func (h *httpConn) listen(ctx context.Context, version string) {
	h.mu.Lock()
	if h.closed.Err() != nil {
		h.mu.Unlock()
		return
	}
	h.serving.Add(1)
	h.mu.Unlock()
	r := &outgoing{version: version}
	var lastID string
	// open GETs the stream; gone reports that there is nothing to resume: the server
	// offers no stream or ended the session (any answer but 200), or a new session has a
	// stream of its own.
	session := h.currentSession()
	open := func() (resp *http.Response, gone bool) {
		if h.currentSession() != session {
			return nil, true
		}
		resp, err := h.resume(h.closed, r, lastID)
		var he *HTTPError
		return resp, errors.As(err, &he) || (err != nil && h.closed.Err() != nil)
	}
	ready := make(chan struct{})
	go func() {
		defer h.serving.Done()
		resp, gone := open()
		close(ready)
		retry := time.Second
		for failures := 0; !gone && failures < 10; {
			if resp != nil {
				failures = 0
				_, _, err := h.events(h.closed, resp.Body, r, &lastID, &retry)
				resp.Body.Close()
				if errors.Is(err, ErrMessageTooLarge) {
					return // resuming would bring the same event again
				}
			} else {
				failures++ // the network: try again
			}
			if !pause(h.closed, retry) {
				return
			}
			resp, gone = open()
		}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
	}
}

func (h *httpConn) notify(ctx context.Context, r *outgoing) error {
	req, err := h.newRequest(ctx, http.MethodPost, jsonrpc.AppendNotification(nil, r.method, r.params), r)
	if err != nil {
		return err
	}
	resp, err := h.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode >= 300 {
		return &HTTPError{Status: resp.StatusCode, Body: string(body)}
	}
	return nil
}

// close ends a session of the initialize generation with DELETE (MCP 2025-11-25,
// Transports › Session Management); a server may refuse it, which changes nothing here.
func (h *httpConn) close() error {
	h.mu.Lock()
	h.endServes()
	h.mu.Unlock()
	h.serving.Wait()
	h.mu.Lock()
	sid := h.session
	h.session = ""
	h.mu.Unlock()
	if sid != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, h.t.URL, nil)
		if err == nil {
			for k, vs := range h.t.Header {
				req.Header[k] = append([]string(nil), vs...)
			}
			req.Header.Set("Mcp-Session-Id", sid)
			if resp, err := h.hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	if rt, ok := h.hc.Transport.(*oauthRoundTripper); ok {
		rt.refreshes.Wait() // a token refresh under way: at most refreshTimeout
	}
	h.hc.CloseIdleConnections()
	if h.own != nil { // under OAuth's RoundTripper, which hc cannot ask to
		h.own.CloseIdleConnections()
	}
	return nil
}
