package httpx_test

// Shared fixture for the Streamable HTTP tests: a real mcp.Server with a few tools, served by
// an httpx.MCPHandler on a real socket on 127.0.0.1, and helpers that speak both generations.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	modernVersion = mcp.Version20260728
	legacyVersion = mcp.Version20251125
	// testTag names a request so the fixture can report when the server noticed that its
	// client went away and when ServeHTTP returned for it.
	testTag = "X-Test-Tag"
	// waitLong bounds every wait on the server; a wait that reaches it is a failure.
	waitLong = 5 * time.Second
	// waitShort bounds waits for something a correct server does within milliseconds, where
	// the failure mode is waiting forever.
	waitShort = 2 * time.Second
)

// tracker is what the tools tell the tests.
type tracker struct {
	started   chan string // key of a block call that is running
	cancelled chan string // key of a block call whose context ended
	finished  chan string // key of a block call released without being cancelled

	release     chan struct{} // closed: every block call returns
	releaseOnce sync.Once

	arrived atomic.Int32  // barrier calls that have started
	allIn   chan struct{} // closed when the barrier's n calls have all started
	allOnce sync.Once
}

func (tk *tracker) releaseAll() { tk.releaseOnce.Do(func() { close(tk.release) }) }

type echoArgs struct {
	Text string `json:"text"`
}

type progressArgs struct {
	Steps int `json:"steps"`
}

type blockArgs struct {
	Key string `json:"key"`
}

type barrierArgs struct {
	N int `json:"n"`
}

// newMCPServer returns a server with the tools, a prompt and a resource the tests call.
func newMCPServer(tk *tracker) *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "httpx-test", Version: "1.0.0"}, &mcp.ServerOptions{CacheTTL: time.Minute})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return the text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, error) {
			return mcp.TextResult(in.Text), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Report progress steps times, then answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressArgs) (*mcp.CallToolResult, error) {
			for i := 1; i <= in.Steps; i++ {
				if err := req.Progress(float64(i), float64(in.Steps), fmt.Sprintf("step %d", i)); err != nil {
					return nil, err
				}
			}
			return mcp.TextResult("done"), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "Wait until released or cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, in blockArgs) (*mcp.CallToolResult, error) {
			req.Progress(1, 0, "started") // only sent when the request carried a progressToken
			tk.started <- in.Key
			select {
			case <-ctx.Done():
				tk.cancelled <- in.Key
				return nil, ctx.Err()
			case <-tk.release:
				tk.finished <- in.Key
				return mcp.TextResult("released " + in.Key), nil
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "barrier", Description: "Wait until n calls are running at once."},
		func(ctx context.Context, req *mcp.CallToolRequest, in barrierArgs) (*mcp.CallToolResult, error) {
			if int(tk.arrived.Add(1)) == in.N {
				tk.allOnce.Do(func() { close(tk.allIn) })
			}
			select {
			case <-tk.allIn:
				return mcp.TextResult("through"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Ask the user for a name."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
			}})
			if err != nil {
				return nil, err
			}
			return mcp.TextResult(fmt.Sprintf("hello %v (%s)", res.Content["name"], res.Action)), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "panic", Description: "A tool with a bug."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			panic("the tool has a bug")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Name the authenticated principal."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			if p := runtime.PrincipalFrom(ctx); p != nil {
				return mcp.TextResult(p.ID), nil
			}
			return mcp.TextResult("anonymous"), nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "A greeting."},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "mem://notes/one", Name: "one", MimeType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, MimeType: "text/plain", Text: "one"}}}, nil
		})
	return s
}

// fixture is one handler on one real listener.
type fixture struct {
	t    *testing.T
	tk   *tracker
	mcp  *mcp.Server
	h    *httpx.MCPHandler
	srv  *http.Server
	base string // http://127.0.0.1:port
	url  string // the MCP endpoint
	c    *http.Client
	tr   *http.Transport

	mu       sync.Mutex
	returned map[string]chan struct{} // tag → closed when ServeHTTP returned
	gone     map[string]chan struct{} // tag → closed when the server saw the client go away

	closeOnce sync.Once
	served    chan error
}

func newFixture(t *testing.T, opts *httpx.MCPOptions) *fixture {
	t.Helper()
	tk := &tracker{
		started: make(chan string, 4096), cancelled: make(chan string, 4096), finished: make(chan string, 4096),
		release: make(chan struct{}), allIn: make(chan struct{}),
	}
	o := httpx.MCPOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	f := &fixture{t: t, tk: tk, returned: map[string]chan struct{}{}, gone: map[string]chan struct{}{}, served: make(chan error, 1)}
	f.mcp = newMCPServer(tk)
	f.h = httpx.NewMCPHandler(f.mcp, &o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.h.Close()
		t.Fatal(err)
	}
	f.base = "http://" + ln.Addr().String()
	path := o.Path
	if path == "" {
		path = "/mcp"
	}
	f.url = f.base + path
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ErrorLog: nil}
	go func() { f.served <- f.srv.Serve(ln) }()
	f.tr = http.DefaultTransport.(*http.Transport).Clone()
	f.c = &http.Client{Transport: f.tr, Timeout: 20 * time.Second}
	t.Cleanup(f.close)
	return f
}

// serve wraps the handler to report, per tagged request, when the client went away and when
// ServeHTTP returned.
func (f *fixture) serve(w http.ResponseWriter, r *http.Request) {
	tag := r.Header.Get(testTag)
	if tag == "" {
		f.h.ServeHTTP(w, r)
		return
	}
	returned, gone := f.chans(tag)
	stop := make(chan struct{})
	ctx := r.Context() // read before ServeHTTP, which may replace *r (see TestHandlerLeavesTheRequestAlone)
	go func() {
		select {
		case <-ctx.Done():
			close(gone)
		case <-stop:
		}
	}()
	f.h.ServeHTTP(w, r)
	close(stop)
	close(returned)
}

func (f *fixture) chans(tag string) (returned, gone chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.returned[tag] == nil {
		f.returned[tag] = make(chan struct{})
		f.gone[tag] = make(chan struct{})
	}
	return f.returned[tag], f.gone[tag]
}

// close releases the blocked tools, closes the handler (its sessions drain), then shuts the
// HTTP server down. A handler goroutine that never returns is reported, not waited for.
func (f *fixture) close() {
	f.closeOnce.Do(func() {
		f.tk.releaseAll()
		f.h.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitShort)
		defer cancel()
		if err := f.srv.Shutdown(ctx); err != nil {
			f.t.Errorf("HTTP server shutdown: %v (a request handler never returned)", err)
			f.srv.Close()
		}
		if err := <-f.served; !errors.Is(err, http.ErrServerClosed) {
			f.t.Errorf("Serve returned %v", err)
		}
		f.tr.CloseIdleConnections()
	})
}

// meta is the _meta a 2026-07-28 client sends, plus extra members.
func meta(extra ...any) map[string]any {
	m := map[string]any{
		mcp.MetaProtocolVersion:    modernVersion,
		mcp.MetaClientCapabilities: map[string]any{},
		mcp.MetaClientInfo:         map[string]any{"name": "httpx-test", "version": "1"},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

// message encodes a JSON-RPC message; a nil id makes a notification.
func message(id any, method string, params map[string]any) []byte {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// modernCall is a well-formed 2026-07-28 request and the headers that mirror it.
func modernCall(id any, method string, params map[string]any) ([]byte, []string) {
	if params == nil {
		params = map[string]any{}
	}
	if _, ok := params["_meta"]; !ok {
		params["_meta"] = meta()
	}
	hdr := []string{"MCP-Protocol-Version", modernVersion, "Mcp-Method", method}
	switch method {
	case "tools/call", "prompts/get":
		hdr = append(hdr, "Mcp-Name", params["name"].(string))
	case "resources/read":
		hdr = append(hdr, "Mcp-Name", params["uri"].(string))
	}
	return message(id, method, params), hdr
}

// with returns hdr with pairs applied: a pair replaces the header of that name, and an empty
// value removes it.
func with(hdr []string, pairs ...string) []string {
	out := append([]string(nil), hdr...)
	for i := 0; i+1 < len(pairs); i += 2 {
		for j := 0; j+1 < len(out); j += 2 {
			if strings.EqualFold(out[j], pairs[i]) {
				out = append(out[:j], out[j+2:]...)
				j -= 2
			}
		}
		if pairs[i+1] != "" {
			out = append(out, pairs[i], pairs[i+1])
		}
	}
	return out
}

// request builds a POST (or another method) with JSON and SSE accepted unless hdr says
// otherwise.
func (f *fixture) request(ctx context.Context, method string, body []byte, hdr ...string) *http.Request {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.url, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

// doAsync sends req from a goroutine of its own, which closes the answer's body at once, and
// returns the channel its error arrives on.
func (f *fixture) doAsync(req *http.Request) <-chan error {
	done := make(chan error, 1)
	go func() {
		resp, err := f.c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	return done
}

// post sends a POST and reads its whole answer.
func (f *fixture) post(body []byte, hdr ...string) reply {
	f.t.Helper()
	return f.do(f.request(context.Background(), http.MethodPost, body, hdr...))
}

func (f *fixture) do(req *http.Request) reply {
	f.t.Helper()
	r, err := f.tryDo(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	return r
}

// tryDo is do for goroutines other than the test's: it reports errors instead of failing.
func (f *fixture) tryDo(req *http.Request) (reply, error) {
	resp, err := f.c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, err
}

// reply is a whole HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) String() string {
	return fmt.Sprintf("%d %s %s", r.status, r.header.Get("Content-Type"), r.body)
}

// rpc decodes the body as one JSON-RPC message.
func (r reply) rpc(t *testing.T) rpcMsg {
	t.Helper()
	var m rpcMsg
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("the body is not one JSON-RPC message: %v: %s", err, r)
	}
	return m
}

type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (m rpcMsg) code() int {
	if m.Error == nil {
		return 0
	}
	return m.Error.Code
}

// text returns the first text item of a CallToolResult.
func (m rpcMsg) text(t *testing.T) string {
	t.Helper()
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("not a CallToolResult with content: %s (error %+v)", m.Result, m.Error)
	}
	return res.Content[0].Text
}

// sseReader reads the events of a text/event-stream body one by one, as a client does: an
// event with no data (a priming event) only sets the last event id.
type sseReader struct {
	r      *bufio.Reader
	lastID string // the id of the last event read, priming events included
	retry  string // the last retry field
}

// next returns the data of the next event with data, or an error (io.EOF when the stream
// ended).
func (s *sseReader) next() ([]byte, error) {
	var data []string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && strings.Join(data, "") != "" {
				return []byte(strings.Join(data, "\n")), nil
			}
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if strings.Join(data, "") != "" {
				return []byte(strings.Join(data, "\n")), nil
			}
			data = nil
		case strings.HasPrefix(line, ":"): // a comment: keep-alive
		case strings.HasPrefix(line, "id:"):
			s.lastID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "retry:"):
			s.retry = strings.TrimSpace(strings.TrimPrefix(line, "retry:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

func (s *sseReader) nextMsg(t *testing.T) rpcMsg {
	t.Helper()
	b, err := s.next()
	if err != nil {
		t.Fatalf("reading an SSE event: %v", err)
	}
	var m rpcMsg
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("an SSE event is not one JSON-RPC message: %v: %s", err, b)
	}
	return m
}

// await waits for a value on ch, failing the test after waitLong.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLong):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// waitFor polls cond until it holds, failing the test after waitLong.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// noSessionID fails if the answer carries an Mcp-Session-Id (DIGEST A3, A13).
func noSessionID(t *testing.T, r reply) {
	t.Helper()
	if v := r.header.Values("Mcp-Session-Id"); len(v) > 0 {
		t.Errorf("a 2026-07-28 answer carries Mcp-Session-Id %q: %s", v, r)
	}
}
