package httpx_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

const opsMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`

func opsPost(t *testing.T, url, method, name, params string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
		fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestOps_MetricsAfterAKnownSequence(t *testing.T) {
	ops := httpx.NewOps(nil)
	s := mcp.NewServer(mcp.Implementation{Name: "m", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ok"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
		return mcp.TextResult("fine"), nil
	})
	h := httpx.NewMCPHandler(s, &httpx.MCPOptions{Ops: ops, Logger: zap.NewNop()})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle("/", ops.Handler())
	srv := httptest.NewServer(mux)
	defer func() { http.DefaultClient.CloseIdleConnections(); srv.Close(); h.Close() }()

	for range 3 {
		opsPost(t, srv.URL+"/mcp", "tools/call", "ok", `{"name":"ok",`+opsMeta+`}}`)
	}
	opsPost(t, srv.URL+"/mcp", "tools/call", "missing", `{"name":"missing",`+opsMeta+`}}`) // -32602
	opsPost(t, srv.URL+"/mcp", "x-private/thing", "", `{`+opsMeta+`}}`)                    // -32601, label "other"

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`relay_http_requests_total{method="tools/call",outcome="ok",protocol="mcp"} 3`,
		`relay_http_requests_total{method="tools/call",outcome="error",protocol="mcp"} 1`,
		`relay_http_requests_total{method="other",outcome="error",protocol="mcp"} 1`,
		`relay_http_in_flight{protocol="mcp"} 0`,
		`relay_http_request_duration_seconds_count{method="tools/call",protocol="mcp"} 4`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(body), "x-private") {
		t.Error("a client's method name became a label value")
	}
	status := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if status("/healthz") != 200 || status("/readyz") != 200 {
		t.Error("/healthz and /readyz must answer 200 while serving")
	}
	ops.SetReady(false)
	if code := status("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while shutting down: %d", code)
	}
}

func TestOps_RateLimiterRefusesWithRetryAfter(t *testing.T) {
	ops := httpx.NewOps(httpx.NewRateLimiter(0.001, 2, 100))
	s := mcp.NewServer(mcp.Implementation{Name: "m", Version: "1"}, nil)
	h := httpx.NewMCPHandler(s, &httpx.MCPOptions{Ops: ops, Logger: zap.NewNop()})
	srv := httptest.NewServer(h)
	defer func() { http.DefaultClient.CloseIdleConnections(); srv.Close(); h.Close() }()
	var codes []int
	for range 3 {
		resp := opsPost(t, srv.URL+"/mcp", "server/discover", "", `{`+opsMeta+`}}`)
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Fatalf("statuses %v, want a burst of 2 then 429", codes)
	}
}

func TestOps_RateLimiterTableStaysBounded(t *testing.T) {
	l := httpx.NewRateLimiter(10, 5, 1000)
	now := time.Unix(0, 0)
	for i := range 100_000 {
		l.Allow(fmt.Sprintf("client-%d", i), now)
	}
	if n := l.Len(); n != 1000 {
		t.Fatalf("the table holds %d clients after 100,000 distinct keys, want 1000", n)
	}
	// The most recent clients are the ones remembered: their buckets are partly spent.
	for range 5 {
		l.Allow("client-99999", now)
	}
	if _, ok := l.Allow("client-99999", now); ok {
		t.Error("a remembered client's bucket was not kept")
	}
}

func TestOps_TraceparentReachesTheHandler(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	got := make(chan string, 2)
	s := mcp.NewServer(mcp.Implementation{Name: "m", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "trace"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		tc, _ := runtime.TraceFrom(ctx)
		got <- tc.TraceID()
		return mcp.TextResult("ok"), nil
	})
	h := httpx.NewMCPHandler(s, &httpx.MCPOptions{Logger: zap.NewNop()})
	srv := httptest.NewServer(h)
	defer func() { http.DefaultClient.CloseIdleConnections(); srv.Close(); h.Close() }()
	// In _meta (DIGEST A2) ...
	opsPost(t, srv.URL+"/mcp", "tools/call", "trace", `{"name":"trace",`+opsMeta+`,"traceparent":"`+tp+`"}}`)
	// ... and in the HTTP header.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trace",`+opsMeta+`}}}`))
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "trace")
	req.Header.Set("traceparent", tp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, where := range []string{"_meta", "header"} {
		if id := <-got; id != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("trace id from %s: %q", where, id)
		}
	}
}
