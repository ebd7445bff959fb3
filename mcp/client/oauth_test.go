package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// authServer is an OAuth 2.1 authorization server for the tests (RFC 8414 metadata,
// dynamic registration, the authorization endpoint approving at once, the token endpoint
// with PKCE, resource and refresh), and the MCP server it protects: calls of tools/call
// need the scope mcp:write, everything else mcp:read (MCP 2025-11-25, Authorization ›
// Scope challenge handling).
type authServer struct {
	t        *testing.T
	as, rs   *httptest.Server
	mcpURL   string
	issuer   string
	badIss   string        // sent as iss instead of the issuer when set
	prmRes   string        // the resource the protected resource metadata names, when set
	ttl      int           // expires_in of the access tokens
	refresh  bool          // issue refresh tokens
	methods  []string      // token_endpoint_auth_methods_supported (none when empty)
	withhold string        // a scope never granted, whoever asks
	noPKCE   bool          // the metadata leaves out code_challenge_methods_supported
	rotate   bool          // a refresh token is good once (rotation)
	firstTTL int           // expires_in of the first access token, when set
	refuse   int           // answer refresh requests with this status: 400 invalid_grant, or another
	slow     time.Duration // a refresh is answered this long after it is granted (and rotated)

	mu         sync.Mutex
	authorized []url.Values // each authorization request
	tokenReqs  []url.Values // each token request
	challenges map[string]string
	tokens     map[string][]string // access token -> scopes
	refreshes  map[string][]string // refresh token -> scopes
	n          int
}

func newAuthServer(t *testing.T, setup func(*authServer)) *authServer {
	a, stop := startAuthServer(setup)
	t.Cleanup(stop)
	return a
}

// startAuthServer starts the servers; stop closes them.
func startAuthServer(setup func(*authServer)) (a *authServer, stop func()) {
	a = &authServer{ttl: 3600, challenges: map[string]string{}, tokens: map[string][]string{}, refreshes: map[string][]string{}}
	if setup != nil {
		setup(a)
	}
	a.as = httptest.NewServer(http.HandlerFunc(a.serveAS))
	a.issuer = a.as.URL
	h := httpx.NewMCPHandler(newFixture(), &httpx.MCPOptions{Logger: zap.NewNop()})
	a.rs = httptest.NewServer(a.protect(h))
	a.mcpURL = a.rs.URL + "/mcp"
	return a, func() { a.rs.Close(); a.as.Close(); h.Close() }
}

func (a *authServer) serveAS(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r.ParseForm()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		methods := a.methods
		if methods == nil {
			methods = []string{"none"}
		}
		meta := map[string]any{
			"issuer": a.issuer, "authorization_endpoint": a.issuer + "/authorize", "token_endpoint": a.issuer + "/token",
			"registration_endpoint": a.issuer + "/register", "code_challenge_methods_supported": []string{"S256"},
			"authorization_response_iss_parameter_supported": true, "token_endpoint_auth_methods_supported": methods,
			"grant_types_supported": []string{"authorization_code", "refresh_token"},
		}
		if a.noPKCE {
			delete(meta, "code_challenge_methods_supported")
		}
		json.NewEncoder(w).Encode(meta)
	case "/register":
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": "registered", "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		a.authorized = append(a.authorized, q)
		a.n++
		code := fmt.Sprintf("code-%d", a.n)
		a.challenges[code] = q.Get("code_challenge") + " " + q.Get("scope")
		back, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {a.issuer}}
		if a.badIss != "" {
			v.Set("iss", a.badIss)
		}
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	case "/token":
		f := r.PostForm
		a.tokenReqs = append(a.tokenReqs, f)
		var scopes []string
		switch f.Get("grant_type") {
		case "authorization_code":
			cs, ok := a.challenges[f.Get("code")]
			delete(a.challenges, f.Get("code"))
			challenge, scope, _ := strings.Cut(cs, " ")
			sum := sha256.Sum256([]byte(f.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			scopes = strings.Fields(scope)
		case "refresh_token":
			switch {
			case a.refuse == http.StatusBadRequest:
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			case a.refuse != 0:
				http.Error(w, "try again later", a.refuse)
				return
			}
			if scopes, ok := a.refreshes[f.Get("refresh_token")]; !ok || scopes == nil {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			scopes = a.refreshes[f.Get("refresh_token")]
			if a.rotate {
				delete(a.refreshes, f.Get("refresh_token"))
			}
		}
		scopes = slices.DeleteFunc(scopes, func(s string) bool { return s == a.withhold })
		a.n++
		tok := fmt.Sprintf("token-%d", a.n)
		a.tokens[tok] = scopes
		ttl := a.ttl
		if a.firstTTL != 0 && len(a.tokens) == 1 {
			ttl = a.firstTTL
		}
		res := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": ttl, "scope": strings.Join(scopes, " ")}
		if a.refresh {
			rt := fmt.Sprintf("refresh-%d", a.n)
			a.refreshes[rt] = scopes
			res["refresh_token"] = rt
		}
		if f.Get("grant_type") == "refresh_token" && a.slow > 0 {
			a.mu.Unlock()
			time.Sleep(a.slow)
			a.mu.Lock()
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(res)
	default:
		http.NotFound(w, r)
	}
}

func (a *authServer) protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prm := a.rs.URL + "/.well-known/oauth-protected-resource/mcp"
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			res := a.mcpURL
			if a.prmRes != "" {
				res = a.prmRes
			}
			json.NewEncoder(w).Encode(map[string]any{"resource": res, "authorization_servers": []string{a.issuer}, "scopes_supported": []string{"mcp:read"}})
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		need := "mcp:read"
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			need = "mcp:write"
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		a.mu.Lock()
		scopes, known := a.tokens[tok]
		a.mu.Unlock()
		switch {
		case !ok || !known:
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s", scope="mcp:read"`, prm))
			http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
		case !slices.Contains(scopes, need):
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s"`, need, prm))
			http.Error(w, `{"error":"insufficient_scope"}`, http.StatusForbidden)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// approveAt returns an OAuth.Authorize that follows the authorization endpoint's redirect.
func approveAt() func(ctx context.Context, authURL string) (*url.URL, error) {
	return func(ctx context.Context, authURL string) (*url.URL, error) {
		hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		return url.Parse(resp.Header.Get("Location"))
	}
}

func (a *authServer) transport(t *testing.T) *client.HTTPTransport {
	tr := client.HTTP(a.mcpURL)
	tr.OAuth = &client.OAuth{RedirectURL: "http://127.0.0.1:9/callback", Authorize: approveAt()}
	return tr
}

// The authorization code flow end to end, in both generations: a 401 leads to discovery,
// registration, PKCE and the resource indicator; tools/call's 403 insufficient_scope to a
// second authorization for the union of the scopes; the call then succeeds.
func TestOAuth_AuthorizationCodeAndStepUp(t *testing.T) {
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			a := newAuthServer(t, nil)
			c, err := client.Connect(ctx, a.transport(t), g.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, err := range c.ListTools(ctx) {
				if err != nil {
					t.Fatal(err)
				}
			}
			res, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"})
			if err != nil || res.IsError {
				t.Fatalf("CallTool after step-up: %v %+v", err, res)
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if len(a.authorized) != 2 {
				t.Fatalf("%d authorizations, want 2 (initial, step-up)", len(a.authorized))
			}
			first, second := a.authorized[0], a.authorized[1]
			if first.Get("scope") != "mcp:read" || second.Get("scope") != "mcp:read mcp:write" {
				t.Errorf("scopes %q then %q, want mcp:read then the union", first.Get("scope"), second.Get("scope"))
			}
			for _, q := range a.authorized {
				if q.Get("resource") != a.mcpURL || q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "registered" {
					t.Errorf("authorization request %v: want resource %s, S256, the registered client", q, a.mcpURL)
				}
			}
			for _, f := range a.tokenReqs {
				if f.Get("resource") != a.mcpURL {
					t.Errorf("token request without the resource: %v", f)
				}
			}
		})
	}
}

// An iss that is not the issuer ends the flow before the code is sent anywhere (RFC 9207).
func TestOAuth_WrongIssuerRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAuthServer(t, func(a *authServer) { a.badIss = "https://evil.example" })
	_, err := client.Connect(ctx, a.transport(t))
	if !errors.Is(err, client.ErrAuthorization) || !strings.Contains(err.Error(), "evil.example") {
		t.Fatalf("Connect: %v, want ErrAuthorization naming the issuer", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.tokenReqs) != 0 {
		t.Fatalf("the code went to the token endpoint %d times", len(a.tokenReqs))
	}
}

// Metadata naming another resource stops the flow before any authorization (RFC 9728 §3.3).
func TestOAuth_ResourceMismatchRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAuthServer(t, func(a *authServer) { a.prmRes = "https://evil.example/mcp" })
	_, err := client.Connect(ctx, a.transport(t))
	if !errors.Is(err, client.ErrAuthorization) {
		t.Fatalf("Connect: %v, want ErrAuthorization", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.authorized) != 0 {
		t.Fatalf("%d authorization requests, want none", len(a.authorized))
	}
}

// An expired token is refreshed with the resource named, with no new authorization.
func TestOAuth_Refresh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// x/oauth2 treats a token as expired 10 s before its expiry: 5 s is expired at once.
	a := newAuthServer(t, func(a *authServer) { a.ttl, a.refresh = 5, true })
	c, err := client.Connect(ctx, a.transport(t), client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var refreshes int
	for _, f := range a.tokenReqs {
		if f.Get("grant_type") == "refresh_token" {
			refreshes++
			if f.Get("resource") != a.mcpURL {
				t.Errorf("refresh without the resource: %v", f)
			}
		}
	}
	if len(a.authorized) != 1 || refreshes == 0 {
		t.Fatalf("%d authorizations and %d refreshes, want 1 and some", len(a.authorized), refreshes)
	}
}

// A server that keeps refusing for a scope already asked for gets no authorization loop.
func TestOAuth_StepUpLimited(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAuthServer(t, func(a *authServer) { a.withhold = "mcp:write" })
	c, err := client.Connect(ctx, a.transport(t), client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"}); err == nil {
			t.Fatal("CallTool succeeded without the scope")
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.authorized); n != 2 {
		t.Fatalf("%d authorizations for 3 refused calls, want 2: the first, and one step-up", n)
	}
}

// A grant without a user: the client credentials grant with client_secret_basic.
func TestOAuth_ClientCredentials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAuthServer(t, func(a *authServer) { a.methods = []string{"client_secret_post", "client_secret_basic"} })
	var basic string
	a.as.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			r.ParseForm()
			id, secret, _ := r.BasicAuth()
			basic = id + ":" + secret
			if r.PostForm.Get("grant_type") != "client_credentials" || r.PostForm.Get("resource") != a.mcpURL {
				http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
				return
			}
			a.mu.Lock()
			a.tokens["cc"] = []string{"mcp:read", "mcp:write"}
			a.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"access_token":"cc","token_type":"Bearer","expires_in":3600}`)
			return
		}
		a.serveAS(w, r)
	})
	tr := client.HTTP(a.mcpURL)
	tr.OAuth = &client.OAuth{ClientID: "svc", ClientSecret: "s3cret", Grant: client.ClientCredentials()}
	c, err := client.Connect(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"}); err != nil {
		t.Fatal(err)
	}
	if basic != "svc:s3cret" {
		t.Fatalf("client authentication %q, want svc:s3cret in Basic", basic)
	}
}

// A TokenStore outlives the OAuth value: a new one (a new process, say) uses the kept token
// once discovery has named the resource, with no new authorization.
func TestOAuth_TokenStoreReused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAuthServer(t, nil)
	store := &client.MemoryTokenStore{}
	for range 2 {
		tr := a.transport(t)
		tr.OAuth.Store = store
		c, err := client.Connect(ctx, tr, client.WithVersion(mcp.Version20251125))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Ping(ctx)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.authorized) != 1 {
		t.Fatalf("%d authorizations for two OAuth values sharing a store, want 1", len(a.authorized))
	}
	tok, _ := store.Token(ctx, a.mcpURL)
	if tok == nil || tok.AccessToken == "" {
		t.Fatalf("the store holds %+v for %s", tok, a.mcpURL)
	}
}

// OAuth.Issuer pins a confidential client's authorization server: the MCP server naming
// another one gets no grant request, so the secret goes nowhere.
func TestOAuth_IssuerPinsCredentials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAuthServer(t, nil)
	var tokenReqs int
	a.as.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			a.mu.Lock()
			tokenReqs++
			a.mu.Unlock()
		}
		a.serveAS(w, r)
	})
	tr := client.HTTP(a.mcpURL)
	tr.OAuth = &client.OAuth{ClientID: "svc", ClientSecret: "s3cret", Issuer: "https://as.relay.example",
		Grant: client.ClientCredentials()}
	_, err := client.Connect(ctx, tr)
	if !errors.Is(err, client.ErrAuthorization) || !strings.Contains(err.Error(), "https://as.relay.example") {
		t.Fatalf("Connect: %v, want ErrAuthorization naming the pinned issuer", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if tokenReqs != 0 {
		t.Fatalf("the credentials went to %s's token endpoint %d times", a.issuer, tokenReqs)
	}
}

// A pre-registered client's expired token is refreshed too, with its client ID, with no new
// authorization.
func TestOAuth_RefreshPreRegistered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAuthServer(t, func(a *authServer) { a.ttl, a.refresh = 5, true })
	tr := a.transport(t)
	tr.OAuth.ClientID = "pre"
	c, err := client.Connect(ctx, tr, client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var refreshes int
	for _, f := range a.tokenReqs {
		if f.Get("grant_type") == "refresh_token" {
			refreshes++
			if f.Get("client_id") != "pre" {
				t.Errorf("refresh as client %q, want pre", f.Get("client_id"))
			}
		}
	}
	if len(a.authorized) != 1 || refreshes == 0 {
		t.Fatalf("%d authorizations and %d refreshes, want 1 and some", len(a.authorized), refreshes)
	}
}
