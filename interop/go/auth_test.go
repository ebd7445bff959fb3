package interop

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relayrt/relay/internal/oidctest"
	relaymcp "github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// testIssuer is an authorization server for the tests: RFC 8414 metadata and a JWK set of
// one RSA key, with which it signs access tokens.
type testIssuer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
}

func newTestIssuer(t *testing.T) *testIssuer {
	is := &testIssuer{}
	is.key, _ = rsa.GenerateKey(rand.Reader, 2048)
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]any{"kty": "RSA", "kid": "k1", "use": "sig",
			"n": b64(is.key.N.Bytes()), "e": b64(big.NewInt(int64(is.key.E)).Bytes())}}})
	})
	is.srv = httptest.NewUnstartedServer(mux) // set before it serves: the handlers read it
	is.srv.Start()
	t.Cleanup(is.srv.Close)
	return is
}

func (is *testIssuer) token(t *testing.T, aud, scope string) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": is.srv.URL, "aud": aud, "sub": "ada",
		"scope": scope, "exp": time.Now().Add(time.Hour).Unix()})
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(is.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bearer adds a token to every request the SDK client makes.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// relay bridge --auth-issuer --auth-audience puts a stdio server behind an OAuth 2.1
// resource server (MCP Authorization): without a token the official Go SDK client is
// refused with 401 and a challenge naming the protected resource metadata, which is
// served; a token for another resource is refused; one for this server, with the scope,
// reaches the child.
func TestBridgeAsAnOAuthResourceServer(t *testing.T) {
	is := newTestIssuer(t)
	// The canonical URI must be known before the port is: the bridge's is fixed below.
	url := startBridgeFlags(t, []string{"--pool", "1", "--auth-issuer", is.srv.URL,
		"--auth-audience", "https://mcp.example.com/mcp", "--auth-scopes", "mcp"}, echoBin)
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	www := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(www, "resource_metadata=") || !strings.Contains(www, `scope="mcp"`) {
		t.Fatalf("no token: HTTP %d, WWW-Authenticate %q", resp.StatusCode, www)
	}
	meta, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	json.NewDecoder(meta.Body).Decode(&md)
	meta.Body.Close()
	if md.Resource != "https://mcp.example.com/mcp" || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != is.srv.URL {
		t.Fatalf("protected resource metadata: %+v", md)
	}
	connect := func(token string) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "relay-interop-auth", Version: "0.0.1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	}
	if cs, err := connect(is.token(t, "https://elsewhere.example.com/mcp", "mcp")); err == nil {
		cs.Close()
		t.Fatal("a token issued for another resource was accepted")
	}
	if cs, err := connect(is.token(t, "https://mcp.example.com/mcp", "other")); err == nil {
		cs.Close()
		t.Fatal("a token without the scope was accepted")
	}
	cs, err := connect(is.token(t, "https://mcp.example.com/mcp", "mcp"))
	if err != nil {
		t.Fatalf("a good token: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "behind oauth"}})
	if err != nil || res.IsError {
		t.Fatalf("echo: %+v, %v", res, err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(got, "behind oauth") {
		t.Fatalf("echo answered %q", got)
	}
	http.DefaultClient.CloseIdleConnections()
}

// The whole chain with real peers: relay bridge protects a stdio server as a resource server
// of oidc-provider, and Relay's client (mcp/client) finds the authorization server from
// the bridge's 401, signs in through the provider's pages (the authorization code flow with
// PKCE and the resource indicator) and calls a tool with the token it gets; the child never
// sees the token.
func TestBridgeWithRelayClientAndOIDCProvider(t *testing.T) {
	addr := freeAddr(t)
	resource := "http://" + addr + "/mcp"
	const redirect = "http://127.0.0.1:9/callback"
	issuer := oidctest.Start(t, resource, redirect)
	url := startBridgeAt(t, addr, []string{"--pool", "1", "--auth-issuer", issuer, "--auth-audience", resource,
		"--auth-scopes", "mcp:read"}, echoBin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := client.HTTP(url)
	tr.OAuth = &client.OAuth{ClientID: oidctest.ClientID, RedirectURL: redirect,
		Authorize: func(ctx context.Context, authURL string) (*neturl.URL, error) {
			return oidctest.SignIn(ctx, authURL, redirect)
		}}
	c, err := client.Connect(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "echo", map[string]any{"text": "through the bridge"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*relaymcp.TextContent).Text; !strings.Contains(got, "through the bridge") {
		t.Fatalf("echo answered %q", got)
	}
}
