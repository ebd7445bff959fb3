package httpx_test

// Security of the Streamable HTTP endpoint: DIGEST A13 (Origin, 403), A3 (authentication on
// every request), and the transport's own limits (body size, slow headers).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/httpx"
)

func TestA13_OriginIsValidatedOnEveryRequest(t *testing.T) {
	f := newFixture(t, nil)
	body, hdr := modernCall(1, "tools/list", nil)
	cases := []struct {
		origin string
		status int
	}{
		{"http://evil.example.com", 403},
		{"https://evil.example.com:8443", 403},
		{"null", 403},
		{"http://localhost.evil.example.com", 403},
		{"http://127.0.0.1.evil.example.com", 403},
		{"http://localhost:1234", 200},
		{"http://127.0.0.1", 200},
		{"http://[::1]:9", 200},
		{"", 200}, // no Origin: not a browser
	}
	for _, tc := range cases {
		t.Run("Origin "+tc.origin, func(t *testing.T) {
			r := f.post(body, with(hdr, "Origin", tc.origin)...)
			if r.status != tc.status {
				t.Fatalf("got %s, want %d", r, tc.status)
			}
			if tc.status == 403 {
				m := r.rpc(t)
				if m.Error == nil || m.ID != nil && string(m.ID) != "null" {
					t.Errorf("A13 a 403 carries an id-less JSON-RPC error; got %s", r.body)
				}
				if r.header.Get("Access-Control-Allow-Origin") != "" {
					t.Errorf("a refused origin got CORS headers")
				}
			}
		})
	}
	// GET and OPTIONS from a bad origin are refused as well: every request is checked.
	for _, method := range []string{http.MethodGet, http.MethodOptions, http.MethodDelete} {
		r := f.do(f.request(context.Background(), method, nil, "Origin", "http://evil.example.com"))
		if r.status != 403 {
			t.Errorf("%s from a bad origin: got %s, want 403", method, r)
		}
	}
}

func TestA13_ConfiguredOriginGetsCORS(t *testing.T) {
	const app = "https://app.example.com"
	f := newFixture(t, &httpx.MCPOptions{AllowedOrigins: []string{app}})
	body, hdr := modernCall(1, "tools/list", nil)
	r := f.post(body, with(hdr, "Origin", app)...)
	if r.status != 200 {
		t.Fatalf("got %s", r)
	}
	if got := r.header.Get("Access-Control-Allow-Origin"); got != app {
		t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, app)
	}
	if !strings.Contains(strings.Join(r.header.Values("Vary"), ","), "Origin") {
		t.Errorf("Vary = %q, want Origin", r.header.Values("Vary"))
	}

	pre := f.do(f.request(context.Background(), http.MethodOptions, nil, "Origin", app,
		"Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "content-type, mcp-protocol-version, mcp-method, mcp-name, authorization"))
	if pre.status != http.StatusNoContent {
		t.Fatalf("pre-flight: got %s, want 204", pre)
	}
	if got := pre.header.Get("Access-Control-Allow-Origin"); got != app {
		t.Errorf("pre-flight Access-Control-Allow-Origin = %q", got)
	}
	if !strings.Contains(pre.header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("Access-Control-Allow-Methods = %q", pre.header.Get("Access-Control-Allow-Methods"))
	}
	allowed := strings.ToLower(pre.header.Get("Access-Control-Allow-Headers"))
	for _, h := range []string{"content-type", "mcp-protocol-version", "mcp-method", "mcp-name", "authorization"} {
		if !strings.Contains(allowed, h) {
			t.Errorf("Access-Control-Allow-Headers %q lacks %s", allowed, h)
		}
	}
	// Another origin is still refused.
	if r := f.post(body, with(hdr, "Origin", "https://other.example.com")...); r.status != 403 {
		t.Errorf("an unlisted origin: got %s, want 403", r)
	}
}

func TestA13_HostMustBeLoopbackUnlessConfigured(t *testing.T) {
	body, hdr := modernCall(1, "tools/list", nil)
	f := newFixture(t, nil)
	for _, tc := range []struct {
		host   string
		status int
	}{
		{"evil.example.com", 403},
		{"evil.example.com:80", 403},
		{"localhost", 200},
		{"localhost:9999", 200},
		{"127.0.0.1:1", 200},
		{"[::1]:8080", 200},
	} {
		if r := f.post(body, with(hdr, "Host", tc.host)...); r.status != tc.status {
			t.Errorf("Host %s: got %s, want %d", tc.host, r, tc.status)
		}
	}
	g := newFixture(t, &httpx.MCPOptions{AllowedHosts: []string{"mcp.example.com"}})
	if r := g.post(body, with(hdr, "Host", "mcp.example.com:443")...); r.status != 200 {
		t.Errorf("a configured host: got %s", r)
	}
	if r := g.post(body, with(hdr, "Host", "evil.example.com")...); r.status != 403 {
		t.Errorf("an unlisted host: got %s", r)
	}
}

func TestA3_AuthenticationOnEveryRequest(t *testing.T) {
	tokens := httpx.BearerTokens(map[string]string{"tok-ada": "ada", "tok-bob": "bob"})
	body, hdr := modernCall(1, "tools/call", map[string]any{"name": "whoami"})

	t.Run("401 with WWW-Authenticate naming the resource metadata", func(t *testing.T) {
		f := newFixture(t, &httpx.MCPOptions{Authenticator: tokens,
			ProtectedResource: &httpx.ProtectedResourceMetadata{Resource: "http://127.0.0.1/mcp", AuthorizationServers: []string{"https://auth.example.com"}}})
		for _, auth := range []string{"", "Bearer wrong", "Basic dG9rLWFkYQ=="} {
			r := f.post(body, with(hdr, "Authorization", auth)...)
			if r.status != http.StatusUnauthorized {
				t.Fatalf("Authorization %q: got %s, want 401", auth, r)
			}
			www := r.header.Get("WWW-Authenticate")
			want := `resource_metadata="` + f.base + `/.well-known/oauth-protected-resource"`
			if !strings.HasPrefix(www, "Bearer") || !strings.Contains(www, want) {
				t.Errorf("WWW-Authenticate = %q, want Bearer … %s", www, want)
			}
		}
		resp, err := f.c.Get(f.base + "/.well-known/oauth-protected-resource")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&md) != nil || md.Resource != "http://127.0.0.1/mcp" ||
			len(md.AuthorizationServers) != 1 {
			t.Errorf("protected resource metadata: %d %+v", resp.StatusCode, md)
		}
		// A pre-flight carries no credentials and is answered without them.
		if r := f.do(f.request(context.Background(), http.MethodOptions, nil, "Origin", "http://localhost:3000")); r.status != 204 {
			t.Errorf("pre-flight: got %s, want 204", r)
		}
	})

	t.Run("401 without resource_metadata when no ProtectedResource is set", func(t *testing.T) {
		f := newFixture(t, &httpx.MCPOptions{Authenticator: tokens})
		r := f.post(body, hdr...)
		if r.status != 401 || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") ||
			strings.Contains(r.header.Get("WWW-Authenticate"), "resource_metadata") {
			t.Errorf("got %s, WWW-Authenticate %q", r, r.header.Get("WWW-Authenticate"))
		}
		resp, err := f.c.Get(f.base + "/.well-known/oauth-protected-resource")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("the metadata is served although none is configured: %d", resp.StatusCode)
		}
	})

	t.Run("a valid token reaches the handler as its principal", func(t *testing.T) {
		f := newFixture(t, &httpx.MCPOptions{Authenticator: tokens})
		for tok, who := range map[string]string{"tok-ada": "ada", "tok-bob": "bob"} {
			r := f.post(body, with(hdr, "Authorization", "Bearer "+tok)...)
			if r.status != 200 {
				t.Fatalf("got %s", r)
			}
			if got := r.rpc(t).text(t); got != who {
				t.Errorf("runtime.PrincipalFrom(ctx) = %q, want %q", got, who)
			}
		}
	})

	t.Run("legacy: every request of a session is authenticated", func(t *testing.T) {
		f := newFixture(t, &httpx.MCPOptions{Authenticator: tokens})
		sid := f.initialize(t, `{}`, "Authorization", "Bearer tok-ada")
		call := message(2, "tools/call", map[string]any{"name": "whoami"})
		if r := f.legacyPost(sid, call); r.status != 401 {
			t.Errorf("a session request without a token: got %s, want 401", r)
		}
		r := f.legacyPost(sid, call, "Authorization", "Bearer tok-ada")
		if r.status != 200 || r.rpc(t).text(t) != "ada" {
			t.Errorf("got %s", r)
		}
		req := f.request(context.Background(), http.MethodDelete, nil, "Mcp-Session-Id", sid)
		if r := f.do(req); r.status != 401 {
			t.Errorf("DELETE without a token: got %s, want 401", r)
		}
	})

	// A session is bound to the principal that opened it: another principal holding the id
	// must not act inside it, and above all must not act as its owner.
	t.Run("legacy: a session id does not work for another principal", func(t *testing.T) {
		f := newFixture(t, &httpx.MCPOptions{Authenticator: tokens})
		sid := f.initialize(t, `{}`, "Authorization", "Bearer tok-ada")
		r := f.legacyPost(sid, message(2, "tools/call", map[string]any{"name": "whoami"}), "Authorization", "Bearer tok-bob")
		if r.status == 200 {
			t.Errorf("bob used ada's session and ran as %q; want a refusal (403 or 404)", r.rpc(t).text(t))
		}
	})
}

// TestLimits_OversizedBodyIs413AndServingGoesOn: a 64 MiB body is cut off at MaxBody (16 MiB
// by default) with 413, and the next request is served.
func TestLimits_OversizedBodyIs413AndServingGoesOn(t *testing.T) {
	f := newFixture(t, nil)
	const size = 64 << 20
	_, hdr := modernCall(1, "tools/list", nil)
	req := f.request(context.Background(), http.MethodPost, nil, hdr...)
	req.Body = io.NopCloser(io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"`),
		io.LimitReader(zeros{}, size)))
	req.ContentLength = -1 // streamed, as a hostile client would
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatalf("the client saw no answer to the oversized body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("got %d %s, want 413", resp.StatusCode, b)
	}
	body, hdr := modernCall(2, "tools/list", nil)
	if r := f.post(body, hdr...); r.status != 200 {
		t.Fatalf("the next request: got %s", r)
	}

	g := newFixture(t, &httpx.MCPOptions{MaxBody: 256})
	big, hdr := modernCall(3, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": strings.Repeat("x", 300)}})
	if r := g.post(big, hdr...); r.status != 413 {
		t.Errorf("MaxBody 256: got %s, want 413", r)
	}
	small, hdr := modernCall(4, "tools/list", nil)
	if r := g.post(small, hdr...); r.status != 200 {
		t.Errorf("MaxBody 256, a small body: got %s", r)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// TestLimits_SlowHeadersAreCutOff: a client that trickles its header bytes is disconnected by
// ReadHeaderTimeout while other clients are served.
func TestLimits_SlowHeadersAreCutOff(t *testing.T) {
	f := newFixture(t, nil) // for its handler; served here by httpx.Serve
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- httpx.Serve(ctx, ln, f.h, &httpx.ServerOptions{ReadHeaderTimeout: 200 * time.Millisecond, ShutdownTimeout: time.Second})
	}()
	defer func() {
		stop()
		if err := await(t, served, "Serve to return"); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	trickleDone := make(chan struct{})
	go func() { // one header byte every 20 ms, for up to 5 s: never a complete header
		defer close(trickleDone)
		for time.Since(start) < waitLong {
			if _, err := conn.Write([]byte("a")); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	conn.SetReadDeadline(time.Now().Add(waitLong))
	_, err = io.Copy(io.Discard, conn) // until the server closes the connection
	elapsed := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the slow client was not cut off within %s", waitLong)
	}
	if elapsed > 2*time.Second {
		t.Errorf("the slow client was cut off after %s; want about the 200 ms ReadHeaderTimeout", elapsed)
	}
	conn.Close()
	<-trickleDone

	// The server still serves a well-behaved client.
	body, hdr := modernCall(1, "tools/list", nil)
	req := f.request(context.Background(), http.MethodPost, body, hdr...)
	req.URL.Host = ln.Addr().String()
	req.Host = ""
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a normal request after the slow one: %d", resp.StatusCode)
	}
	f.tr.CloseIdleConnections()
}

// TestHandlerLeavesTheRequestAlone: net/http's contract is that a handler does not modify the
// *http.Request it is given (other than reading the body); middleware around MCPHandler may
// read the request, its context included, concurrently or after ServeHTTP.
func TestHandlerLeavesTheRequestAlone(t *testing.T) {
	f := newFixture(t, &httpx.MCPOptions{Authenticator: httpx.BearerTokens(map[string]string{"tok": "ada"})})
	body, hdr := modernCall(1, "tools/list", nil)
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	req.Header.Set("Authorization", "Bearer tok")
	ctx := req.Context()
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	if req.Context() != ctx {
		t.Errorf("ServeHTTP replaced the caller's request (*r = *r.WithContext(...)); it must work on a copy")
	}
}
