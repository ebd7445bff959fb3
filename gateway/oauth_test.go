package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// A remote upstream behind OAuth 2.1 ("relay": {"oauth": ...}): the gateway discovers its
// authorization server from the 401, gets a token with the client credentials grant (the
// secret from the environment), and its calls carry it (MCP 2025-11-25, Basic ›
// Authorization).
func TestGateway_RemoteUpstreamWithOAuthClientCredentials(t *testing.T) {
	var tokenRequests atomic.Int32
	asAddr := freeAddr(t)
	issuer := "http://" + asAddr
	as := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]any{"issuer": issuer, "token_endpoint": issuer + "/token",
				"authorization_endpoint": issuer + "/authorize", "code_challenge_methods_supported": []string{"S256"},
				"token_endpoint_auth_methods_supported": []string{"client_secret_basic"},
				"grant_types_supported":                 []string{"client_credentials"}})
		case "/token":
			r.ParseForm()
			id, secret, _ := r.BasicAuth()
			if r.PostForm.Get("grant_type") != "client_credentials" || id != "gateway" || secret != "s3cret" {
				http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
				return
			}
			tokenRequests.Add(1)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"access_token":"granted","token_type":"Bearer","expires_in":3600}`)
		default:
			http.NotFound(w, r)
		}
	})}
	serveServer(t, asAddr, as)

	remote := mcp.NewServer(mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "note"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult("remote: " + in.Text), nil
	})
	rsAddr := freeAddr(t)
	mcpURL := "http://" + rsAddr + "/mcp"
	prm := "http://" + rsAddr + "/.well-known/oauth-protected-resource/mcp"
	serveAt(t, rsAddr, remote, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
				json.NewEncoder(w).Encode(map[string]any{"resource": mcpURL, "authorization_servers": []string{issuer}})
				return
			}
			if r.Header.Get("Authorization") != "Bearer granted" {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s"`, prm))
				http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	t.Setenv("RELAY_GATEWAY_TEST_SECRET", "s3cret")
	f := startGateway(t, config(fmt.Sprintf(`"far": {"url": %q, "relay": {"oauth": {"clientId": "gateway", "clientSecret": "${RELAY_GATEWAY_TEST_SECRET}", "issuer": %q}}}`, mcpURL, issuer)))
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	if names := toolNames(t, c); !slices.Contains(names, "far__note") {
		t.Fatalf("tools/list: %v (status %+v)", names, f.g.Status())
	}
	if r, err := c.CallTool(context.Background(), "far__note", noteIn{Text: "authorized"}); err != nil || text(r) != "remote: authorized" {
		t.Errorf("far__note: %q %v", text(r), err)
	}
	if n := tokenRequests.Load(); n < 1 {
		t.Errorf("%d token requests, want the client credentials grant used", n)
	}
	if st := f.g.Status(); st[0].State != "up" || strings.Contains(st[0].LastError, "401") {
		t.Errorf("status: %+v", st[0])
	}
}
