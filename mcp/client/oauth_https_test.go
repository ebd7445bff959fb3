package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// fakeWeb answers GETs of the URLs in docs with their JSON, 404 otherwise, and records
// every URL asked for.
type fakeWeb struct {
	docs map[string]any
	mu   sync.Mutex
	got  []string
}

func (f *fakeWeb) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.got = append(f.got, r.URL.String())
	f.mu.Unlock()
	doc, ok := f.docs[r.URL.String()]
	if !ok {
		return &http.Response{StatusCode: 404, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}, Request: r}, nil
	}
	b, _ := json.Marshal(doc)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(string(b))), Header: http.Header{}, Request: r}, nil
}

// Discovery fetches metadata and uses authorization servers only over https, or http on a
// loopback host.
func TestOAuth_DiscoveryRequiresHTTPS(t *testing.T) {
	asDoc := func(issuer, token string) map[string]any {
		return map[string]any{"issuer": issuer, "authorization_endpoint": issuer + "/authorize", "token_endpoint": token,
			"registration_endpoint": issuer + "/register"}
	}
	prm := func(res, as string) map[string]any {
		return map[string]any{"resource": res, "authorization_servers": []string{as}}
	}
	for _, tc := range []struct {
		name, mcp, resourceMetadata string
		docs                        map[string]any
		ok                          bool
	}{
		{name: "http resource metadata", mcp: "https://rs.example/mcp", resourceMetadata: "http://rs.example/prm",
			docs: map[string]any{"http://rs.example/prm": prm("https://rs.example/mcp", "https://as.example"),
				"https://as.example/.well-known/oauth-authorization-server": asDoc("https://as.example", "https://as.example/token")}},
		{name: "http issuer", mcp: "https://rs.example/mcp",
			docs: map[string]any{"https://rs.example/.well-known/oauth-protected-resource/mcp": prm("https://rs.example/mcp", "http://as.example"),
				"http://as.example/.well-known/oauth-authorization-server": asDoc("http://as.example", "http://as.example/token")}},
		{name: "http token endpoint", mcp: "https://rs.example/mcp",
			docs: map[string]any{"https://rs.example/.well-known/oauth-protected-resource/mcp": prm("https://rs.example/mcp", "https://as.example"),
				"https://as.example/.well-known/oauth-authorization-server": asDoc("https://as.example", "http://as.example/token")}},
		{name: "http 2025-03-26 origin", mcp: "http://rs.example/mcp", docs: map[string]any{}},
		{name: "loopback", mcp: "http://localhost:3000/mcp", resourceMetadata: "http://localhost:3000/prm", ok: true,
			docs: map[string]any{"http://localhost:3000/prm": prm("http://localhost:3000/mcp", "http://127.0.0.1:4000"),
				"http://127.0.0.1:4000/.well-known/oauth-authorization-server": asDoc("http://127.0.0.1:4000", "http://[::1]:4000/token")}},
		{name: "https", mcp: "https://rs.example/mcp", ok: true,
			docs: map[string]any{"https://rs.example/.well-known/oauth-protected-resource/mcp": prm("https://rs.example/mcp", "https://as.example"),
				"https://as.example/.well-known/oauth-authorization-server": asDoc("https://as.example", "https://as.example/token")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			web := &fakeWeb{docs: tc.docs}
			o := &OAuth{Client: &http.Client{Transport: web}}
			rt := o.roundTripper(nil, tc.mcp)
			ch := map[string]string{}
			if tc.resourceMetadata != "" {
				ch["resource_metadata"] = tc.resourceMetadata
			}
			_, _, err := rt.discover(context.Background(), ch)
			if tc.ok {
				if err != nil {
					t.Fatalf("discover: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "https") {
				t.Fatalf("discover: %v, want a refusal saying https is required", err)
			}
			for _, u := range web.got {
				if strings.HasPrefix(u, "http:") {
					t.Errorf("fetched %s over plain http", u)
				}
			}
		})
	}
}
