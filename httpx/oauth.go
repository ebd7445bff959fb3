package httpx

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/relayrt/relay/internal/oauthmeta"
	"github.com/relayrt/relay/runtime"
)

// An OAuth 2.1 resource server (MCP 2025-11-25 and 2026-07-28, Basic › Authorization):
// access tokens issued by one authorization server, for this server and no other, checked
// on every request before its body is read. A JWT is verified against the issuer's keys
// (RFC 9068 profile: iss, aud, exp, nbf); any other token is asked about at the issuer's
// introspection endpoint (RFC 7662). The token is never passed on: a principal with the
// token's subject, client and scopes is what reaches handlers.

// TokenVerifierOptions configure NewTokenVerifier.
type TokenVerifierOptions struct {
	// Issuer is the authorization server's issuer identifier: https, or http on a loopback
	// host (development and tests). Its metadata (RFC 8414, or OpenID discovery) names its
	// keys and introspection endpoint.
	Issuer string
	// Audience is this server's canonical resource URI (RFC 8707), which every token must
	// name in aud: a token issued for another server is refused.
	Audience string
	// Scopes are required of every request: a valid token without them gets 403
	// insufficient_scope, naming them, so that the client can step up.
	Scopes []string
	// MethodScopes are required of the calls of a method ("tools/call", an RCP method),
	// or of one tool, prompt or resource ("tools/call:NAME", "prompts/get:NAME",
	// "resources/read:URI"), on top of Scopes; Authorize checks them.
	MethodScopes map[string][]string
	// IntrospectionClientID and IntrospectionSecret authenticate this server at the
	// introspection endpoint (HTTP Basic), for tokens that are not JWTs. Empty: opaque
	// tokens are refused.
	IntrospectionClientID, IntrospectionSecret string
	// Leeway is the clock skew allowed on exp and nbf (default 30 s).
	Leeway time.Duration
	// Client fetches the metadata, the keys and introspections (nil: one with a 10 s
	// timeout).
	Client *http.Client
}

// TokenVerifier checks the bearer tokens of requests: Authenticate is an Authenticator.
// It is safe for concurrent use.
type TokenVerifier struct {
	o             TokenVerifierOptions
	jwksURI       string
	introspection string

	keys      atomic.Pointer[map[string]crypto.PublicKey] // read by every request, without a lock
	fetchMu   sync.Mutex                                  // held while the keys are fetched: one fetch at a time
	fetchedAt time.Time                                   // under fetchMu
	now       func() time.Time                            // the clock of fetchedAt (tests set it)

	seenMu sync.Mutex
	seen   map[string]introspected // opaque tokens, until they expire
}

type introspected struct {
	p   *runtime.Principal
	exp time.Time
}

// keyRefreshEvery bounds how often an unknown key id makes the verifier fetch the keys
// again: a flood of tokens with made-up ids costs the issuer at most one fetch a minute.
const keyRefreshEvery = time.Minute

// maxIntrospected bounds the cache of introspected tokens.
const maxIntrospected = 10000

// NewTokenVerifier fetches the issuer's metadata and keys and returns a verifier. It fails
// when the issuer is not https (or loopback http), when its metadata cannot be fetched or
// names another issuer, or when its keys cannot be read.
func NewTokenVerifier(ctx context.Context, o TokenVerifierOptions) (*TokenVerifier, error) {
	if o.Leeway <= 0 {
		o.Leeway = 30 * time.Second
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Audience == "" {
		return nil, errors.New("httpx: a token verifier needs the server's canonical resource URI as its Audience")
	}
	iss, err := url.Parse(o.Issuer)
	if err != nil || iss.Host == "" || (iss.Scheme != "https" && !(iss.Scheme == "http" && oauthmeta.IsLoopback(iss.Hostname()))) {
		return nil, fmt.Errorf("httpx: issuer %q must be an https URL (or http on a loopback host, for development)", o.Issuer)
	}
	var meta struct {
		Issuer                string `json:"issuer"`
		JWKSURI               string `json:"jwks_uri"`
		IntrospectionEndpoint string `json:"introspection_endpoint"`
	}
	var tried []string
	for _, u := range oauthmeta.MetadataURLs(iss) {
		tried = append(tried, u)
		if err = getJSON(ctx, o.Client, u, &meta); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("httpx: the issuer's metadata (tried %s): %w", strings.Join(tried, ", "), err)
	}
	if meta.Issuer != o.Issuer {
		// RFC 8414 §3.3: the issuer in the metadata must be the one asked about.
		return nil, fmt.Errorf("httpx: the metadata of %q names issuer %q", o.Issuer, meta.Issuer)
	}
	v := &TokenVerifier{o: o, jwksURI: meta.JWKSURI, introspection: meta.IntrospectionEndpoint, seen: map[string]introspected{}, now: time.Now}
	if v.jwksURI != "" {
		v.fetchMu.Lock()
		v.fetchedAt = v.now()
		err := v.fetchKeys(ctx)
		v.fetchMu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return v, nil
}

// getJSON GETs u and decodes at most 1 MiB of it into v.
func getJSON(ctx context.Context, c *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// fetchKeys reads the issuer's JSON Web Key Set. Keys of kinds it does not know are skipped.
func (v *TokenVerifier) fetchKeys(ctx context.Context) error {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := getJSON(ctx, v.o.Client, v.jwksURI, &set); err != nil {
		return fmt.Errorf("httpx: the issuer's keys: %w", err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, raw := range set.Keys {
		kid, k, err := parseJWK(raw)
		if err == nil {
			keys[kid] = k
		}
	}
	v.keys.Store(&keys)
	return nil
}

// key returns the issuer's key kid, fetching the keys again when it is unknown and the last
// fetch is more than a minute old (keys rotate; ids do not come back).
func (v *TokenVerifier) key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	if keys := v.keys.Load(); keys != nil {
		if k, ok := (*keys)[kid]; ok {
			return k, nil
		}
	}
	if v.jwksURI == "" {
		return nil, errors.New("the issuer publishes no keys: JWTs cannot be verified")
	}
	v.fetchMu.Lock()
	defer v.fetchMu.Unlock()
	if v.now().Sub(v.fetchedAt) >= keyRefreshEvery {
		// Counted before it is tried, so that an issuer that is down is asked at most once a
		// minute too; on a context of its own, bounded, as requests wait on this lock.
		v.fetchedAt = v.now()
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := v.fetchKeys(fctx)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	if k, ok := (*v.keys.Load())[kid]; ok { // fetched now, or by the request that held the lock
		return k, nil
	}
	return nil, fmt.Errorf("no key %q among the issuer's", kid)
}

// parseJWK reads one public key of a JWK set (RFC 7517, 7518, 8037): RSA, EC (P-256, P-384,
// P-521) or OKP Ed25519.
func parseJWK(raw json.RawMessage) (string, crypto.PublicKey, error) {
	var j struct {
		Kty, Kid, Use, Crv, N, E, X, Y string
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return "", nil, err
	}
	if j.Use != "" && j.Use != "sig" {
		return "", nil, errors.New("not a signing key")
	}
	b := func(s string) []byte { d, _ := base64.RawURLEncoding.DecodeString(s); return d }
	switch j.Kty {
	case "RSA":
		n, e := new(big.Int).SetBytes(b(j.N)), new(big.Int).SetBytes(b(j.E))
		if n.BitLen() < 2048 || !e.IsInt64() || e.Int64() < 3 {
			return "", nil, errors.New("an RSA key under 2048 bits, or a bad exponent")
		}
		return j.Kid, &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
	case "EC":
		var c elliptic.Curve
		switch j.Crv {
		case "P-256":
			c = elliptic.P256()
		case "P-384":
			c = elliptic.P384()
		case "P-521":
			c = elliptic.P521()
		default:
			return "", nil, fmt.Errorf("curve %q", j.Crv)
		}
		x, y := new(big.Int).SetBytes(b(j.X)), new(big.Int).SetBytes(b(j.Y))
		if !c.IsOnCurve(x, y) {
			return "", nil, errors.New("a point not on its curve")
		}
		return j.Kid, &ecdsa.PublicKey{Curve: c, X: x, Y: y}, nil
	case "OKP":
		if x := b(j.X); j.Crv == "Ed25519" && len(x) == ed25519.PublicKeySize {
			return j.Kid, ed25519.PublicKey(x), nil
		}
	}
	return "", nil, fmt.Errorf("key type %q", j.Kty)
}

// signingMethods are the algorithms a token may be signed with: asymmetric only, so that
// neither "none" nor an HMAC keyed with a public key can pass.
var signingMethods = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// invalidTokenError refuses a token that is not valid: 401, with the scopes the server
// needs in the challenge (MCP Authorization › scope selection).
type invalidTokenError struct {
	why    string
	scopes []string
	none   bool // no token at all: the challenge names no error (RFC 6750 §3.1)
}

func (e *invalidTokenError) Error() string {
	if e.none {
		return e.why
	}
	return "the bearer token is not valid: " + e.why
}

// InsufficientScopeError refuses a valid token that lacks scopes the request needs: 403,
// with WWW-Authenticate naming them (RFC 6750 §3.1), so that the client can ask for them.
type InsufficientScopeError struct {
	Scopes []string
}

func (e *InsufficientScopeError) Error() string {
	return "the token lacks the scope " + strings.Join(e.Scopes, " ") + "; ask the authorization server for it"
}

// Authenticate checks the request's bearer token: a JWT against the issuer's keys, any
// other token by introspection; then the audience, and the scopes every request needs.
func (v *TokenVerifier) Authenticate(r *http.Request) (*runtime.Principal, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" {
		return nil, &invalidTokenError{why: errNoCredentials.Error(), scopes: v.o.Scopes, none: true}
	}
	tok = strings.TrimSpace(tok)
	var p *runtime.Principal
	var err error
	if strings.Count(tok, ".") == 2 {
		p, err = v.verifyJWT(r.Context(), tok)
	} else {
		p, err = v.introspect(r.Context(), tok)
	}
	if err != nil {
		return nil, &invalidTokenError{why: err.Error(), scopes: v.o.Scopes}
	}
	have := strings.Fields(p.Attributes["scope"])
	var missing []string
	for _, s := range v.o.Scopes {
		if !slices.Contains(have, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return nil, &InsufficientScopeError{Scopes: v.o.Scopes}
	}
	return p, nil
}

// Authorize is an Authorizer: it refuses a call whose method, or tool, prompt or resource,
// needs a scope (MethodScopes) the principal's token does not hold, with 403
// insufficient_scope naming every scope the call needs, so that one step-up is enough.
func (v *TokenVerifier) Authorize(r *http.Request, p *runtime.Principal, c Call) error {
	need := append(append([]string(nil), v.o.MethodScopes[c.Method]...), v.o.MethodScopes[c.Method+":"+c.Name]...)
	if len(need) == 0 {
		return nil
	}
	var have []string
	if p != nil {
		have = strings.Fields(p.Attributes["scope"])
	}
	for _, s := range need {
		if !slices.Contains(have, s) {
			all := append(slices.Clone(v.o.Scopes), need...)
			slices.Sort(all)
			return &InsufficientScopeError{Scopes: slices.Compact(all)}
		}
	}
	return nil
}

type accessClaims struct {
	jwt.RegisteredClaims
	Scope    string `json:"scope"`
	ClientID string `json:"client_id"`
}

func (v *TokenVerifier) verifyJWT(ctx context.Context, tok string) (*runtime.Principal, error) {
	var c accessClaims
	_, err := jwt.ParseWithClaims(tok, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return v.key(ctx, kid)
	}, jwt.WithValidMethods(signingMethods), jwt.WithIssuer(v.o.Issuer), jwt.WithAudience(v.o.Audience),
		jwt.WithExpirationRequired(), jwt.WithLeeway(v.o.Leeway))
	if err != nil {
		return nil, err
	}
	return principalOf(c.Subject, c.ClientID, c.Scope, v.o.Issuer), nil
}

func principalOf(sub, client, scope, iss string) *runtime.Principal {
	return &runtime.Principal{ID: sub, Attributes: map[string]string{"scope": scope, "client_id": client, "iss": iss}}
}

// introspect asks the issuer about an opaque token (RFC 7662), and keeps the answer until
// the token expires (at most a minute when it gives no exp).
func (v *TokenVerifier) introspect(ctx context.Context, tok string) (*runtime.Principal, error) {
	v.seenMu.Lock()
	if s, ok := v.seen[tok]; ok {
		if time.Now().Before(s.exp) {
			v.seenMu.Unlock()
			return s.p, nil
		}
		delete(v.seen, tok)
	}
	v.seenMu.Unlock()
	if v.introspection == "" || v.o.IntrospectionClientID == "" {
		return nil, errors.New("not a JWT, and this server does not introspect tokens")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.introspection,
		strings.NewReader(url.Values{"token": {tok}, "token_type_hint": {"access_token"}}.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(v.o.IntrospectionClientID), url.QueryEscape(v.o.IntrospectionSecret))
	resp, err := v.o.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("introspection: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("introspection: HTTP %d", resp.StatusCode)
	}
	var in struct {
		Active   bool            `json:"active"`
		Sub      string          `json:"sub"`
		ClientID string          `json:"client_id"`
		Scope    string          `json:"scope"`
		Iss      string          `json:"iss"`
		Aud      json.RawMessage `json:"aud"`
		Exp      int64           `json:"exp"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&in); err != nil {
		return nil, fmt.Errorf("introspection: %w", err)
	}
	now := time.Now()
	switch {
	case !in.Active:
		return nil, errors.New("inactive (revoked, expired, or never issued)")
	case in.Iss != "" && in.Iss != v.o.Issuer:
		return nil, fmt.Errorf("issued by %q", in.Iss)
	case !audienceHas(in.Aud, v.o.Audience):
		return nil, errors.New("issued for another resource")
	case in.Exp != 0 && now.After(time.Unix(in.Exp, 0).Add(v.o.Leeway)):
		return nil, errors.New("expired")
	}
	p := principalOf(in.Sub, in.ClientID, in.Scope, v.o.Issuer)
	exp := now.Add(time.Minute)
	if in.Exp != 0 && time.Unix(in.Exp, 0).Before(exp) {
		exp = time.Unix(in.Exp, 0)
	}
	v.seenMu.Lock()
	if len(v.seen) >= maxIntrospected {
		for k, s := range v.seen { // drop the expired, or any one when none has
			if now.After(s.exp) || len(v.seen) >= maxIntrospected {
				delete(v.seen, k)
			}
			if len(v.seen) < maxIntrospected/2 {
				break
			}
		}
	}
	v.seen[tok] = introspected{p: p, exp: exp}
	v.seenMu.Unlock()
	return p, nil
}

// audienceHas reports whether an aud claim (a string or an array of them) names aud. A
// token must name its audience: introspection that says nothing of it is refused.
func audienceHas(raw json.RawMessage, aud string) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == aud
	}
	var many []string
	return json.Unmarshal(raw, &many) == nil && slices.Contains(many, aud)
}
