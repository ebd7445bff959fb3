package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/gateway"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

type noteIn struct {
	Text string `json:"text"`
}

// A remote upstream over Streamable HTTP ({"url", "headers"}): its tools are merged with a
// local one's and its calls routed to it, and a URI both list is served by the first in
// config order, with a warning.
func TestGateway_RemoteUpstreamOverHTTP(t *testing.T) {
	remote := mcp.NewServer(mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "note", Description: "Returns its text, marked remote."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
			return mcp.TextResult("remote: " + in.Text), nil
		})
	remote.AddResource(&mcp.Resource{URI: "test://static-text", Name: "shadowed"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, Text: "the remote's copy"}}}, nil
	})
	var seen sync.Map // the X-Relay-Test values the remote was sent
	addr := freeAddr(t)
	serveAt(t, addr, remote, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Store(r.Header.Get("X-Relay-Test"), true)
			h.ServeHTTP(w, r)
		})
	})
	t.Setenv("RELAY_GATEWAY_TEST_TOKEN", "from-the-environment")
	f := startGateway(t, config(
		entry("everything", everythingBin(t), `"relay": {"prefix": "ev"}`),
		fmt.Sprintf(`"far": {"url": "http://%s/mcp", "headers": {"X-Relay-Test": "token ${RELAY_GATEWAY_TEST_TOKEN}"}, "type": "http"}`, addr),
	))
	eachClient(t, f, func(t *testing.T, c *client.Client) {
		if names := toolNames(t, c); !slices.Contains(names, "far__note") || !slices.Contains(names, "ev__test_simple_text") {
			t.Errorf("tools/list: %v", names)
		}
		r, err := c.CallTool(context.Background(), "far__note", noteIn{Text: "hi"})
		if err != nil || text(r) != "remote: hi" {
			t.Errorf("far__note: %q %v", text(r), err)
		}
		res, err := c.ReadResource(context.Background(), "test://static-text")
		if err != nil || res.Contents[0].Text == "the remote's copy" {
			t.Errorf("a URI two upstreams list is served by the first: %+v %v", res, err)
		}
	})
	if _, ok := seen.Load("token from-the-environment"); !ok {
		var got []any
		seen.Range(func(k, _ any) bool { got = append(got, k); return true })
		t.Errorf("the remote was sent X-Relay-Test %v, want the configured header with its variable expanded", got)
	}
	if f.logs.FilterMessageSnippet("same resource URI").Len() != 1 {
		t.Errorf("the duplicate URI was not warned of once: %v", f.logs.All())
	}
}

// httpServer serves an mcp.Server on addr until stop (or the test's end).
type httpServer struct {
	stop func()
}

// wrap, when given, wraps the MCP handler (to look at the requests).
func serveAt(t *testing.T, addr string, s *mcp.Server, wrap func(http.Handler) http.Handler) *httpServer {
	t.Helper()
	h := httpx.NewMCPHandler(s, &httpx.MCPOptions{Logger: zap.NewNop()})
	var handler http.Handler = h
	if wrap != nil {
		handler = wrap(h)
	}
	stopServing := serveServer(t, addr, &http.Server{Handler: handler})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			stopServing()
			h.Close()
		})
	}
	t.Cleanup(stop)
	return &httpServer{stop: stop}
}

// serveServer serves srv on addr until the returned stop (or the test's end), which closes
// it at once: the server goes away as a crashed one would.
func serveServer(t *testing.T, addr string, srv *http.Server) (stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { // ends with Close, below
		defer close(served)
		srv.Serve(ln)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			srv.Close()
			<-served
		})
	}
	t.Cleanup(stop)
	return stop
}

// A remote upstream that goes away leaves the lists, with list_changed, and its calls get
// an error that names it; once it is back at its URL, the gateway lists it again.
func TestGateway_RemoteUpstreamGoesAwayAndComesBack(t *testing.T) {
	remote := mcp.NewServer(mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "note"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult("remote: " + in.Text), nil
	})
	addr := freeAddr(t)
	first := serveAt(t, addr, remote, nil)
	f := startGatewayWith(t, config(
		entry("echo", echoBin(t), ""),
		fmt.Sprintf(`"far": {"url": "http://%s/mcp"}`, addr),
	), func(o *gateway.Options) { o.HealthEvery = 50 * time.Millisecond })
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	if names := toolNames(t, c); !slices.Contains(names, "far__note") {
		t.Fatalf("before: %v", names)
	}
	first.stop()
	waitForTools(t, c, "the remote's tools leave the list", func(names []string) bool {
		return !slices.Contains(names, "far__note") && slices.Contains(names, "echo__echo")
	})
	_, err := c.CallTool(context.Background(), "far__note", noteIn{Text: "x"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || !strings.Contains(je.Message, `"far"`) {
		t.Errorf("a call to the remote that went away: %v, want an error naming it", err)
	}
	serveAt(t, addr, remote, nil)
	waitForTools(t, c, "the remote's tools come back", func(names []string) bool { return slices.Contains(names, "far__note") })
	if r, err := c.CallTool(context.Background(), "far__note", noteIn{Text: "back"}); err != nil || text(r) != "remote: back" {
		t.Errorf("far__note once back: %q %v", text(r), err)
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// An upstream that answers but cannot list its tools is down with why, its connection kept;
// once it can, the next health check lists it again.
func TestGateway_UpstreamThatCannotListIsDownUntilItCan(t *testing.T) {
	var indexed atomic.Bool
	remote := mcp.NewServer(mcp.Implementation{Name: "remote", Version: "1"}, &mcp.ServerOptions{
		Middleware: []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, req *mcp.Request) (any, error) {
				if req.Method() == "tools/list" && !indexed.Load() {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the tool index is not ready"}
				}
				return next(ctx, req)
			}
		}}})
	mcp.AddTool(remote, &mcp.Tool{Name: "note"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult("remote: " + in.Text), nil
	})
	addr := freeAddr(t)
	serveAt(t, addr, remote, nil)
	f := startGatewayWith(t, config(fmt.Sprintf(`"far": {"url": "http://%s/mcp"}`, addr)),
		func(o *gateway.Options) { o.HealthEvery = 50 * time.Millisecond })
	if st := f.g.Status(); st[0].State != "down" || !strings.Contains(st[0].LastError, "the tool index is not ready") {
		t.Errorf("status after a failed tools/list: %+v", st[0])
	}
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	if names := listedTools(t, c); len(names) != 0 {
		t.Errorf("tools while the upstream cannot list them: %v", names)
	}
	indexed.Store(true)
	waitForTools(t, c, "listed once it can", func(names []string) bool { return slices.Contains(names, "far__note") })
	if st := f.g.Status(); st[0].State != "up" {
		t.Errorf("status once listed: %+v", st[0])
	}
}

// The gateway's lists may be reused for as long as the least reusable of its servers'
// lists, by the user alone when one says so; a resource read keeps the ttlMs and
// cacheScope of the server that answered it (MCP 2026-07-28, Server › Utilities › Caching).
func TestGateway_CachingIsTheLeastReusableServers(t *testing.T) {
	serve := func(name string, opts *mcp.ServerOptions) string {
		s := mcp.NewServer(mcp.Implementation{Name: name, Version: "1"}, opts)
		mcp.AddTool(s, &mcp.Tool{Name: "note"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
			return mcp.TextResult(name + ": " + in.Text), nil
		})
		s.AddResource(&mcp.Resource{URI: "test://" + name, Name: name}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, Text: name}}}, nil
		})
		addr := freeAddr(t)
		serveAt(t, addr, s, nil)
		return addr
	}
	long := serve("long", &mcp.ServerOptions{CacheTTL: time.Hour})
	short := serve("short", &mcp.ServerOptions{Cache: func(method string) (time.Duration, bool) {
		if method == "tools/list" {
			return 30 * time.Second, true
		}
		return 45 * time.Second, false
	}})
	f := startGateway(t, config(fmt.Sprintf(`"long": {"url": "http://%s/mcp"}`, long), fmt.Sprintf(`"short": {"url": "http://%s/mcp"}`, short)))
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	waitForTools(t, c, "both servers' tools", func(names []string) bool {
		return slices.Contains(names, "long__note") && slices.Contains(names, "short__note")
	})
	type cached struct {
		ttl     time.Duration
		private bool
	}
	cacheOf := func(list func(opts ...client.CallOption) error) cached {
		var got cached
		if err := list(client.WithCache(func(ttl time.Duration, private bool) { got = cached{ttl, private} })); err != nil {
			t.Fatal(err)
		}
		return got
	}
	tools := cacheOf(func(opts ...client.CallOption) error {
		_, err := collectAll(c.ListTools(context.Background(), opts...))
		return err
	})
	if want := (cached{30 * time.Second, true}); tools != want {
		t.Errorf("tools/list: %+v, want %+v (short's, private)", tools, want)
	}
	resources := cacheOf(func(opts ...client.CallOption) error {
		_, err := collectAll(c.ListResources(context.Background(), opts...))
		return err
	})
	if want := (cached{45 * time.Second, false}); resources != want {
		t.Errorf("resources/list: %+v, want %+v (short's, public)", resources, want)
	}
	raw, err := c.Call(context.Background(), "resources/read", json.RawMessage(`{"uri":"test://long"}`))
	if err != nil {
		t.Fatal(err)
	}
	var read struct {
		TTL   *int64 `json:"ttlMs"`
		Scope string `json:"cacheScope"`
	}
	if json.Unmarshal(raw, &read); read.TTL == nil || *read.TTL != time.Hour.Milliseconds() || read.Scope != "public" ||
		strings.Count(string(raw), `"ttlMs"`) != 1 {
		t.Errorf("resources/read from long: %s, want its own ttlMs (an hour), once", raw)
	}
}

// collectAll reads a list to its end.
func collectAll[T any](seq func(yield func(T, error) bool)) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// A 2026-07-28 upstream is asked, on each call, for the log level the host asked for, and
// for none when the host asked for none (MCP 2026-07-28, Utilities › Logging); a host of
// the initialize generation's session level goes the same way.
func TestGateway_UpstreamIsAskedTheHostsLogLevel(t *testing.T) {
	asked := make(chan mcp.LoggingLevel, 8)
	remote := mcp.NewServer(mcp.Implementation{Name: "remote", Version: "1"}, &mcp.ServerOptions{
		Middleware: []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, req *mcp.Request) (any, error) {
				if req.Method() == "tools/call" {
					asked <- req.LogLevel()
				}
				return next(ctx, req)
			}
		}}})
	mcp.AddTool(remote, &mcp.Tool{Name: "note"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult("remote: " + in.Text), nil
	})
	addr := freeAddr(t)
	serveAt(t, addr, remote, nil)
	f := startGateway(t, config(fmt.Sprintf(`"far": {"url": "http://%s/mcp"}`, addr)))
	modern := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	legacy := connect(t, client.HTTP(serveHTTP(t, f.g.Server())), client.WithVersion(mcp.Version20251125))
	if err := legacy.SetLogLevel(context.Background(), mcp.LevelNotice); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		c    *client.Client
		opts []client.CallOption
		want mcp.LoggingLevel
	}{
		{modern, []client.CallOption{client.WithLogLevel("warning")}, mcp.LevelWarning},
		{modern, nil, ""},
		{legacy, nil, mcp.LevelNotice},
	} {
		if _, err := c.c.CallTool(context.Background(), "far__note", noteIn{Text: "x"}, c.opts...); err != nil {
			t.Fatal(err)
		}
		if got := <-asked; got != c.want {
			t.Errorf("the upstream was asked for log level %q, want %q", got, c.want)
		}
	}
}

// A 2026-07-28 host answers the questions of an upstream of the initialize generation
// (MCP 2026-07-28, Basic › Patterns › Multi-round requests): the upstream's elicitation
// request becomes an input_required result, the upstream's call is given up, and the
// host's retry is sent again, its elicitation answered from the host's answer.
func TestGateway_ModernHostAnswersALegacyUpstreamsQuestion(t *testing.T) {
	var runs atomic.Int32
	remote := mcp.NewServer(mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "confirm"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
		runs.Add(1)
		res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Go on with " + in.Text + "?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(fmt.Sprintf("%s: %s %v", in.Text, res.Action, res.Content["ok"])), nil
	})
	addr := freeAddr(t)
	serveAt(t, addr, remote, legacyOnly) // a server of the initialize generation
	f := startGateway(t, config(fmt.Sprintf(`"far": {"url": "http://%s/mcp"}`, addr)))
	var asked atomic.Int32
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()},
		client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if p.Message != "Go on with deploy?" {
				t.Errorf("the host was asked %q", p.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		}))
	if !c.Modern() {
		t.Fatal("the host speaks the initialize generation")
	}
	r, err := c.CallTool(context.Background(), "far__confirm", noteIn{Text: "deploy"})
	if err != nil || text(r) != "deploy: accept true" {
		t.Fatalf("far__confirm: %q %v", text(r), err)
	}
	if asked.Load() != 1 || runs.Load() != 2 {
		t.Errorf("the host was asked %d times and the upstream ran the tool %d times; want 1 and 2 (the first given up)", asked.Load(), runs.Load())
	}
}

// An upstream whose tools/list holds an item that does not decode (a name that is not a
// string) stays up: that item is left out, with a warning, and its other tools are listed.
func TestGateway_AnUndecodableToolLeavesTheListNotTheUpstream(t *testing.T) {
	remote := mcp.NewServer(mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "note"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult("remote: " + in.Text), nil
	})
	addr := freeAddr(t)
	serveAt(t, addr, remote, withTool(`{"name":5,"inputSchema":{"type":"object"}}`))
	f := startGateway(t, config(fmt.Sprintf(`"far": {"url": "http://%s/mcp"}`, addr)))
	if st := f.g.Status(); st[0].State != "up" {
		t.Errorf("status: %+v, want up", st[0])
	}
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	if names := listedTools(t, c); !slices.Equal(names, []string{"far__note"}) {
		t.Errorf("tools: %v, want far__note alone", names)
	}
	if f.logs.FilterMessageSnippet("does not decode").Len() == 0 {
		t.Errorf("the bad item was not logged: %v", f.logs.All())
	}
}

// An upstream's tool that the gateway's server cannot serve (its input schema does not
// resolve) is left out, with one warning however often the lists are rebuilt, and the
// upstream's other tools are listed.
func TestGateway_AToolThatCannotBeServedIsLeftOut(t *testing.T) {
	remote := mcp.NewServer(mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "note"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult("remote: " + in.Text), nil
	})
	addr := freeAddr(t)
	serveAt(t, addr, remote, withTool(`{"name":"broken","inputSchema":{"type":"object","properties":{"x":{"$ref":"#/$defs/nowhere"}}}}`))
	f := startGateway(t, config(fmt.Sprintf(`"far": {"url": "http://%s/mcp"}`, addr)))
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	if names := listedTools(t, c); !slices.Equal(names, []string{"far__note"}) {
		t.Errorf("tools: %v, want far__note alone", names)
	}
	// A list change: the gateway lists again, and rebuilds with the broken tool still there.
	mcp.AddTool(remote, &mcp.Tool{Name: "more"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult("more"), nil
	})
	waitForTools(t, c, "the new tool", func(names []string) bool { return slices.Equal(names, []string{"far__more", "far__note"}) })
	if n := f.logs.FilterMessageSnippet("cannot be served").Len(); n != 1 {
		t.Errorf("%d warnings about the tool that cannot be served, want 1: %v", n, f.logs.All())
	}
}

// withTool makes an MCP handler's tools/list answers (as JSON or as one SSE event) hold one
// more tool, item, put first.
func withTool(item string) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			if !strings.Contains(string(body), `"tools/list"`) {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			out := strings.Replace(rec.Body.String(), `"tools":[`, `"tools":[`+item+`,`, 1)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			io.WriteString(w, out)
		})
	}
}

// legacyOnly makes an MCP handler a server of the initialize generation: server/discover
// and 2026-07-28 requests are unknown to it.
func legacyOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"server/discover"`) || strings.Contains(string(body), mcp.MetaProtocolVersion) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, jsonrpc.Field(body, "id"))
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		h.ServeHTTP(w, r)
	})
}
