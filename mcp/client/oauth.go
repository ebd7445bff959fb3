package client

import (
	"context"
	"crypto"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// OAuth authorizes an HTTPTransport's requests with OAuth 2.1 (MCP 2025-11-25 and
// 2026-07-28, Basic › Authorization). Nothing happens until the server answers 401: the
// client then discovers the authorization server (RFC 9728 protected resource metadata,
// RFC 8414 or OpenID discovery), identifies itself (pre-registered credentials, a client
// ID metadata document, or dynamic registration), runs the authorization code flow with
// PKCE and the resource indicator (RFC 8707), checks the iss of the answer (RFC 9207), and
// sends the request again with the token. A 403 insufficient_scope asks for the union of
// the scopes held and the scopes challenged, once per new scope set. Expired tokens are
// refreshed when the server issued a refresh token.
//
// One OAuth value may serve several transports and connections: it keeps the
// registrations and tokens it obtained, and is safe for concurrent use. The requests that
// find a token expired at once share one refresh, and a refresh token the authorization
// server refused is not sent again; OAuth values that share a Store do not coordinate
// their refreshes.
//
//	t := client.HTTP("https://mcp.example.com/mcp")
//	t.OAuth = &client.OAuth{
//		ClientMetadataURL: "https://app.example.com/oauth/client.json",
//		RedirectURL:       "http://127.0.0.1:8976/callback",
//		Authorize:         openBrowserAndWait,
//	}
type OAuth struct {
	// ClientID and ClientSecret are credentials registered with the authorization server
	// beforehand; when ClientID is set neither a metadata document nor dynamic
	// registration is used. Issuer, when set, restricts them to that authorization server:
	// a confidential client (ClientSecret, PrivateKey, a Grant) should set it, since
	// otherwise its credentials go to whichever authorization server the MCP server names.
	ClientID, ClientSecret, Issuer string
	// ClientMetadataURL is the HTTPS URL of this client's client ID metadata document,
	// used as its client_id by authorization servers that advertise
	// client_id_metadata_document_supported.
	ClientMetadataURL string
	// ClientName names the client in dynamic registration ("relay" when empty).
	ClientName string
	// RedirectURL is where the authorization server sends the browser back with the code.
	RedirectURL string
	// Authorize shows the user authURL (a browser, usually) and returns the URL the
	// authorization server redirected to, with its code, state and iss query parameters.
	// Required for the authorization code flow.
	Authorize func(ctx context.Context, authURL string) (*url.URL, error)
	// Grant, when set, obtains tokens with no user present (ClientCredentials,
	// JWTBearer, EnterpriseManaged) instead of the authorization code flow.
	Grant Grant
	// PrivateKey, when set, authenticates the client at the token endpoint with a signed
	// JWT (private_key_jwt, RFC 7523 §2.2) instead of ClientSecret.
	PrivateKey crypto.Signer
	// DPoPKey, when set, binds tokens to this key (DPoP, RFC 9449) where the authorization
	// server supports its algorithm: each request then carries a fresh proof.
	DPoPKey crypto.Signer
	// Store keeps tokens between connections (nil: in memory, for this OAuth value).
	Store TokenStore
	// Client makes the discovery, registration and token requests (nil: the transport's
	// client, without its OAuth).
	Client *http.Client

	mu       sync.Mutex
	flow     sync.Mutex // one authorization at a time
	mem      *MemoryTokenStore
	clients  map[string]registration // by issuer
	granted  map[string][]string     // scopes last asked for, by resource
	resource map[string]*authState   // what the last discovery found, by MCP URL

	refreshing map[string]*refreshFlight // the refresh under way, by resource (the store's key)
	refused    map[[32]byte]struct{}     // refresh tokens the authorization server refused, hashed
}

// TokenStore keeps the tokens OAuth obtains, by the resource they are for (the protected
// resource's identifier). Implementations must be safe for concurrent use.
type TokenStore interface {
	// Token returns the token for resource, nil when there is none.
	Token(ctx context.Context, resource string) (*oauth2.Token, error)
	// SetToken keeps tok for resource; a nil tok forgets it.
	SetToken(ctx context.Context, resource string, tok *oauth2.Token) error
}

// MemoryTokenStore is a TokenStore in memory, OAuth's default.
type MemoryTokenStore struct {
	mu     sync.Mutex
	tokens map[string]*oauth2.Token
}

// Token returns the token kept for resource.
func (s *MemoryTokenStore) Token(_ context.Context, resource string) (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens[resource], nil
}

// SetToken keeps tok for resource.
func (s *MemoryTokenStore) SetToken(_ context.Context, resource string, tok *oauth2.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok == nil {
		delete(s.tokens, resource)
		return nil
	}
	if s.tokens == nil {
		s.tokens = map[string]*oauth2.Token{}
	}
	s.tokens[resource] = tok
	return nil
}

// ErrAuthorization wraps every failure of the authorization flow.
var ErrAuthorization = errors.New("mcp/client: authorization failed")

func authErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrAuthorization}, args...)...)
}

// registration is the client's identity at one authorization server.
type registration struct {
	id, secret string
	method     string // token_endpoint_auth_method
}

// authState is what discovery found for one MCP endpoint.
type authState struct {
	resource string // as published in the protected resource metadata, sent as is
	as       *asMetadata
}

func (o *OAuth) store() TokenStore {
	if o.Store != nil {
		return o.Store
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mem == nil {
		o.mem = &MemoryTokenStore{}
	}
	return o.mem
}

// maxAuthRounds bounds the authorizations one request may cause (a 401, then step-ups).
const maxAuthRounds = 3

// oauthRoundTripper adds the token to each request and runs the flow on 401 and 403.
type oauthRoundTripper struct {
	o    *OAuth
	base http.RoundTripper
	mcp  string // the MCP endpoint
	hc   *http.Client
	dpop *dpopSigner // nil without OAuth.DPoPKey
	// refreshes are the refreshes this connection started, which its close waits for
	refreshes sync.WaitGroup
}

func (o *OAuth) roundTripper(base http.RoundTripper, mcpURL string) *oauthRoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	hc := o.Client
	if hc == nil {
		hc = &http.Client{Transport: base}
	}
	rt := &oauthRoundTripper{o: o, base: base, mcp: mcpURL, hc: hc}
	if o.DPoPKey != nil {
		rt.dpop = &dpopSigner{key: o.DPoPKey}
	}
	return rt
}

func (rt *oauthRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if !sameOrigin(req.URL, rt.mcp) {
		// The token is for the MCP endpoint: a request elsewhere (a redirect's, say)
		// goes without it, and its 401 starts no authorization.
		return rt.base.RoundTrip(req)
	}
	ctx := req.Context()
	nonceRetried := false
	for round := 0; ; {
		tok, err := rt.token(ctx)
		if err != nil {
			return nil, err
		}
		r := req.Clone(ctx)
		if r.Body != nil && r.Body != http.NoBody && (round > 0 || nonceRetried) {
			if req.GetBody == nil {
				return nil, authErrorf("cannot send the request again after authorizing: its body cannot be replayed")
			}
			if r.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		dpop := tok != nil && isDPoP(tok) && rt.dpop != nil
		switch {
		case dpop:
			// RFC 9449 §7.1: the DPoP scheme, with a proof bound to the token.
			proof, err := rt.dpop.proof(r.Method, r.URL, tok.AccessToken)
			if err != nil {
				return nil, err
			}
			r.Header.Set("Authorization", "DPoP "+tok.AccessToken)
			r.Header.Set("DPoP", proof)
		case tok != nil:
			r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		resp, err := rt.base.RoundTrip(r)
		if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
			if err == nil && dpop {
				rt.dpop.learn(r.URL, resp)
			}
			return resp, err
		}
		ch := parseChallenges(resp.Header.Values("WWW-Authenticate"))
		params := ch.get("bearer")
		if len(params) == 0 {
			params = ch.get("dpop")
		}
		if dpop && rt.dpop.learn(r.URL, resp) && ch.get("dpop")["error"] == "use_dpop_nonce" && !nonceRetried {
			// RFC 9449 §9: the resource server wants its nonce in the proof.
			nonceRetried = true
			drain(resp)
			continue
		}
		if resp.StatusCode == http.StatusForbidden && params["error"] != "insufficient_scope" {
			return resp, nil
		}
		if round >= maxAuthRounds {
			return resp, nil
		}
		round++
		step := resp.StatusCode == http.StatusForbidden
		drain(resp)
		if err := rt.authorize(ctx, params, step, tok); err != nil {
			return nil, err
		}
	}
}

// sameOrigin reports whether u has the origin (scheme, host and port) of the URL ref.
func sameOrigin(u *url.URL, ref string) bool {
	r, err := url.Parse(ref)
	if err != nil || u == nil {
		return false
	}
	return strings.EqualFold(u.Scheme, r.Scheme) && strings.EqualFold(u.Hostname(), r.Hostname()) &&
		originPort(u) == originPort(r)
}

// originPort is u's port, its scheme's default when unsaid.
func originPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// token returns the token held for the endpoint, refreshed when it expired; nil before
// any authorization, and once its refresh token was refused (the 401 that follows
// authorizes again). The requests that find the token expired together share one refresh
// (a refresh token may be good only once, RFC 9700 §4.14.2: a second refresh of it would be
// refused, and that refusal would forget the token the first one obtained).
func (rt *oauthRoundTripper) token(ctx context.Context) (*oauth2.Token, error) {
	o := rt.o
	o.mu.Lock()
	st := o.resource[rt.mcp]
	o.mu.Unlock()
	if st == nil {
		return nil, nil
	}
	tok, err := o.store().Token(ctx, st.resource)
	if err != nil || tok == nil || tok.Valid() {
		return tok, err
	}
	if tok.RefreshToken == "" || o.wasRefused(tok.RefreshToken) {
		return nil, nil // the next 401 authorizes again
	}
	o.mu.Lock()
	f := o.refreshing[st.resource]
	lead := f == nil
	if lead {
		f = &refreshFlight{done: make(chan struct{})}
		if o.refreshing == nil {
			o.refreshing = map[string]*refreshFlight{}
		}
		o.refreshing[st.resource] = f
	}
	o.mu.Unlock()
	if lead {
		// The refresh outlives the request that started it: once the authorization
		// server has rotated the refresh token, its answer is the only copy of the new
		// one. It is bounded by refreshTimeout instead, and the connection's close waits
		// for it.
		rt.refreshes.Go(func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refreshTimeout)
			defer cancel()
			f.tok, f.err = rt.refreshStored(rctx, st)
			o.mu.Lock()
			delete(o.refreshing, st.resource)
			o.mu.Unlock()
			close(f.done)
		})
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return f.tok, f.err
}

// refreshTimeout bounds a refresh, which no request's end cuts short.
const refreshTimeout = 30 * time.Second

// refreshFlight is one refresh, whose outcome the requests that waited for it share.
type refreshFlight struct {
	done chan struct{} // closed once tok and err are set
	tok  *oauth2.Token
	err  error
}

// refreshStored refreshes the token the store holds for st's resource, unless it is valid
// (another refresh came first) or its refresh token was refused, and keeps the outcome. A
// refusal (an OAuth error answer, RFC 6749 §5.2: invalid_grant, say) forgets the token and
// remembers the refresh token, so that it is never sent again, even by a store that cannot
// forget; any other failure (no answer, 5xx) keeps the token for the next request and fails
// this one.
func (rt *oauthRoundTripper) refreshStored(ctx context.Context, st *authState) (*oauth2.Token, error) {
	o := rt.o
	store := o.store()
	tok, err := store.Token(ctx, st.resource)
	if err != nil || tok == nil || tok.Valid() {
		return tok, err
	}
	if tok.RefreshToken == "" || o.wasRefused(tok.RefreshToken) {
		return nil, nil
	}
	fresh, err := rt.refresh(ctx, st, tok)
	if err == nil {
		return fresh, store.SetToken(ctx, st.resource, fresh)
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && (re.ErrorCode != "" || re.Response != nil &&
		(re.Response.StatusCode == http.StatusBadRequest || re.Response.StatusCode == http.StatusUnauthorized)) {
		o.refuse(tok.RefreshToken)
		store.SetToken(ctx, st.resource, nil) // if the store cannot forget, the refusal is remembered here
		return nil, nil
	}
	return nil, fmt.Errorf("%w: refreshing the token at %s: %w; the refresh token is kept: send the request again once the authorization server answers",
		ErrAuthorization, st.as.TokenEndpoint, err)
}

// refuse remembers that the authorization server refused refreshToken.
func (o *OAuth) refuse(refreshToken string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.refused == nil || len(o.refused) >= 256 {
		o.refused = map[[32]byte]struct{}{} // bounded: an old refusal forgotten is one more refusal
	}
	o.refused[sha256.Sum256([]byte(refreshToken))] = struct{}{}
}

// wasRefused reports whether the authorization server refused refreshToken.
func (o *OAuth) wasRefused(refreshToken string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.refused[sha256.Sum256([]byte(refreshToken))]
	return ok
}

// authorize runs the flow after a 401 (or, step, a 403 insufficient_scope) whose bearer
// challenge is ch; held is the token the refused request carried.
func (rt *oauthRoundTripper) authorize(ctx context.Context, ch map[string]string, step bool, held *oauth2.Token) error {
	o := rt.o
	o.flow.Lock()
	defer o.flow.Unlock()
	// Another request may have authorized while this one waited: its token is tried first.
	if cur, err := rt.token(ctx); err == nil && cur != nil && (held == nil || cur.AccessToken != held.AccessToken) {
		return nil
	}
	st, prm, err := rt.discover(ctx, ch)
	if err != nil {
		return err
	}
	if !step {
		// A token the store kept from an earlier connection, now that the resource is known.
		if cur, err := rt.token(ctx); err == nil && cur != nil && (held == nil || cur.AccessToken != held.AccessToken) {
			return nil
		}
	}
	scopes := strings.Fields(ch["scope"])
	if len(scopes) == 0 && prm != nil {
		scopes = prm.ScopesSupported
	}
	o.mu.Lock()
	prev := o.granted[st.resource]
	o.mu.Unlock()
	if step {
		// MCP 2025-11-25, Authorization › Scope challenge handling: ask for what was held
		// and what is challenged; asking again for scopes already asked for cannot help.
		union := slices.Clone(prev)
		fresh := false
		for _, s := range scopes {
			if !slices.Contains(union, s) {
				union = append(union, s)
				fresh = true
			}
		}
		if !fresh {
			return authErrorf("the server wants scope %q, which was asked for and not granted", ch["scope"])
		}
		scopes = union
	}
	if slices.Contains(st.as.ScopesSupported, "offline_access") && slices.Contains(st.as.grantTypes(), "refresh_token") &&
		!slices.Contains(scopes, "offline_access") && len(scopes) > 0 {
		// SEP-2207: ask for a refresh token where the authorization server offers one.
		scopes = append(slices.Clone(scopes), "offline_access")
	}
	var tok *oauth2.Token
	if o.Grant != nil {
		tok, err = o.Grant.token(ctx, &grantRequest{rt: rt, as: st.as, resource: st.resource, scopes: scopes})
	} else {
		tok, err = rt.authorizationCode(ctx, st, scopes)
	}
	if err != nil {
		return err
	}
	o.mu.Lock()
	if o.granted == nil {
		o.granted = map[string][]string{}
	}
	o.granted[st.resource] = scopes
	o.mu.Unlock()
	return o.store().SetToken(ctx, st.resource, tok)
}

// authorizationCode runs the authorization code flow with PKCE (OAuth 2.1 §4.1, MCP
// 2025-11-25 Authorization › Authorization Code Protection) and returns the token.
func (rt *oauthRoundTripper) authorizationCode(ctx context.Context, st *authState, scopes []string) (*oauth2.Token, error) {
	o := rt.o
	if o.Authorize == nil {
		return nil, authErrorf("the server requires authorization: set OAuth.Authorize to show the user the authorization URL")
	}
	as := st.as
	// MCP 2025-11-25, Authorization › Authorization Code Protection: the client verifies
	// PKCE support in the metadata, and refuses to go on when code_challenge_methods_supported
	// is absent (no PKCE) or lacks S256.
	switch {
	case as.CodeChallengeMethods == nil:
		return nil, authErrorf("authorization server %s does not advertise PKCE (its metadata has no code_challenge_methods_supported), and MCP forbids authorizing without it: the server's metadata must list S256 there", as.Issuer)
	case !slices.Contains(as.CodeChallengeMethods, "S256"):
		return nil, authErrorf("authorization server %s does not support PKCE with S256 (code_challenge_methods_supported: %v), and MCP forbids authorizing without it: the server's metadata must list S256 there", as.Issuer, as.CodeChallengeMethods)
	}
	reg, err := rt.register(ctx, as, scopes)
	if err != nil {
		return nil, err
	}
	cfg := reg.config(as, o.RedirectURL, scopes)
	verifier := oauth2.GenerateVerifier()
	state := oauth2.GenerateVerifier()[:32]
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if st.resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", st.resource))
	}
	back, err := o.Authorize(ctx, cfg.AuthCodeURL(state, opts...))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthorization, err)
	}
	q := back.Query()
	if e := q.Get("error"); e != "" {
		return nil, authErrorf("the authorization server refused: %s %s", e, q.Get("error_description"))
	}
	if q.Get("state") != state {
		return nil, authErrorf("the authorization response's state does not match the request's")
	}
	// RFC 9207 §2.4: an advertised iss must be present; a present iss must equal the
	// issuer, compared as strings.
	iss, hasIss := q["iss"]
	switch {
	case hasIss && (len(iss) != 1 || iss[0] != as.Issuer):
		return nil, authErrorf("the authorization response comes from issuer %q, not %q", strings.Join(iss, ","), as.Issuer)
	case !hasIss && as.IssParameterSupported:
		return nil, authErrorf("authorization server %s advertises the iss parameter but its response has none", as.Issuer)
	}
	code := q.Get("code")
	if code == "" {
		return nil, authErrorf("the authorization response has no code")
	}
	ectx := context.WithValue(ctx, oauth2.HTTPClient, rt.tokenClient(as))
	xopts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier), resourceParam(st.resource)}
	if reg.method == "private_key_jwt" {
		a, err := o.clientAssertion(reg.id, as)
		if err != nil {
			return nil, err
		}
		for k := range a {
			xopts = append(xopts, oauth2.SetAuthURLParam(k, a.Get(k)))
		}
	}
	tok, err := cfg.Exchange(ectx, code, xopts...)
	if err != nil {
		return nil, fmt.Errorf("%w: exchanging the code: %w", ErrAuthorization, err)
	}
	return tok, nil
}

func resourceParam(resource string) oauth2.AuthCodeOption {
	return oauth2.SetAuthURLParam("resource", resource)
}

// config is the oauth2 configuration for this registration at as.
func (r registration) config(as *asMetadata, redirect string, scopes []string) *oauth2.Config {
	cfg := &oauth2.Config{ClientID: r.id, ClientSecret: r.secret, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: as.AuthorizationEndpoint, TokenURL: as.TokenEndpoint}}
	switch r.method {
	case "client_secret_basic":
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
	case "none", "private_key_jwt": // the latter's assertion is added to each token request
		cfg.ClientSecret = ""
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	default:
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	}
	return cfg
}

// refresh trades tok's refresh token for a new token, naming the resource (RFC 8707 §2.2).
func (rt *oauthRoundTripper) refresh(ctx context.Context, st *authState, tok *oauth2.Token) (*oauth2.Token, error) {
	// The credentials the flow used: pre-registered ones are never kept in clients.
	reg, ok := rt.o.known(st.as)
	if !ok {
		return nil, authErrorf("no registration at %s to refresh with", st.as.Issuer)
	}
	cfg := reg.config(st.as, rt.o.RedirectURL, nil)
	// x/oauth2's refresh sends no resource, nor a client assertion: the request's transport
	// adds them. The client authenticates as it did for the grant (private_key_jwt with a
	// fresh assertion, a secret, or its id alone).
	form := url.Values{}
	if st.resource != "" {
		form.Set("resource", st.resource)
	}
	if reg.method == "private_key_jwt" {
		a, err := rt.o.clientAssertion(reg.id, st.as)
		if err != nil {
			return nil, err
		}
		for k := range a {
			form.Set(k, a.Get(k))
		}
	}
	hc := &http.Client{Transport: addForm{base: rt.tokenClient(st.as).Transport, fields: form}}
	src := cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc), &oauth2.Token{RefreshToken: tok.RefreshToken})
	fresh, err := src.Token()
	if err != nil {
		return nil, err
	}
	if fresh.RefreshToken == "" {
		fresh.RefreshToken = tok.RefreshToken
	}
	return fresh, nil
}

// addForm sets fields in the form body of the requests it sends.
type addForm struct {
	base   http.RoundTripper
	fields url.Values
}

func (a addForm) RoundTrip(req *http.Request) (*http.Response, error) {
	base := a.base
	if base == nil {
		base = http.DefaultTransport
	}
	if len(a.fields) == 0 || req.Body == nil || !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return base.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range a.fields {
		form[k] = vs
	}
	r := req.Clone(req.Context())
	enc := form.Encode()
	r.Body = io.NopCloser(strings.NewReader(enc))
	r.ContentLength = int64(len(enc))
	return base.RoundTrip(r)
}
