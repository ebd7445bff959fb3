package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/oidctest"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// The authorization code flow end to end against a real authorization server:
// oidc-provider (interop/oidc, installed by npm ci) issues JWT access tokens for the MCP
// server's resource, the server is httpx's MCP handler with its TokenVerifier, and the
// client logs in through the provider's login and consent pages, filled in here.
func TestOAuth_OIDCProviderEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The MCP server's URL is the provider's resource, so it listens first; its handler
	// comes once the provider's keys can be read.
	var handler atomic.Pointer[http.Handler]
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := handler.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, "starting", http.StatusServiceUnavailable)
	}))
	defer rs.Close()
	resource := rs.URL + "/mcp"
	const redirect = "http://127.0.0.1:9/callback"
	issuer := oidctest.Start(t, resource, redirect)

	verifier, err := httpx.NewTokenVerifier(ctx, httpx.TokenVerifierOptions{Issuer: issuer, Audience: resource, Scopes: []string{"mcp:read"}})
	if err != nil {
		t.Fatal(err)
	}
	mh := httpx.NewMCPHandler(newFixture(), &httpx.MCPOptions{Logger: zap.NewNop(), Authenticator: verifier.Authenticate,
		ProtectedResource: &httpx.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{issuer},
			ScopesSupported: []string{"mcp:read"}}})
	defer mh.Close()
	var h http.Handler = mh
	handler.Store(&h)

	logins := 0
	tr := client.HTTP(resource)
	tr.OAuth = &client.OAuth{ClientID: oidctest.ClientID, RedirectURL: redirect,
		Authorize: func(ctx context.Context, authURL string) (*url.URL, error) {
			logins++
			return oidctest.SignIn(ctx, authURL, redirect)
		}}
	for _, g := range generations {
		c, err := client.Connect(ctx, tr, g.opts...)
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		res, err := c.CallTool(ctx, "echo", map[string]any{"text": "through oidc-provider"})
		c.Close()
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "through oidc-provider" {
			t.Fatalf("%s: CallTool: %v %+v", g.name, err, res)
		}
	}
	if logins != 1 {
		t.Fatalf("%d logins for two connections with one OAuth, want 1 (the token is kept)", logins)
	}
}
