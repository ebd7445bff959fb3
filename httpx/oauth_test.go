package httpx_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/oidctest"
)

// issuer is an authorization server for the tests: RFC 8414 metadata, a JWK set with an
// RSA and an EC key, and RFC 7662 introspection of a few opaque tokens.
type issuer struct {
	srv        *httptest.Server
	rsaKey     *rsa.PrivateKey
	ecKey      *ecdsa.PrivateKey
	jwksHits   atomic.Int32
	rotated    atomic.Bool               // the keys also include rsa2 (the RSA key under a new id)
	down       atomic.Bool               // the keys endpoint answers 503
	opaque     map[string]map[string]any // token → introspection answer
	introspect atomic.Int32
}

func newIssuer(t *testing.T) *issuer {
	is := &issuer{opaque: map[string]map[string]any{}}
	is.rsaKey, _ = rsa.GenerateKey(rand.Reader, 2048)
	is.ecKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks",
			"introspection_endpoint": is.srv.URL + "/introspect"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksHits.Add(1)
		if is.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		ec := is.ecKey.PublicKey
		rsaJWK := func(kid string) any {
			return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "n": b64(is.rsaKey.N.Bytes()),
				"e": b64(big.NewInt(int64(is.rsaKey.E)).Bytes())}
		}
		keys := []any{rsaJWK("rsa1"),
			map[string]any{"kty": "EC", "kid": "ec1", "crv": "P-256", "x": b64(ec.X.FillBytes(make([]byte, 32))),
				"y": b64(ec.Y.FillBytes(make([]byte, 32)))},
		}
		if is.rotated.Load() {
			keys = append(keys, rsaJWK("rsa2"))
		}
		json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		is.introspect.Add(1)
		if id, secret, _ := r.BasicAuth(); id != "rs" || secret != "rs-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.ParseForm()
		answer, ok := is.opaque[r.PostForm.Get("token")]
		if !ok {
			answer = map[string]any{"active": false}
		}
		json.NewEncoder(w).Encode(answer)
	})
	is.srv = httptest.NewUnstartedServer(mux) // set before it serves: the handlers read it
	is.srv.Start()
	t.Cleanup(is.srv.Close)
	return is
}

const audience = "http://127.0.0.1/rcp"

// token signs claims (iss, aud, exp filled in unless set) with method and key id kid.
func (is *issuer) token(t *testing.T, method jwt.SigningMethod, kid string, claims jwt.MapClaims) string {
	c := jwt.MapClaims{"iss": is.srv.URL, "aud": audience, "sub": "ada", "exp": time.Now().Add(time.Hour).Unix(), "scope": "read write"}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	tok := jwt.NewWithClaims(method, c)
	tok.Header["kid"] = kid
	var key any
	switch method {
	case jwt.SigningMethodES256:
		key = is.ecKey
	case jwt.SigningMethodNone:
		key = jwt.UnsafeAllowNoneSignatureType
	case jwt.SigningMethodHS256:
		// The confusion attack: an HMAC keyed with the server's RSA public key.
		key = []byte(base64.RawURLEncoding.EncodeToString(is.rsaKey.N.Bytes()))
	default:
		key = is.rsaKey
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func verifier(t *testing.T, is *issuer, scopes ...string) *httpx.TokenVerifier {
	v, err := httpx.NewTokenVerifier(context.Background(), httpx.TokenVerifierOptions{Issuer: is.srv.URL, Audience: audience,
		Scopes: scopes, IntrospectionClientID: "rs", IntrospectionSecret: "rs-secret"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// rcpPing posts an RCP ping with the Authorization header auth, and returns the status and
// the challenge.
func rcpPing(t *testing.T, url, auth string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, url+"/rcp/ping", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// Every bad token is refused with 401 and a challenge; a good one passes; a good one short
// of the scopes the server needs gets 403 insufficient_scope naming them (MCP
// Authorization › Token Handling and scope step-up; RFC 6750 §3.1).
func TestTokenVerifier_RefusesEveryBadToken(t *testing.T) {
	is := newIssuer(t)
	is.opaque["opaque-good"] = map[string]any{"active": true, "sub": "bob", "scope": "read", "aud": audience,
		"iss": is.srv.URL, "exp": time.Now().Add(time.Hour).Unix()}
	is.opaque["opaque-other-aud"] = map[string]any{"active": true, "sub": "bob", "scope": "read", "aud": "https://elsewhere"}
	v := verifier(t, is, "read")
	prm := &httpx.ProtectedResourceMetadata{Resource: audience, AuthorizationServers: []string{is.srv.URL}}
	rh := httpx.NewRCPHandler(rcpServer(nil), &httpx.RCPOptions{Logger: zap.NewNop(), Authenticator: v.Authenticate, ProtectedResource: prm})
	srv := httptest.NewServer(rh)
	defer func() { srv.Close(); rh.Close(); http.DefaultClient.CloseIdleConnections() }()
	mcpf := newFixture(t, &httpx.MCPOptions{Authenticator: v.Authenticate, ProtectedResource: prm})
	protocols := []struct {
		name string
		ask  func(auth string) (int, string)
	}{
		{"RCP", func(auth string) (int, string) { return rcpPing(t, srv.URL, auth) }},
		{"MCP", func(auth string) (int, string) {
			body, hdr := modernCall(1, "tools/list", nil)
			if auth != "" {
				hdr = append(hdr, "Authorization", auth)
			}
			r := mcpf.post(body, hdr...)
			return r.status, r.header.Get("WWW-Authenticate")
		}},
	}
	hour := time.Hour
	cases := []struct {
		name, token string
		status      int
	}{
		{"valid RS256", is.token(t, jwt.SigningMethodRS256, "rsa1", nil), 200},
		{"valid ES256", is.token(t, jwt.SigningMethodES256, "ec1", nil), 200},
		{"valid opaque, introspected", "opaque-good", 200},
		{"no token", "", 401},
		{"expired", is.token(t, jwt.SigningMethodRS256, "rsa1", jwt.MapClaims{"exp": time.Now().Add(-hour).Unix()}), 401},
		{"not yet valid", is.token(t, jwt.SigningMethodRS256, "rsa1", jwt.MapClaims{"nbf": time.Now().Add(hour).Unix()}), 401},
		{"no exp", is.token(t, jwt.SigningMethodRS256, "rsa1", jwt.MapClaims{"exp": nil}), 401},
		{"wrong audience", is.token(t, jwt.SigningMethodRS256, "rsa1", jwt.MapClaims{"aud": "https://elsewhere"}), 401},
		{"wrong issuer", is.token(t, jwt.SigningMethodRS256, "rsa1", jwt.MapClaims{"iss": "https://evil.example"}), 401},
		{"unknown key", is.token(t, jwt.SigningMethodRS256, "nobody", nil), 401},
		{"alg none", is.token(t, jwt.SigningMethodNone, "rsa1", nil), 401},
		{"HS256 keyed with the RSA public key", is.token(t, jwt.SigningMethodHS256, "rsa1", nil), 401},
		{"tampered payload", tamper(is.token(t, jwt.SigningMethodRS256, "rsa1", nil)), 401},
		{"opaque, unknown to the issuer", "opaque-nobody", 401},
		{"opaque, for another resource", "opaque-other-aud", 401},
		{"valid, without the scope needed", is.token(t, jwt.SigningMethodRS256, "rsa1", jwt.MapClaims{"scope": "write"}), 403},
	}
	for _, p := range protocols {
		for _, c := range cases {
			auth := ""
			if c.token != "" {
				auth = "Bearer " + c.token
			}
			status, www := p.ask(auth)
			if status != c.status {
				t.Errorf("%s, %s: HTTP %d, want %d (%s)", p.name, c.name, status, c.status, www)
				continue
			}
			switch status {
			case 401:
				// RFC 6750 §3.1: no error code when the request had no token at all.
				if (c.token != "") != strings.Contains(www, `error="invalid_token"`) || !strings.Contains(www, `scope="read"`) || !strings.Contains(www, "resource_metadata=") {
					t.Errorf("%s, %s: challenge %q", p.name, c.name, www)
				}
			case 403:
				if !strings.Contains(www, `error="insufficient_scope"`) || !strings.Contains(www, `scope="read"`) {
					t.Errorf("%s, %s: challenge %q", p.name, c.name, www)
				}
			}
		}
	}
}

// tamper changes the token's payload and keeps its signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	payload = []byte(strings.Replace(string(payload), `"ada"`, `"eve"`, 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

// A flood of tokens naming unknown keys costs the issuer at most one fetch of its keys a
// minute, and an introspected token is asked about once.
func TestTokenVerifier_BoundsWhatItAsksTheIssuer(t *testing.T) {
	is := newIssuer(t)
	is.opaque["opaque-good"] = map[string]any{"active": true, "sub": "bob", "aud": audience, "exp": time.Now().Add(time.Hour).Unix()}
	v := verifier(t, is)
	before := is.jwksHits.Load()
	for i := range 50 {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Authorization", "Bearer "+is.token(t, jwt.SigningMethodRS256, "made-up-"+string(rune('a'+i%26)), nil))
		if _, err := v.Authenticate(r); err == nil {
			t.Fatal("a token with an unknown key passed")
		}
	}
	if got := is.jwksHits.Load() - before; got > 1 {
		t.Errorf("the keys were fetched %d times for 50 unknown ids, want at most 1", got)
	}
	for range 5 {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Authorization", "Bearer opaque-good")
		p, err := v.Authenticate(r)
		if err != nil || p.ID != "bob" {
			t.Fatalf("opaque token: %+v, %v", p, err)
		}
	}
	if got := is.introspect.Load(); got != 1 {
		t.Errorf("introspected %d times, want 1 (cached until it expires)", got)
	}
}

// The keys are fetched again for an unknown key id once a minute has passed since the last
// fetch, and not before: a rotated key is learnt, and an issuer that is down is asked at
// most once a minute however many requests name keys it does not have (the fetch is counted
// before it is tried).
func TestTokenVerifier_RefetchesKeysAtMostOnceAMinute(t *testing.T) {
	is := newIssuer(t)
	v := verifier(t, is)
	var mu sync.Mutex
	now := time.Now()
	v.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	auth := func(kid string) error {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Authorization", "Bearer "+is.token(t, jwt.SigningMethodRS256, kid, nil))
		_, err := v.Authenticate(r)
		return err
	}
	hits := func() int32 { return is.jwksHits.Load() }
	start := hits()

	is.rotated.Store(true) // the issuer rotates: rsa2 is new
	if auth("rsa2") == nil {
		t.Fatal("a key rotated in within the minute was accepted without a fetch")
	}
	if got := hits() - start; got != 0 {
		t.Errorf("%d fetches within the minute of the last, want 0", got)
	}
	advance(61 * time.Second)
	if err := auth("rsa2"); err != nil {
		t.Fatalf("the rotated key, a minute later: %v", err)
	}
	if got := hits() - start; got != 1 {
		t.Errorf("%d fetches to learn the rotated key, want 1", got)
	}

	is.down.Store(true)
	advance(61 * time.Second)
	for range 20 {
		if auth("rsa3") == nil {
			t.Fatal("an unknown key id passed")
		}
	}
	if got := hits() - start; got != 2 {
		t.Errorf("an issuer that is down was asked %d times for 20 requests, want once", got-1)
	}
	advance(61 * time.Second)
	auth("rsa3")
	if got := hits() - start; got != 3 {
		t.Errorf("a minute later, %d fetches in all, want 3", got)
	}
	if err := auth("rsa1"); err != nil { // the keys it had still serve
		t.Errorf("a known key while the issuer is down: %v", err)
	}
}

// Only https issuers, or http on a loopback host, are trusted.
func TestTokenVerifier_RefusesAPlainHTTPIssuer(t *testing.T) {
	_, err := httpx.NewTokenVerifier(context.Background(), httpx.TokenVerifierOptions{Issuer: "http://auth.example.com", Audience: audience})
	if err == nil || !strings.Contains(err.Error(), "https") {
		t.Fatalf("a plain-http issuer: %v", err)
	}
}

// FuzzParseJWK: whatever an issuer's key set holds, reading a key never panics, and a key
// it returns is one a signature can be checked with.
func FuzzParseJWK(f *testing.F) {
	f.Add([]byte(`{"kty":"RSA","kid":"a","n":"` + strings.Repeat("A", 344) + `","e":"AQAB"}`))
	f.Add([]byte(`{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"}`))
	f.Add([]byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`))
	f.Add([]byte(`{"kty":"oct","k":"c2VjcmV0"}`))
	f.Add([]byte(`{"kty":"RSA","n":"AQ","e":"AQ","use":"enc"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, k, err := httpx.ParseJWK(raw)
		if err == nil && k == nil {
			t.Fatal("no key and no error")
		}
	})
}

// RCP/1 behind a resource server of a real authorization server: oidc-provider issues an
// RS256 JWT for the RCP endpoint's resource through the code flow, and the endpoint takes
// it; without it, -32012 and a 401 that names the scope (RCP/1 §15.6).
func TestTokenVerifier_RCPWithOIDCProvider(t *testing.T) {
	var handler atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := handler.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, "starting", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	resource := srv.URL + "/rcp"
	const redirect = "http://127.0.0.1:9/callback"
	issuer := oidctest.Start(t, resource, redirect)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	v, err := httpx.NewTokenVerifier(ctx, httpx.TokenVerifierOptions{Issuer: issuer, Audience: resource, Scopes: []string{"mcp:read"}})
	if err != nil {
		t.Fatal(err)
	}
	rh := httpx.NewRCPHandler(rcpServer(nil), &httpx.RCPOptions{Logger: zap.NewNop(), Authenticator: v.Authenticate,
		ProtectedResource: &httpx.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{issuer}}})
	defer rh.Close()
	var h http.Handler = rh
	handler.Store(&h)
	if status, www := rcpPing(t, srv.URL, ""); status != 401 || !strings.Contains(www, `scope="mcp:read"`) {
		t.Fatalf("no token: %d %q", status, www)
	}
	tok, err := oidctest.Token(ctx, issuer, resource, redirect)
	if err != nil {
		t.Fatal(err)
	}
	if status, www := rcpPing(t, srv.URL, "Bearer "+tok); status != 200 {
		t.Fatalf("oidc-provider's token: %d %q", status, www)
	}
	http.DefaultClient.CloseIdleConnections()
}

// Scopes by method and by tool (MethodScopes, checked by Authorize once the body is in): a
// token good for the server but not for one tool gets 403 insufficient_scope for that tool
// alone, naming every scope the call needs; other calls pass; with the scope, the tool runs.
// RCP methods are checked the same way.
func TestTokenVerifier_ScopesByMethodAndTool(t *testing.T) {
	is := newIssuer(t)
	v, err := httpx.NewTokenVerifier(context.Background(), httpx.TokenVerifierOptions{Issuer: is.srv.URL, Audience: audience,
		Scopes: []string{"read"}, MethodScopes: map[string][]string{"tools/call:whoami": {"identity"}, "ping": {"health"}}})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, &httpx.MCPOptions{Authenticator: v.Authenticate, Authorizer: v.Authorize})
	call := func(scope, tool string) reply {
		body, hdr := modernCall(1, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"text": "hi"}})
		tok := is.token(t, jwt.SigningMethodRS256, "rsa1", jwt.MapClaims{"scope": scope})
		return f.post(body, append(hdr, "Authorization", "Bearer "+tok)...)
	}
	if r := call("read", "echo"); r.status != 200 {
		t.Fatalf("echo with read: %s", r)
	}
	r := call("read", "whoami")
	if www := r.header.Get("WWW-Authenticate"); r.status != 403 || !strings.Contains(www, `error="insufficient_scope"`) || !strings.Contains(www, `scope="identity read"`) {
		t.Fatalf("whoami with read: %s, WWW-Authenticate %q", r, www)
	}
	if r := call("read identity", "whoami"); r.status != 200 {
		t.Fatalf("whoami with read identity: %s", r)
	}
	// The members the authorizer reads are those dispatch reads: exact keys, the first of
	// duplicates. A key in other case, or a second name, does not smuggle whoami past it.
	_, hdr := modernCall(7, "tools/call", map[string]any{"name": "whoami"})
	tok := is.token(t, jwt.SigningMethodRS256, "rsa1", jwt.MapClaims{"scope": "read"})
	metaJSON := string(must(json.Marshal(meta())))
	for _, smuggle := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","METHOD":"ping","params":{"name":"whoami","_meta":` + metaJSON + `}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","Name":"echo","_meta":` + metaJSON + `}}`,
	} {
		if r := f.post([]byte(smuggle), append(hdr, "Authorization", "Bearer "+tok)...); r.status != 403 {
			t.Errorf("whoami smuggled in a body with look-alike keys: %s\n%s", r, smuggle)
		}
	}
	rh := httpx.NewRCPHandler(rcpServer(nil), &httpx.RCPOptions{Logger: zap.NewNop(), Authenticator: v.Authenticate, Authorizer: v.Authorize})
	srv := httptest.NewServer(rh)
	defer func() { srv.Close(); rh.Close(); http.DefaultClient.CloseIdleConnections() }()
	if status, www := rcpPing(t, srv.URL, "Bearer "+is.token(t, jwt.SigningMethodRS256, "rsa1", nil)); status != 403 || !strings.Contains(www, `scope="health read"`) {
		t.Fatalf("RCP ping without health: %d %q", status, www)
	}
	if status, _ := rcpPing(t, srv.URL, "Bearer "+is.token(t, jwt.SigningMethodRS256, "rsa1", jwt.MapClaims{"scope": "read health"})); status != 200 {
		t.Fatalf("RCP ping with health: %d", status)
	}
	// A batch posted to the base path is checked member by member, and a notification
	// posted to another method's URL by its own method.
	for _, c := range []struct{ path, body string }{
		{"/rcp", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`},
		{"/rcp/initialize", `{"jsonrpc":"2.0","method":"ping"}`},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+is.token(t, jwt.SigningMethodRS256, "rsa1", nil))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Fatalf("RCP %s %s without health: %d, want 403", c.path, c.body, resp.StatusCode)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
