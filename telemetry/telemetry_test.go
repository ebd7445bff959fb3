package telemetry_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/relayrt/relay/bridge"
	"github.com/relayrt/relay/gateway"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/hosttest"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
	"github.com/relayrt/relay/rcp"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/supervise"
	"github.com/relayrt/relay/telemetry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// receiver is an OTLP/HTTP collector of the smallest kind: it keeps the spans and the names of
// the metrics posted to it.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics map[string]bool
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{metrics: map[string]bool{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var answer proto.Message
		switch req.URL.Path {
		case "/v1/traces":
			var m coltracepb.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				t.Errorf("OTLP traces: %v", err)
			}
			r.mu.Lock()
			for _, rs := range m.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					r.spans = append(r.spans, ss.Spans...)
				}
			}
			r.mu.Unlock()
			answer = &coltracepb.ExportTraceServiceResponse{}
		case "/v1/metrics":
			var m colmetricpb.ExportMetricsServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				t.Errorf("OTLP metrics: %v", err)
			}
			r.mu.Lock()
			for _, rm := range m.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, mt := range sm.Metrics {
						r.metrics[mt.Name] = true
					}
				}
			}
			r.mu.Unlock()
			answer = &colmetricpb.ExportMetricsServiceResponse{}
		default:
			http.NotFound(w, req)
			return
		}
		out, _ := proto.Marshal(answer)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

// newTelemetry starts a receiver and telemetry that exports to it, from the OTEL_* variables.
func newTelemetry(t *testing.T, service string) (*receiver, *telemetry.Telemetry) {
	t.Helper()
	r := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL)
	tel, err := telemetry.FromEnv(context.Background(), service)
	if err != nil || tel == nil {
		t.Fatalf("FromEnv: %v %v", tel, err)
	}
	return r, tel
}

// buildEcho builds examples/echo for the test.
func buildEcho(t *testing.T) string {
	t.Helper()
	bin := hosttest.Exe(filepath.Join(t.TempDir(), "echo"))
	if out, err := exec.Command("go", "build", "-o", bin, "../examples/echo").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// span returns the received span with this name.
func (r *receiver) span(t *testing.T, name string) *tracepb.Span {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for _, s := range r.spans {
		if s.Name == name {
			return s
		}
		names = append(names, s.Name)
	}
	t.Fatalf("no span %q among %q", name, names)
	return nil
}

func attrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = value(kv.Value)
	}
	return m
}

func value(v *commonpb.AnyValue) string {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	}
	return v.String()
}

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	modernMeta  = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
)

// TestSpansOfAServer: a Relay MCP server with telemetry from the OTEL_* variables sends a span
// per request over OTLP/HTTP, named and attributed by the MCP semantic conventions, in the
// caller's trace (its _meta.traceparent), and the duration histogram.
func TestSpansOfAServer(t *testing.T) {
	r, tel := newTelemetry(t, "relay-test")
	s := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{ Text string }) (*mcp.CallToolResult, error) {
		return mcp.TextResult(in.Text), nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "broken"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return nil, jsonrpc.Errorf(-32603, "broken")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "refuses"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return mcp.ErrorResult("the tool says no"), nil
	})
	conn := s.Runtime(runtime.WithLogger(zap.NewNop()), tel.Option(telemetry.MCP)).Connect(context.Background())
	call := func(frame string) {
		if err := conn.Send(context.Background(), []byte(frame)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Receive(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	call(`{"jsonrpc":"2.0","id":"a1","method":"tools/call","params":{"name":"echo","arguments":{"Text":"hi"},"_meta":{` + modernMeta +
		`,"traceparent":"00-` + callerTrace + `-` + callerSpan + `-01"}}}`)
	call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"broken","_meta":{` + modernMeta + `}}}`)
	call(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"refuses","_meta":{` + modernMeta + `}}}`)
	conn.Close()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	echo := r.span(t, "tools/call echo")
	if got := hex.EncodeToString(echo.TraceId); got != callerTrace {
		t.Errorf("trace id %s, want the caller's %s", got, callerTrace)
	}
	if got := hex.EncodeToString(echo.ParentSpanId); got != callerSpan {
		t.Errorf("parent span %s, want the caller's %s", got, callerSpan)
	}
	if echo.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("kind %v, want server", echo.Kind)
	}
	want := map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"jsonrpc.request.id": "a1", "mcp.protocol.version": "2026-07-28"}
	got := attrs(echo)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["error.type"]; ok {
		t.Errorf("a successful call has error.type %q", got["error.type"])
	}

	broken := r.span(t, "tools/call broken")
	if got := attrs(broken); got["error.type"] != "-32603" || got["rpc.response.status_code"] != "-32603" || got["jsonrpc.request.id"] != "2" {
		t.Errorf("a call answered -32603: %v", got)
	}
	if broken.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("status %v, want error", broken.Status)
	}
	// A tool result with isError is a failed call: error.type tool_error (MCP semantic
	// conventions), though the client gets the result.
	refuses := r.span(t, "tools/call refuses")
	if got := attrs(refuses); got["error.type"] != "tool_error" || refuses.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("a tool result with isError: %v, status %v; want error.type tool_error", got, refuses.Status)
	}
	if hex.EncodeToString(broken.TraceId) == callerTrace || len(broken.ParentSpanId) != 0 {
		t.Error("a request without a trace context starts a trace of its own")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.metrics["mcp.server.operation.duration"] {
		t.Errorf("metrics received: %v, want mcp.server.operation.duration", r.metrics)
	}
}

// TestOffWithoutAnEndpoint: with no OTLP endpoint, or OTEL_SDK_DISABLED=true, there is no
// telemetry, and its nil value is safe to use.
func TestOffWithoutAnEndpoint(t *testing.T) {
	for _, env := range [][2]string{{"OTEL_EXPORTER_OTLP_ENDPOINT", ""}, {"OTEL_SDK_DISABLED", "true"}} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
		t.Setenv(env[0], env[1])
		tel, err := telemetry.FromEnv(context.Background(), "x")
		if tel != nil || err != nil {
			t.Fatalf("with %s=%q: %v %v, want off", env[0], env[1], tel, err)
		}
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, nil)
		s.Runtime(tel.Option(telemetry.MCP)) // installs nothing
	}
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	if _, err := telemetry.FromEnv(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "http/protobuf") {
		t.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: %v, want an error that names http/protobuf", err)
	}
}

// TestSpansOfExamplesEcho: the examples/echo binary reads the OTEL_* variables: its spans
// arrive at the receiver, in the caller's trace, by the time it has exited on EOF.
func TestSpansOfExamplesEcho(t *testing.T) {
	r := newReceiver(t)
	bin := buildEcho(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+r.URL, "OTEL_SERVICE_NAME=echo-under-test")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{` +
		modernMeta + `,"traceparent":"00-` + callerTrace + `-` + callerSpan + `-01"}}}` + "\n")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("echo: %v\n%s", err, stderr.Bytes())
	}
	if !strings.Contains(out.String(), `"id":7`) {
		t.Fatalf("echo answered %q", out.String())
	}
	s := r.span(t, "tools/call echo")
	if got := hex.EncodeToString(s.TraceId); got != callerTrace {
		t.Errorf("trace id %s, want the caller's %s", got, callerTrace)
	}
	if got := attrs(s); got["jsonrpc.request.id"] != "7" || got["gen_ai.tool.name"] != "echo" {
		t.Errorf("attributes %v", got)
	}
}

// TestSpansOfAnRCPServerOverHTTP: an RCP server over HTTP, whose request carries its trace
// context in the traceparent header only: its span follows the RPC conventions, is parented
// on the header's span, and its duration is rpc.server.call.duration.
func TestSpansOfAnRCPServerOverHTTP(t *testing.T) {
	r, tel := newTelemetry(t, "relay-test")
	s := rcp.NewServer(rcp.Implementation{Name: "t", Version: "1"}, &rcp.Options{Conformance: "L0"})
	s.Advertise("retrieve", map[string]any{"maxK": 5, "modes": []string{"sparse"}})
	s.Handle("retrieve", func(ctx context.Context, req *rcp.Request) (any, error) {
		return map[string]any{"hits": []any{}}, nil
	})
	h := httpx.NewRCPHandler(s, &httpx.RCPOptions{Logger: zap.NewNop(), Runtime: []runtime.Option{tel.Option(telemetry.RCP)}})
	srv := httptest.NewServer(h)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/rcp/retrieve",
		strings.NewReader(`{"jsonrpc":"2.0","id":"r1","method":"retrieve","params":{"query":"x","k":1}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	srv.Close()
	h.Close()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	span := r.span(t, "retrieve")
	if got := hex.EncodeToString(span.ParentSpanId); got != callerSpan || hex.EncodeToString(span.TraceId) != callerTrace {
		t.Errorf("parent %s in trace %x, want the header's %s in %s", got, span.TraceId, callerSpan, callerTrace)
	}
	got := attrs(span)
	for k, v := range map[string]string{"rpc.system.name": "jsonrpc", "rpc.method": "retrieve", "jsonrpc.request.id": "r1"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["mcp.method.name"]; ok {
		t.Error("an RCP span carries MCP's attributes")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.metrics["rpc.server.call.duration"] {
		t.Errorf("metrics received: %v, want rpc.server.call.duration", r.metrics)
	}
}

// TestSpansThroughTheBridge: a caller's tools/call through an in-process bridge to an
// examples/echo child, both exporting to one receiver: the bridge's server span is the
// caller's child, its client span the server span's child, and the child's own server span
// the client span's child, all in the caller's trace.
func TestSpansThroughTheBridge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts child processes")
	}
	r, tel := newTelemetry(t, "relay-bridge")
	bin := buildEcho(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := bridge.New(ctx, bridge.Options{Pool: 1, Telemetry: tel, Spec: supervise.Spec{
		Command: supervise.Command{Path: bin, Env: append(os.Environ(), "OTEL_SERVICE_NAME=echo-child"), Name: "echo"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := httpx.NewMCPProfileHandler(b.Profile(), nil, &httpx.MCPOptions{Logger: zap.NewNop(), Runtime: []runtime.Option{tel.Option(telemetry.MCP)}})
	srv := httptest.NewServer(h)
	body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{` +
		modernMeta + `,"traceparent":"00-` + callerTrace + `-` + callerSpan + `-01"}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"} {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(answer), `"hi"`) {
		t.Fatalf("through the bridge: %d %s", resp.StatusCode, answer)
	}
	if err := b.Upgrade(ctx, "a new release"); err != nil { // a span "upgrade", naming the child
		t.Fatalf("Upgrade: %v", err)
	}
	srv.Close()
	h.Close()
	if err := b.Close(); err != nil { // the child exits on EOF, flushing its spans
		t.Errorf("Close: %v", err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	r.mu.Lock()
	var server, client, child *tracepb.Span
	for _, s := range r.spans {
		if s.Name != "tools/call echo" {
			continue
		}
		switch {
		case s.Kind == tracepb.Span_SPAN_KIND_CLIENT:
			client = s
		case hex.EncodeToString(s.ParentSpanId) == callerSpan:
			server = s
		default:
			child = s
		}
	}
	r.mu.Unlock()
	if server == nil || client == nil || child == nil {
		t.Fatalf("spans named tools/call echo: server %v, client %v, child %v; want all three", server != nil, client != nil, child != nil)
	}
	for _, s := range []*tracepb.Span{server, client, child} {
		if got := hex.EncodeToString(s.TraceId); got != callerTrace {
			t.Errorf("a %v span in trace %s, want the caller's %s", s.Kind, got, callerTrace)
		}
	}
	if !bytes.Equal(client.ParentSpanId, server.SpanId) {
		t.Error("the bridge's client span is not its server span's child")
	}
	if !bytes.Equal(child.ParentSpanId, client.SpanId) {
		t.Error("the child's server span is not the bridge's client span's child")
	}
	if a := attrs(r.span(t, "upgrade")); a["relay.upgrade.reason"] != "a new release" || a["relay.child.name"] != "echo#0" {
		t.Errorf("the upgrade span's attributes: %v", a)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.metrics["mcp.client.operation.duration"] {
		t.Errorf("metrics received: %v, want mcp.client.operation.duration", r.metrics)
	}
}

// stallClock is a supervise.Clock whose timers never fire; each After tells its duration on
// asked, so that a test knows when the supervisor waits out a backoff.
type stallClock struct{ asked chan time.Duration }

func (stallClock) Now() time.Time { return time.Now() }
func (c stallClock) After(d time.Duration) <-chan time.Time {
	select {
	case c.asked <- d:
	default:
	}
	return nil
}

// TestRestartSpanEndsWhenTheProxyStops: a proxy that ends while its child waits to be
// restarted (a host that closed its input during a long backoff) still ends, and so
// exports, the span "restart".
func TestRestartSpanEndsWhenTheProxyStops(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	r, tel := newTelemetry(t, "relay-supervise")
	clock := stallClock{asked: make(chan time.Duration, 16)}
	sup := supervise.New(supervise.Spec{Unlimited: true, MinBackoff: time.Hour, MaxBackoff: time.Hour, Clock: clock,
		Command: supervise.Command{Path: sh, Args: []string{"-c", "exit 3"}}})
	inR, inW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	proxied := make(chan error, 1)
	go func() {
		proxied <- supervise.Proxy(ctx, sup, inR, io.Discard, &supervise.ProxyOptions{Observer: tel.Proxy()})
	}()
	for d := range clock.asked { // the supervisor has told the proxy it restarts, and waits
		if d >= 30*time.Minute { // the backoff: an hour, give or take its jitter
			break
		}
	}
	cancel()
	inW.Close()
	if err := <-proxied; err != nil {
		t.Errorf("Proxy = %v", err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a := attrs(r.span(t, "restart")); a["relay.child.exit"] != "exit code 3" {
		t.Errorf("the restart span's attributes: %v", a)
	}
}

// TestSpansNameTheirHTTPSession: a request in an initialize-generation HTTP session carries
// the session's Mcp-Session-Id as mcp.session.id.
func TestSpansNameTheirHTTPSession(t *testing.T) {
	r, tel := newTelemetry(t, "relay-test")
	s := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{ Text string }) (*mcp.CallToolResult, error) {
		return mcp.TextResult(in.Text), nil
	})
	h := httpx.NewMCPHandler(s, &httpx.MCPOptions{Logger: zap.NewNop(), Runtime: []runtime.Option{tel.Option(telemetry.MCP)}})
	srv := httptest.NewServer(h)
	post := func(body, sid string) (string, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id"), string(b)
	}
	sid, _ := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, "")
	if sid == "" {
		t.Fatal("initialize minted no session")
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
	if _, b := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"Text":"hi"}}}`, sid); !strings.Contains(b, "hi") {
		t.Fatalf("tools/call in the session: %s", b)
	}
	srv.Close()
	h.Close()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := attrs(r.span(t, "tools/call echo"))["mcp.session.id"]; got != sid {
		t.Errorf("mcp.session.id = %q, want the session's %q", got, sid)
	}
}

// TestSpansThroughSupervise: a caller's tools/call through a supervising proxy (as relay
// supervise runs it) to an examples/echo child, restarted while the call is in flight: the
// proxy's client span is in the caller's trace under the caller's span, carries an event for
// the replay, and is the parent of the new child's server span; the restart has a span.
func TestSpansThroughSupervise(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts child processes")
	}
	r, tel := newTelemetry(t, "relay-supervise")
	bin := buildEcho(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sup := supervise.New(supervise.Spec{Unlimited: true, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Command: supervise.Command{Path: bin, Env: append(os.Environ(), "OTEL_SERVICE_NAME=echo-child"), Name: "echo"},
		Child:   supervise.ChildOptions{StopWait: 200 * time.Millisecond}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	host := hosttest.New(t, "relay supervise", inW, outR)
	proxied := make(chan error, 1)
	go func() {
		proxied <- supervise.Proxy(ctx, sup, inR, outW, &supervise.ProxyOptions{Observer: tel.Proxy()})
		outW.Close()
	}()
	if r := host.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "up"},
		"_meta": jsonObject(modernMeta)}); r.Text() != "up" {
		t.Fatalf("echo: %v", r)
	}
	_, slept := host.Send("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500},
		"_meta": jsonObject(modernMeta + `,"traceparent":"00-` + callerTrace + `-` + callerSpan + `-01"`)})
	host.Call("ping", nil) // stdin is ordered: the sleep is in the child now
	sup.Restart("the test restarts the child while a call is in flight")
	if r, ok := host.Wait(slept, 30*time.Second); !ok || r.Error != nil {
		t.Fatalf("the sleep, replayed on the new child: %v (answered %v)", r, ok)
	}
	inW.Close()
	if err := <-proxied; err != nil {
		t.Errorf("Proxy = %v", err)
	}
	<-host.Done()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	var client, child, restart *tracepb.Span
	for _, s := range r.spans {
		switch {
		case s.Name == "restart":
			restart = s
		case s.Name != "tools/call sleep":
		case s.Kind == tracepb.Span_SPAN_KIND_CLIENT:
			client = s
		case s.Kind == tracepb.Span_SPAN_KIND_SERVER:
			child = s
		}
	}
	if client == nil || child == nil || restart == nil {
		t.Fatalf("spans: client %v, the new child's server span %v, restart %v; want all three", client != nil, child != nil, restart != nil)
	}
	if hex.EncodeToString(client.TraceId) != callerTrace || hex.EncodeToString(client.ParentSpanId) != callerSpan {
		t.Errorf("the proxy's client span: trace %x parent %x, want the caller's %s under %s", client.TraceId, client.ParentSpanId, callerTrace, callerSpan)
	}
	if !bytes.Equal(child.ParentSpanId, client.SpanId) || !bytes.Equal(child.TraceId, client.TraceId) {
		t.Error("the new child's server span is not the proxy's client span's child")
	}
	replayed := false
	for _, e := range client.Events {
		replayed = replayed || e.Name == "replayed"
	}
	if !replayed {
		t.Errorf("the client span's events %v lack the replay", client.Events)
	}
	if !r.metrics["mcp.client.operation.duration"] {
		t.Errorf("metrics received: %v, want mcp.client.operation.duration", r.metrics)
	}
}

// jsonObject makes the members of a JSON object into one, for params.
func jsonObject(members string) json.RawMessage { return json.RawMessage("{" + members + "}") }

// TestSpansThroughTheGateway: a request through relay gateway's core to a supervised
// examples/echo is one trace: the gateway's server span under the caller's, its client span
// under that, the child's server span under the client span; and an upgrade of the child is a
// span "upgrade" naming the server.
func TestSpansThroughTheGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts child processes")
	}
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100") // ms: spans are exported while the test waits for them
	r, tel := newTelemetry(t, "relay-gateway")
	bin := buildEcho(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := gateway.ParseConfig([]byte(fmt.Sprintf(`{"mcpServers":{"echo":{"command":%q,"env":{"OTEL_SERVICE_NAME":"echo-child"},`+
		`"relay":{"restart":{"watch":%q}}}}}`, bin, bin)))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(ctx, cfg, &gateway.Options{Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Started(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := client.Connect(ctx, &client.MemoryTransport{Server: g.Server().Runtime(tel.Option(telemetry.MCP))})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "echo__echo", map[string]string{"text": "hi"},
		client.WithTraceContext("00-"+callerTrace+"-"+callerSpan+"-01", ""))
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("through the gateway: %v %v", res, err)
	}
	// The watched file changes: the child is upgraded without downtime.
	later := time.Now().Add(time.Minute)
	os.Chtimes(bin, later, later)
	deadline := time.Now().Add(20 * time.Second)
	for !r.has("upgrade") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	c.Close()
	if err := g.Close(); err != nil { // the children exit on EOF, flushing their spans
		t.Errorf("Close: %v", err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	r.mu.Lock()
	var server, clientSpan, child *tracepb.Span
	for _, s := range r.spans {
		if s.Name != "tools/call echo__echo" && s.Name != "tools/call echo" {
			continue
		}
		switch {
		case s.Kind == tracepb.Span_SPAN_KIND_CLIENT:
			clientSpan = s
		case hex.EncodeToString(s.ParentSpanId) == callerSpan:
			server = s
		default:
			child = s
		}
	}
	r.mu.Unlock()
	if server == nil || clientSpan == nil || child == nil {
		t.Fatalf("spans: gateway server %v, client %v, child %v; want all three", server != nil, clientSpan != nil, child != nil)
	}
	for _, s := range []*tracepb.Span{server, clientSpan, child} {
		if got := hex.EncodeToString(s.TraceId); got != callerTrace {
			t.Errorf("a %v span (%s) in trace %s, want the caller's %s", s.Kind, s.Name, got, callerTrace)
		}
	}
	if !bytes.Equal(clientSpan.ParentSpanId, server.SpanId) {
		t.Error("the gateway's client span is not its server span's child")
	}
	if !bytes.Equal(child.ParentSpanId, clientSpan.SpanId) {
		t.Error("the child's server span is not the gateway's client span's child")
	}
	if a := attrs(r.span(t, "upgrade")); a["relay.child.name"] != "echo" {
		t.Errorf("the upgrade span's attributes: %v", a)
	}
}

// has reports whether a span with this name has been received.
func (r *receiver) has(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.spans {
		if s.Name == name {
			return true
		}
	}
	return false
}

// TestReplaySpansOfAProxyWhoseCallerMadeTheSpans: with Telemetry.Children (relay bridge's and
// relay gateway's proxies, whose requests already have client spans), a request sent again
// to a new child is a span "replayed" under the span its _meta names, and the restart a span
// naming the child.
func TestReplaySpansOfAProxyWhoseCallerMadeTheSpans(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts child processes")
	}
	r, tel := newTelemetry(t, "relay-bridge")
	bin := buildEcho(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sup := supervise.New(supervise.Spec{Unlimited: true, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Command: supervise.Command{Path: bin, Name: "echo"}, Child: supervise.ChildOptions{StopWait: 200 * time.Millisecond}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	host := hosttest.New(t, "the proxy", inW, outR)
	proxied := make(chan error, 1)
	go func() {
		proxied <- supervise.Proxy(ctx, sup, inR, outW, &supervise.ProxyOptions{Observer: tel.Children("echo#0")})
		outW.Close()
	}()
	_, slept := host.Send("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500},
		"_meta": jsonObject(modernMeta + `,"traceparent":"00-` + callerTrace + `-` + callerSpan + `-01"`)})
	host.Call("ping", nil) // stdin is ordered: the sleep is in the child now
	sup.Restart("the test restarts the child while a call is in flight")
	if r, ok := host.Wait(slept, 30*time.Second); !ok || r.Error != nil {
		t.Fatalf("the sleep, replayed on the new child: %v (answered %v)", r, ok)
	}
	inW.Close()
	if err := <-proxied; err != nil {
		t.Errorf("Proxy = %v", err)
	}
	<-host.Done()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	replayed := r.span(t, "replayed")
	if hex.EncodeToString(replayed.TraceId) != callerTrace || hex.EncodeToString(replayed.ParentSpanId) != callerSpan {
		t.Errorf("the replay span: trace %x parent %x, want the caller's %s under %s", replayed.TraceId, replayed.ParentSpanId, callerTrace, callerSpan)
	}
	if a := attrs(replayed); a["relay.child.name"] != "echo#0" {
		t.Errorf("the replay span's attributes: %v", a)
	}
	if a := attrs(r.span(t, "restart")); a["relay.child.name"] != "echo#0" {
		t.Errorf("the restart span's attributes: %v", a)
	}
}
