package httpx_test

// One entry path for both protocols: the same checks, in the same order, with the same
// answers where the protocols do not differ.

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
)

// TestRCP_UnauthorizedNamesTheResourceMetadata: RCP's 401, like MCP's, carries a Bearer
// challenge whose resource_metadata names the protected resource metadata (RFC 9728 §5.1)
// when some is configured, and the metadata is served; the body is -32012 (RCP/1 §15.6).
func TestRCP_UnauthorizedNamesTheResourceMetadata(t *testing.T) {
	h := httpx.NewRCPHandler(rcpServer(nil), &httpx.RCPOptions{Logger: zap.NewNop(),
		Authenticator:     httpx.BearerTokens(map[string]string{"good": "ada"}),
		ProtectedResource: &httpx.ProtectedResourceMetadata{Resource: "http://127.0.0.1/rcp", AuthorizationServers: []string{"https://auth.example.com"}}})
	srv := httptest.NewServer(h)
	defer func() { srv.Close(); h.Close() }()
	for _, auth := range []string{"", "Bearer wrong"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/rcp/ping", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var m rpcMsg
		json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		www := resp.Header.Get("WWW-Authenticate")
		want := `resource_metadata="` + srv.URL + `/.well-known/oauth-protected-resource"`
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(www, "Bearer") || !strings.Contains(www, want) {
			t.Errorf("Authorization %q: %d, WWW-Authenticate %q; want 401 and Bearer … %s", auth, resp.StatusCode, www, want)
		}
		if m.code() != -32012 || string(m.ID) != "null" {
			t.Errorf("Authorization %q: the body is %+v, want -32012 with id null", auth, m)
		}
	}
	resp, err := http.Get(srv.URL + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var md struct {
		Resource string `json:"resource"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&md) != nil || md.Resource != "http://127.0.0.1/rcp" {
		t.Errorf("protected resource metadata: %d %+v", resp.StatusCode, md)
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestDoor_RateLimitBeforeTheInFlightSlot: both protocols apply the rate limit before they
// take an in-flight slot, so a rate-limited client is told so (429) even when the server is
// also at its limit of requests in flight, and never holds a slot while it is refused.
func TestDoor_RateLimitBeforeTheInFlightSlot(t *testing.T) {
	limiter := func() *httpx.Ops { return httpx.NewOps(httpx.NewRateLimiter(0.001, 2, 10)) }

	t.Run("MCP", func(t *testing.T) {
		f := newFixture(t, &httpx.MCPOptions{MaxInFlight: 1, Ops: limiter()})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		body, hdr := modernCall(1, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "slot"}})
		done := f.doAsync(f.request(ctx, http.MethodPost, body, hdr...))
		await(t, f.tk.started, "the request that holds the one slot")
		list, hdr := modernCall(2, "tools/list", nil)
		if r := f.post(list, hdr...); r.status != http.StatusServiceUnavailable {
			t.Fatalf("the second request, within the rate: got %s, want 503 (no slot)", r)
		}
		r := f.post(list, hdr...)
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
			t.Errorf("the third request, over the rate: got %s, want 429 with Retry-After", r)
		}
		cancel()
		await(t, done, "the blocked request to end")
	})

	t.Run("RCP", func(t *testing.T) {
		release := make(chan struct{})
		h := httpx.NewRCPHandler(rcpServer(release), &httpx.RCPOptions{Logger: zap.NewNop(), MaxInFlight: 1, Ops: limiter()})
		srv := httptest.NewServer(h)
		defer func() { srv.Close(); h.Close() }()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/rcp/retrieve",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","wait":true,"_meta":{"progressToken":"p"}}}`))
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sse := &sseReader{r: bufio.NewReader(resp.Body)}
		if m := sse.nextMsg(t); m.Method != "notifications/progress" { // the handler runs: the slot is held
			t.Fatalf("first event %+v, want progress", m)
		}
		if status, body, _ := rcpTryPost(context.Background(), srv.URL, "/rcp/ping", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil); status != http.StatusServiceUnavailable {
			t.Fatalf("the second request, within the rate: %d %s, want 503 (no slot)", status, body)
		}
		status, body, err := rcpTryPost(context.Background(), srv.URL, "/rcp/ping", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, nil)
		if err != nil || status != http.StatusTooManyRequests || !strings.Contains(string(body), `"code":-32011`) {
			t.Errorf("the third request, over the rate: %d %s %v, want 429 with -32011", status, body, err)
		}
		close(release)
		if m := sse.nextMsg(t); string(m.ID) != "1" {
			t.Errorf("final event %+v", m)
		}
		http.DefaultClient.CloseIdleConnections()
	})
}
