package httpx

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/rcp"
)

// FuzzOriginAndHost checks the two gates against DNS rebinding and cross-origin calls (MCP
// 2026-07-28, Transports › Streamable HTTP › Security: validate Origin on every request, 403
// when it is present and not allowed; a loopback server answers only to a loopback Host)
// against a plain reading. With nothing listed, a serialized origin (RFC 6454 §6.2,
// scheme://host[:port], what a browser sends) passes exactly when its host is localhost or a
// loopback address, and so does a well-formed Host (RFC 9110 §7.2, host[:port]). Strings of
// neither form come from no browser and no resolver; the gates may take or leave them, but
// a listed one (or "*") always passes. Whatever the gates say, both handlers, MCP and RCP,
// refuse with 403 (a JSON body, no CORS header) or serve with the origin echoed.
func FuzzOriginAndHost(f *testing.F) {
	for _, seed := range [][2]string{
		{"http://localhost:3000", "localhost:8080"},
		{"http://127.0.0.1", "127.0.0.1"},
		{"http://[::1]:6274", "[::1]:80"},
		{"https://evil.example", "evil.example"},
		{"null", "localhost"},
		{"//localhost", "127.0.0.1.nip.io"},
		{"http://127.0.0.1.evil.example", "localhost.evil.example:80"},
		{"http://0.0.0.0:8080", "0.0.0.0:8080"},
		{"http://[::ffff:127.0.0.1]", "[::ffff:7f00:1]:1"},
		{"http://localhost@evil.example", "[::1]"},
		{"http://evil.example#@localhost", "::1"},
		{"HTTP://LOCALHOST", "LOCALHOST"},
		{"http://127.1", "127.1"},
		{"http://2130706433", "2130706433:80"},
		{"http://localhost.", "localhost.:80"},
		{"http://evil.localhost", "evil.localhost"},
		{"http://[::1%25eth0]", "[fe80::1%25eth0]:80"},
		{"http://localhost:80/path?q#f", "localhost:80:80"},
		{"file://", ""},
		{"vscode-webview://localhost", "[[::1]]"},
	} {
		f.Add(seed[0], seed[1])
	}
	s := mcp.NewServer(mcp.Implementation{Name: "fuzz", Version: "1"}, nil)
	mh := NewMCPHandler(s, &MCPOptions{Logger: zap.NewNop()})
	rh := NewRCPHandler(rcp.NewServer(rcp.Implementation{Name: "fuzz", Version: "1"}, nil), &RCPOptions{Logger: zap.NewNop()})
	f.Cleanup(func() { mh.Close(); rh.Close() })

	f.Fuzz(func(t *testing.T, origin, host string) {
		okOrigin, okHost := originAllowed(origin, nil), hostAllowed(host, nil)
		if valid, loopback := refOrigin(origin); valid && okOrigin != loopback {
			t.Fatalf("Origin %q: allowed %v; want %v (a loopback origin passes, no other)", origin, okOrigin, loopback)
		}
		if valid, loopback := refHost(host); valid && okHost != loopback {
			t.Fatalf("Host %q: allowed %v; want %v (a loopback host passes, no other)", host, okHost, loopback)
		}
		if origin == "" && !okOrigin {
			t.Fatal("no Origin (a client that is not a browser) is refused")
		}
		if !originAllowed(origin, []string{origin}) || !originAllowed(origin, []string{"*"}) {
			t.Fatalf("Origin %q is refused though listed", origin)
		}
		if !hostAllowed(host, []string{"*"}) {
			t.Fatalf("Host %q is refused though any is allowed", host)
		}
		if strings.ContainsAny(origin+host, "\r\n") {
			return // never reaches a handler: net/http refuses such a header
		}
		for _, h := range []struct {
			name, path string
			handler    http.Handler
		}{{"MCP", "/mcp", mh}, {"RCP", "/rcp/ping", rh}} {
			r := httptest.NewRequest(http.MethodOptions, "/", nil)
			r.URL.Path, r.Host = h.path, host
			if origin != "" {
				r.Header.Set("Origin", origin)
			}
			w := httptest.NewRecorder()
			h.handler.ServeHTTP(w, r)
			acao := w.Header().Get("Access-Control-Allow-Origin")
			switch {
			case okOrigin && okHost:
				if w.Code != http.StatusNoContent || acao != origin {
					t.Fatalf("%s: Origin %q, Host %q pass the gates but got HTTP %d, Access-Control-Allow-Origin %q", h.name, origin, host, w.Code, acao)
				}
			case w.Code != http.StatusForbidden || acao != "":
				t.Fatalf("%s: Origin %q, Host %q got HTTP %d, Access-Control-Allow-Origin %q; want 403 and none", h.name, origin, host, w.Code, acao)
			case !json.Valid(w.Body.Bytes()):
				t.Fatalf("%s: the 403's body is not JSON: %q", h.name, w.Body.Bytes())
			}
		}
	})
}

// refOrigin reports whether o is a serialized origin, scheme "://" host [":" port], and
// whether its host is localhost or a loopback address.
func refOrigin(o string) (valid, loopback bool) {
	scheme, rest, ok := strings.Cut(o, "://")
	if !ok || scheme == "" || !refScheme(scheme) {
		return false, false
	}
	return refHost(rest)
}

func refScheme(s string) bool {
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// refHost reports whether h is host [":" port] (RFC 9110 §7.2, RFC 3986 §3.2.2: an IPv6
// address in brackets, an IPv4 address, or a name of letters, digits, "-" and "."), and
// whether it names localhost or a loopback address: "localhost", an IPv4 address in
// 127.0.0.0/8, or ::1 or an IPv6 address mapping one of those IPv4 addresses.
func refHost(h string) (valid, loopback bool) {
	name := h
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
		name = h[:i]
		for _, c := range h[i+1:] {
			if c < '0' || c > '9' {
				return false, false
			}
		}
	}
	if inner, ok := strings.CutPrefix(name, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		a, err := netip.ParseAddr(inner)
		if !ok || err != nil || !a.Is6() || a.Zone() != "" {
			return false, false
		}
		return true, a.Unmap().IsLoopback()
	}
	if a, err := netip.ParseAddr(name); err == nil {
		return a.Is4(), a.Is4() && a.IsLoopback()
	}
	if name == "" {
		return false, false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false, false
		}
	}
	return true, strings.EqualFold(name, "localhost")
}
