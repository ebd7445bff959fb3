// Package httpload drives an MCP server over Streamable HTTP with
// tools/call echo requests, of protocol version 2026-07-28 or of the
// initialize generation, on a fixed number of concurrent keep-alive
// connections, and measures throughput and latency.
//
// By default every request is a self-contained 2026-07-28 request, as a
// stateless server needs: no initialize, no session. It carries the headers
//
//	Content-Type: application/json
//	Accept: application/json, text/event-stream
//	MCP-Protocol-Version: 2026-07-28
//	Mcp-Method: tools/call
//	Mcp-Name: TOOL
//
// and the body
//
//	{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":TOOL,
//	 "arguments":{"text":TEXT},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
//	 "io.modelcontextprotocol/clientCapabilities":{}}}}
//
// where TOOL is Config.Tool, echo by default. Every request is the same bytes, id 1 included: each POST is an exchange of
// its own, and without sessions there is nothing for two requests' ids to
// collide in.
//
// With Config.Sessions above zero, the client speaks the initialize
// generation instead, as servers and proxies built on earlier SDKs do: it
// opens that many sessions before its first request, each with initialize
// (protocol version LegacyProtocolVersion) and notifications/initialized, and
// then sends
//
//	Content-Type: application/json
//	Accept: application/json, text/event-stream
//	MCP-Protocol-Version: the version the server answered initialize with
//	Mcp-Session-Id: the session's id, when the server gave one
//
// with the body {"jsonrpc":"2.0","id":N,"method":"tools/call","params":{"name":TOOL,
// "arguments":{"text":TEXT}}}, N counting up from 2 in each session. Worker i
// (of Conns) sends on session i mod Sessions, so a session may have several
// requests outstanding at once, as a host's does. Sessions are not ended: the
// server's idle timeout ends them.
//
// Either way the answer may be one application/json message or a
// text/event-stream whose events carry notifications before the answer; both
// are parsed, and an answer counts as good only if it is a 200 with the
// JSON-RPC response to the request's id whose result holds exactly one text
// item equal to TEXT.
//
// A [Client] owns an HTTP/1.1 transport limited to Conns connections
// (MaxConnsPerHost = MaxIdleConnsPerHost = Conns); [Client.Drive] and
// [Client.DriveFunc] keep Conns requests outstanding, one per connection, so
// that after the first requests every connection is reused.
//
// Besides package load (for its percentiles), the package uses the standard library only.
package httpload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayrt/relay/bench/load"
)

// ProtocolVersion is the MCP protocol version of every request.
const ProtocolVersion = "2026-07-28"

// LegacyProtocolVersion is the version asked for in initialize when
// Config.Sessions is above zero.
const LegacyProtocolVersion = "2025-11-25"

// DefaultText is the echo argument when Config.Text is empty.
const DefaultText = "hello"

// DefaultTool is the tool called when Config.Tool is empty.
const DefaultTool = "echo"

// Config describes the server to drive.
type Config struct {
	// URL is the MCP endpoint, such as http://127.0.0.1:8080/mcp.
	URL string
	// Conns is how many keep-alive connections are used, and so how many
	// requests are outstanding at once; values below 1 mean 1.
	Conns int
	// Text is the echo tool's argument; empty means DefaultText.
	Text string
	// Tool is the name of the echo tool; empty means DefaultTool.
	Tool string
	// Sessions, when above zero, is how many initialize-generation sessions
	// the requests are spread over (see the package comment); zero means
	// self-contained 2026-07-28 requests.
	Sessions int
	// Header holds extra request headers (such as Authorization); they are
	// added to the ones every request carries.
	Header http.Header
}

// Result is the outcome of one measured drive.
type Result struct {
	// Requests is the number of answers received, good or bad.
	Requests int
	// Errors is the number of bad answers: another status than 200, an
	// unparsable body, an error member, or a result that is not the one text
	// item echoed.
	Errors int
	// FirstError describes the first bad answer, empty when there was none.
	FirstError string
	// SSE is the number of answers that came as text/event-stream.
	SSE int
	// Dials is the number of TCP connections opened during the drive; with
	// keep-alive working it is at most Conns, and zero once they are open.
	Dials int
	// Elapsed is the time from the first request sent to the last answer
	// read.
	Elapsed time.Duration
	// Latencies holds, sorted in ascending order, the time of each request
	// from the call to the HTTP client to the last byte of its answer read.
	Latencies []time.Duration
}

// PerSecond returns the throughput: answers per second of Elapsed.
func (r Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Percentile returns the p-th percentile latency, p being in [0, 100] (50
// for the median, 99 for p99), by the nearest-rank method. It returns zero
// when there are no latencies.
func (r Result) Percentile(p float64) time.Duration { return load.Percentile(r.Latencies, p) }

// String summarises the result on one line.
func (r Result) String() string {
	s := fmt.Sprintf("%d requests (%d errors, %d SSE) in %v on %d new connections: %.0f req/s, p50 %v, p99 %v",
		r.Requests, r.Errors, r.SSE, r.Elapsed.Round(time.Millisecond), r.Dials, r.PerSecond(),
		r.Percentile(50), r.Percentile(99))
	if r.FirstError != "" {
		s += "; first error: " + r.FirstError
	}
	return s
}

// A Client drives one server. Its methods must not be called concurrently,
// except Close.
type Client struct {
	url    string
	conns  int
	text   string
	body   []byte      // the 2026-07-28 request; with sessions, what follows its id
	header http.Header // the 2026-07-28 request's; with sessions, initialize's
	tr     *http.Transport
	hc     *http.Client
	dials  atomic.Int64

	nsessions int        // Config.Sessions
	sessions  []*session // opened on first use
}

// session is an initialize-generation session.
type session struct {
	header http.Header // with its Mcp-Session-Id and MCP-Protocol-Version
	id     atomic.Int64
}

// New returns a Client for cfg. It opens no connection yet. Call Close when
// done.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("httpload: URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("httpload: URL %q is not an http:// or https:// URL", cfg.URL)
	}
	c := &Client{url: cfg.URL, conns: max(cfg.Conns, 1), text: cfg.Text, nsessions: max(cfg.Sessions, 0)}
	if c.text == "" {
		c.text = DefaultText
	}
	tool := cfg.Tool
	if tool == "" {
		tool = DefaultTool
	}
	quoted, err := json.Marshal(c.text)
	if err != nil {
		return nil, fmt.Errorf("httpload: Text: %w", err)
	}
	quotedTool, err := json.Marshal(tool)
	if err != nil {
		return nil, fmt.Errorf("httpload: Tool: %w", err)
	}
	if c.nsessions > 0 {
		c.body = []byte(`,"method":"tools/call","params":{"name":` + string(quotedTool) + `,"arguments":{"text":` +
			string(quoted) + `}}}`)
	} else {
		c.body = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":` + string(quotedTool) +
			`,"arguments":{"text":` + string(quoted) + `},"_meta":{"io.modelcontextprotocol/protocolVersion":"` +
			ProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	}

	c.header = http.Header{}
	for k, vs := range cfg.Header {
		for _, v := range vs {
			c.header.Add(k, v)
		}
	}
	c.header.Set("Content-Type", "application/json")
	c.header.Set("Accept", "application/json, text/event-stream")
	if c.nsessions == 0 {
		c.header.Set("MCP-Protocol-Version", ProtocolVersion)
		c.header.Set("Mcp-Method", "tools/call")
		c.header.Set("Mcp-Name", tool)
	}

	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	c.tr = &http.Transport{
		Proxy: nil, // never a proxy, whatever the environment says
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c.dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        c.conns,
		MaxIdleConnsPerHost: c.conns,
		MaxConnsPerHost:     c.conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // no Accept-Encoding: gzip, the answers are tiny
		ForceAttemptHTTP2:   false,
	}
	c.hc = &http.Client{Transport: c.tr}
	return c, nil
}

// Close closes the client's idle connections. Connections still in use are
// closed when their requests end.
func (c *Client) Close() {
	c.tr.CloseIdleConnections()
}

// Call sends one request outside any measurement, and returns the answer's
// JSON-RPC message, or an error saying why the answer is not good.
func (c *Client) Call(ctx context.Context) ([]byte, error) {
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	body, header, id := c.request(0)
	r, err := c.do(ctx, body, header, &buf)
	if err != nil {
		return nil, fmt.Errorf("httpload: %w", err)
	}
	msg, err := c.check(buf.Bytes(), r, id)
	if err != nil {
		return msg, fmt.Errorf("httpload: %w", err)
	}
	return msg, nil
}

// Drive sends requests keeping Conns of them outstanding, and waits for
// every answer. With requests > 0 it sends exactly that many; otherwise it
// sends until d has elapsed. A failed exchange (connection refused or reset,
// no answer) ends the drive with an error; a bad answer is counted in
// Result.Errors. The Result is valid even when the error is not nil.
func (c *Client) Drive(ctx context.Context, requests int, d time.Duration) (Result, error) {
	next, err := Until(requests, d)
	if err != nil {
		return Result{}, err
	}
	return c.DriveFunc(ctx, next)
}

// Until returns the next function of a drive (see DriveFunc) that sends exactly requests
// requests, or, when requests is 0, sends until d has elapsed from its first call.
func Until(requests int, d time.Duration) (func() bool, error) {
	switch {
	case requests > 0:
		sent := 0
		return func() bool { sent++; return sent <= requests }, nil
	case d > 0:
		var deadline time.Time
		return func() bool {
			if deadline.IsZero() {
				deadline = time.Now().Add(d)
			}
			return time.Now().Before(deadline)
		}, nil
	}
	return nil, errors.New("httpload: neither a request count nor a duration")
}

// DriveFunc is Drive with the number of requests decided by next: it calls
// next, from the calling goroutine, before each request, hands the request to
// one of Conns workers, each with a connection of its own, as soon as one is
// free, and stops when next returns false. next can be a benchmark's
// (*testing.B).Loop: each iteration is then one request.
func (c *Client) DriveFunc(ctx context.Context, next func() bool) (Result, error) {
	if err := c.open(ctx); err != nil {
		return Result{}, err
	}
	bufs := make([]bytes.Buffer, c.conns)
	dials := c.dials.Load()
	res, err := DriveWorkers(ctx, c.conns, next, func(ctx context.Context, worker int) (Exchange, error) {
		buf := &bufs[worker]
		body, header, id := c.request(worker)
		r, err := c.do(ctx, body, header, buf)
		if err != nil {
			return Exchange{}, err
		}
		_, bad := c.check(buf.Bytes(), r, id)
		return Exchange{Latency: r.latency, SSE: r.sse, Bad: bad}, nil
	})
	res.Dials = int(c.dials.Load() - dials)
	if err != nil {
		return res, fmt.Errorf("httpload: %w", err)
	}
	return res, nil
}

// An Exchange is what one request of a drive measured.
type Exchange struct {
	Latency time.Duration
	SSE     bool  // the answer came as a text/event-stream
	Bad     error // why the answer is not good; nil when it is
}

// DriveWorkers is the engine of DriveFunc, for drivers whose requests are made another way
// (over sessions, say): it calls next before each request, hands the request to the first
// free of workers goroutines, which calls exchange with its own index, and tallies what they
// measured into a Result (Dials is left zero). An error from exchange (no answer at all) ends
// the drive and is returned, as is the end of ctx.
func DriveWorkers(ctx context.Context, workers int, next func() bool,
	exchange func(ctx context.Context, worker int) (Exchange, error)) (Result, error) {
	drive, stop := context.WithCancel(ctx)
	defer stop()
	work := make(chan struct{})
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		failure error
	)
	tallies := make([]tally, workers)
	for i := range tallies {
		t := &tallies[i]
		wg.Go(func() {
			for range work {
				x, err := exchange(drive, i)
				if err != nil {
					if drive.Err() == nil {
						errOnce.Do(func() { failure = err })
						stop()
					}
					continue
				}
				t.last = time.Now()
				t.latencies = append(t.latencies, x.Latency)
				t.requests++
				if x.SSE {
					t.sse++
				}
				if x.Bad != nil {
					t.errors++
					if t.firstError == "" {
						t.firstError = x.Bad.Error()
					}
				}
			}
		})
	}
	start := time.Now()
	for drive.Err() == nil && next() {
		select {
		case work <- struct{}{}:
		case <-drive.Done():
		}
	}
	close(work)
	wg.Wait()

	var res Result
	var last time.Time
	for _, t := range tallies {
		res.Requests += t.requests
		res.Errors += t.errors
		res.SSE += t.sse
		if res.FirstError == "" {
			res.FirstError = t.firstError
		}
		if t.last.After(last) {
			last = t.last
		}
		res.Latencies = append(res.Latencies, t.latencies...)
	}
	slices.Sort(res.Latencies)
	if !last.IsZero() {
		res.Elapsed = last.Sub(start)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, failure
}

// tally is one worker's share of a Result.
type tally struct {
	requests, errors, sse int
	firstError            string
	last                  time.Time
	latencies             []time.Duration
}

// request returns the body, headers and JSON-RPC id of worker's next
// tools/call.
func (c *Client) request(worker int) ([]byte, http.Header, string) {
	if c.nsessions == 0 {
		return c.body, c.header, "1"
	}
	s := c.sessions[worker%len(c.sessions)]
	id := strconv.FormatInt(s.id.Add(1), 10)
	body := make([]byte, 0, 24+len(id)+len(c.body))
	body = append(append(append(body, `{"jsonrpc":"2.0","id":`...), id...), c.body...)
	return body, s.header, id
}

// open opens the sessions not opened yet, when the client has any: each with
// initialize and notifications/initialized.
func (c *Client) open(ctx context.Context) error {
	for len(c.sessions) < c.nsessions {
		var buf bytes.Buffer
		r, err := c.do(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+
			LegacyProtocolVersion+`","capabilities":{},"clientInfo":{"name":"httpload","version":"1.0.0"}}}`),
			c.header, &buf)
		if err != nil {
			return fmt.Errorf("httpload: initialize: %w", err)
		}
		if r.bad != "" {
			return fmt.Errorf("httpload: initialize: %s", r.bad)
		}
		msg := buf.Bytes()
		if r.sse {
			for data := range sseData(msg) {
				msg = data
				if bytes.Contains(data, []byte(`"result"`)) || bytes.Contains(data, []byte(`"error"`)) {
					break
				}
			}
		}
		var a struct {
			Result *struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(msg, &a) != nil || a.Result == nil || a.Result.ProtocolVersion == "" {
			return fmt.Errorf("httpload: initialize: not a result with a protocolVersion: %s", clip(msg))
		}
		s := &session{header: c.header.Clone()}
		s.id.Store(1)
		s.header.Set("MCP-Protocol-Version", a.Result.ProtocolVersion)
		if r.session != "" {
			s.header.Set("Mcp-Session-Id", r.session)
		}
		r, err = c.do(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), s.header, &buf)
		if err != nil {
			return fmt.Errorf("httpload: notifications/initialized: %w", err)
		}
		if r.status != http.StatusAccepted && r.status != http.StatusOK {
			return fmt.Errorf("httpload: notifications/initialized: HTTP %d: %s", r.status, clip(buf.Bytes()))
		}
		c.sessions = append(c.sessions, s)
	}
	return nil
}

// reply is what do learnt of an answer besides its body.
type reply struct {
	latency time.Duration
	status  int
	session string // the Mcp-Session-Id header
	sse     bool   // the body is a text/event-stream
	bad     string // when not empty, why the answer is bad before its body is read
}

// do sends one request and reads its answer into buf. An answer that is not
// a 200 with a JSON or SSE body is not an error here but a reply with bad
// set; errors are failed exchanges.
func (c *Client) do(ctx context.Context, body []byte, header http.Header, buf *bytes.Buffer) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	// The transport does not modify a request's headers, so every request
	// can share the one map.
	req.Header = header
	buf.Reset()
	t0 := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return reply{}, err
	}
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	r := reply{latency: time.Since(t0), status: resp.StatusCode, session: resp.Header.Get("Mcp-Session-Id")}
	if err != nil {
		return r, fmt.Errorf("reading the answer: %w", err)
	}
	ct := resp.Header.Get("Content-Type")
	media, _, _ := mime.ParseMediaType(ct)
	switch {
	case resp.StatusCode != http.StatusOK:
		r.bad = fmt.Sprintf("HTTP %d (%s): %s", resp.StatusCode, ct, clip(buf.Bytes()))
	case media == "text/event-stream":
		r.sse = true
	case media != "application/json":
		r.bad = fmt.Sprintf("HTTP 200 with Content-Type %q: %s", ct, clip(buf.Bytes()))
	}
	return r, nil
}

// answer is what check reads of a JSON-RPC response.
type answer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// check finds the JSON-RPC response in an answer's body, a JSON message or
// an SSE stream, and returns it with an error saying why it is not the
// expected echo, the answer to id.
func (c *Client) check(body []byte, r reply, id string) ([]byte, error) {
	if r.bad != "" {
		return nil, errors.New(r.bad)
	}
	var msg []byte
	var a answer
	if r.sse {
		found := false
		for data := range sseData(body) {
			a = answer{}
			if json.Unmarshal(data, &a) != nil {
				return data, fmt.Errorf("an SSE event is not JSON: %s", clip(data))
			}
			if a.Method == "" && (a.Result != nil || a.Error != nil) {
				msg, found = data, true
				break
			}
			// a notification (or a request) before the answer
		}
		if !found {
			return nil, fmt.Errorf("the SSE stream ended without an answer: %s", clip(body))
		}
	} else {
		msg = body
		if err := json.Unmarshal(msg, &a); err != nil {
			return msg, fmt.Errorf("the answer is not a JSON-RPC message: %s", clip(msg))
		}
	}
	switch {
	case a.JSONRPC != "2.0" || string(a.ID) != id:
		return msg, fmt.Errorf("not the JSON-RPC 2.0 response to id %s: %s", id, clip(msg))
	case a.Error != nil:
		return msg, fmt.Errorf("error %d: %s", a.Error.Code, a.Error.Message)
	case a.Result == nil:
		return msg, fmt.Errorf("neither result nor error: %s", clip(msg))
	case a.Result.IsError:
		return msg, fmt.Errorf("the tool failed: %s", clip(msg))
	case len(a.Result.Content) != 1 || a.Result.Content[0].Type != "text" || a.Result.Content[0].Text != c.text:
		return msg, fmt.Errorf("the result is not one text item equal to the %d-byte argument: %s", len(c.text), clip(msg))
	}
	return msg, nil
}

// sseData yields the data of each event of an SSE stream (the data lines
// joined with newlines), including a last event that the stream ends
// without a blank line after.
func sseData(body []byte) func(yield func([]byte) bool) {
	return func(yield func([]byte) bool) {
		var data []byte
		has := false
		for len(body) > 0 {
			var line []byte
			i := bytes.IndexAny(body, "\r\n")
			if i < 0 {
				line, body = body, nil
			} else {
				line = body[:i]
				if body[i] == '\r' && i+1 < len(body) && body[i+1] == '\n' {
					i++
				}
				body = body[i+1:]
			}
			if len(line) == 0 {
				if has && !yield(data) {
					return
				}
				data, has = data[:0], false
				continue
			}
			field, value, _ := bytes.Cut(line, []byte(":"))
			if string(field) != "data" {
				continue // id, event, retry, or a comment
			}
			value = bytes.TrimPrefix(value, []byte(" "))
			if has {
				data = append(data, '\n')
			}
			data = append(data, value...)
			has = true
		}
		if has {
			yield(data)
		}
	}
}

// clip shortens b for an error message.
func clip(b []byte) string {
	const most = 300
	s := strings.TrimSpace(string(b))
	if len(s) > most {
		s = s[:most] + "…"
	}
	return s
}
