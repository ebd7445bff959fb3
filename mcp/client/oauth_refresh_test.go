package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// MCP 2025-11-25, Authorization › Authorization Code Protection: metadata without
// code_challenge_methods_supported means no PKCE, and the client refuses to go on, before
// the user is sent anywhere.
func TestOAuth_NoAdvertisedPKCEIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAuthServer(t, func(a *authServer) { a.noPKCE = true })
	c, err := client.Connect(ctx, a.transport(t))
	if err == nil {
		c.Close()
		t.Fatal("Connect succeeded without PKCE")
	}
	if !errors.Is(err, client.ErrAuthorization) || !strings.Contains(err.Error(), "code_challenge_methods_supported") {
		t.Fatalf("Connect: %v, want ErrAuthorization naming code_challenge_methods_supported", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.authorized) != 0 {
		t.Fatalf("%d authorization requests, want none", len(a.authorized))
	}
}

// refreshes counts the token requests of the refresh_token grant.
func (a *authServer) refreshRequests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, f := range a.tokenReqs {
		if f.Get("grant_type") == "refresh_token" {
			out = append(out, f.Get("refresh_token"))
		}
	}
	return out
}

// Requests that find the token expired at once share one refresh: with rotation (a refresh
// token good once) a second refresh of the same token would be refused, and its refusal
// would wipe the token the first one stored.
func TestOAuth_ConcurrentRequestsShareOneRefresh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, c, _ := expiredToken(ctx, t, 0)
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for _, err := range c.ListTools(ctx) {
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := a.refreshRequests(); len(got) != 1 {
		t.Errorf("refresh requests %v, want one", got)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.authorized) != 1 {
		t.Errorf("%d authorizations, want only the first: a refused second refresh wiped the rotated token", len(a.authorized))
	}
}

// stubbornStore cannot forget a token (a read-only keychain, say): SetToken(nil) fails.
type stubbornStore struct{ client.MemoryTokenStore }

func (s *stubbornStore) SetToken(ctx context.Context, resource string, tok *oauth2.Token) error {
	if tok == nil {
		return errors.New("this store cannot forget")
	}
	return s.MemoryTokenStore.SetToken(ctx, resource, tok)
}

// A refresh token the authorization server refused (invalid_grant) is not sent again, even
// when the store keeps it: the client goes to the full flow once, and the token endpoint is
// asked once.
func TestOAuth_ARefusedRefreshTokenIsNotSentAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The first token is expired on arrival (x/oauth2 takes 10 s off), every refresh refused.
	a := newAuthServer(t, func(a *authServer) { a.refresh, a.firstTTL, a.refuse = true, 5, http.StatusBadRequest })
	tr := a.transport(t)
	tr.OAuth.Store = &stubbornStore{}
	c, err := client.Connect(ctx, tr, client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		if err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.refreshRequests(); len(got) != 1 {
		t.Errorf("refresh requests %v, want one: a refused refresh token is not sent again", got)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.authorized) != 2 {
		t.Errorf("%d authorizations, want 2: the first, and one after the refused refresh", len(a.authorized))
	}
}

// A refresh that fails for want of an answer (the token endpoint down: 503) is no refusal:
// the request fails saying so, the refresh token is kept, and the next request refreshes
// with it, without sending the user through the flow again.
func TestOAuth_ARefreshThatGotNoAnswerKeepsTheRefreshToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAuthServer(t, func(a *authServer) { a.refresh, a.firstTTL, a.refuse = true, 5, http.StatusServiceUnavailable })
	tr := a.transport(t)
	c, err := client.Connect(ctx, tr, client.WithVersion(mcp.Version20251125))
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, client.ErrAuthorization) || !strings.Contains(err.Error(), "refresh") {
		t.Fatalf("Connect while the token endpoint is down: %v, want ErrAuthorization about the refresh", err)
	}
	a.mu.Lock()
	a.refuse = 0
	a.mu.Unlock()
	c, err = client.Connect(ctx, tr, client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := a.refreshRequests(); len(got) != 2 || got[0] != got[1] {
		t.Errorf("refresh requests %v, want the same refresh token twice", got)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.authorized) != 1 {
		t.Errorf("%d authorizations, want 1", len(a.authorized))
	}
}

// A client that authenticates with a private key (private_key_jwt, RFC 7523 §2.2)
// authenticates its refresh the same way: a fresh client assertion, signed by its key, for
// the authorization server.
func TestOAuth_PrivateKeyClientRefreshesWithAnAssertion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	a := newAuthServer(t, nil)
	var mu sync.Mutex
	var refreshAuth []error
	a.as.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/token" {
			a.serveAS(w, r)
			return
		}
		r.ParseForm()
		f := r.PostForm
		if err := checkAssertion(f, &key.PublicKey, "svc", a.issuer); f.Get("grant_type") == "refresh_token" {
			mu.Lock()
			refreshAuth = append(refreshAuth, err)
			mu.Unlock()
		} else if err != nil {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		a.mu.Lock()
		a.n++
		tok := fmt.Sprintf("pk-%d", a.n)
		a.tokens[tok] = []string{"mcp:read", "mcp:write"}
		ttl := 5 // expired on arrival: the next request refreshes
		if f.Get("grant_type") == "refresh_token" {
			ttl = 3600
		}
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":%d,"refresh_token":"r-%s"}`, tok, ttl, tok)
	})
	tr := client.HTTP(a.mcpURL)
	tr.OAuth = &client.OAuth{ClientID: "svc", PrivateKey: key, Issuer: a.issuer, Grant: client.ClientCredentials()}
	c, err := client.Connect(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(refreshAuth) == 0 {
		t.Fatal("no refresh")
	}
	for _, err := range refreshAuth {
		if err != nil {
			t.Errorf("the refresh's client authentication: %v", err)
		}
	}
}

// checkAssertion checks a token request's private_key_jwt client authentication: its type,
// the signature by pub, iss and sub the client, aud the issuer, and no secret beside it.
func checkAssertion(f map[string][]string, pub *ecdsa.PublicKey, clientID, issuer string) error {
	get := func(k string) string {
		if v := f[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		return fmt.Errorf("client_assertion_type %q", get("client_assertion_type"))
	}
	if get("client_secret") != "" {
		return errors.New("a client_secret beside the assertion")
	}
	parts := strings.Split(get("client_assertion"), ".")
	if len(parts) != 3 {
		return errors.New("the assertion is not a compact JWS")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return fmt.Errorf("the signature: %v", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return errors.New("the assertion's signature does not verify")
	}
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Iss, Sub, Aud string
		Exp           int64
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		return err
	}
	if claims.Iss != clientID || claims.Sub != clientID || claims.Aud != issuer || claims.Exp < time.Now().Unix() {
		return fmt.Errorf("claims %+v", claims)
	}
	return nil
}

// A refresh outlives the request that started it: by the time that request is given up the
// authorization server may have rotated the refresh token, and the new tokens must not be
// lost with it. The next request uses them, without a second refresh or authorization.
func TestOAuth_ARefreshOutlivesTheRequestThatStartedIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, c, _ := expiredToken(ctx, t, 500*time.Millisecond)
	defer c.Close()
	gone, giveUp := context.WithTimeout(ctx, 100*time.Millisecond)
	err := listAll(gone, c) // gives up while the server is granting the refresh
	giveUp()
	if err == nil {
		t.Fatal("the request that refreshed was answered before it was given up: the server was not slow enough")
	}
	if err := listAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := a.refreshRequests(); len(got) != 1 {
		t.Errorf("refresh requests %v, want one", got)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.authorized) != 1 {
		t.Errorf("%d authorizations, want only the first: the rotated tokens were lost with the request that refreshed", len(a.authorized))
	}
}

// Close waits for a refresh under way (at most refreshTimeout): its goroutine does not
// outlive the client, and the rotated tokens are in the store when Close returns.
func TestOAuth_CloseWaitsForARefreshUnderWay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, c, store := expiredToken(ctx, t, 500*time.Millisecond)
	gone, giveUp := context.WithTimeout(ctx, 100*time.Millisecond)
	listAll(gone, c)
	giveUp()
	c.Close()
	tok, err := store.Token(ctx, a.mcpURL)
	if err != nil || tok == nil || tok.RefreshToken == "once" {
		t.Fatalf("the store after Close: %+v %v, want the rotated tokens", tok, err)
	}
}

// expiredToken connects a client through an authorization server that rotates refresh
// tokens (and answers a granted refresh after slow), then expires its token behind its
// back: the store holds a stale access token whose refresh token, "once", is good once.
func expiredToken(ctx context.Context, t *testing.T, slow time.Duration) (*authServer, *client.Client, *client.MemoryTokenStore) {
	t.Helper()
	a := newAuthServer(t, func(a *authServer) { a.refresh, a.rotate, a.slow = true, true, slow })
	store := &client.MemoryTokenStore{}
	tr := a.transport(t)
	tr.OAuth.Store = store
	c, err := client.Connect(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.refreshes["once"] = []string{"mcp:read"}
	a.mu.Unlock()
	store.SetToken(ctx, a.mcpURL, &oauth2.Token{AccessToken: "stale", RefreshToken: "once", Expiry: time.Now().Add(-time.Minute)})
	return a, c, store
}

// listAll lists c's tools to the end, and returns the first error.
func listAll(ctx context.Context, c *client.Client) error {
	for _, err := range c.ListTools(ctx) {
		if err != nil {
			return err
		}
	}
	return nil
}
