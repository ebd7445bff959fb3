package client

import (
	"bytes"
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
	"golang.org/x/oauth2/clientcredentials"
)

// A Grant obtains a token with no user present, instead of the authorization code flow:
// ClientCredentials, JWTBearer, EnterpriseManaged.
type Grant interface {
	token(ctx context.Context, g *grantRequest) (*oauth2.Token, error)
}

// grantRequest is what a Grant needs: where to ask, for what, as whom.
type grantRequest struct {
	rt       *oauthRoundTripper
	as       *asMetadata
	resource string
	scopes   []string
}

const (
	grantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
	assertionJWTBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// ClientCredentials is the client credentials grant (OAuth 2.1 §4.2; MCP extension
// io.modelcontextprotocol/oauth-client-credentials): the client authenticates with
// OAuth.ClientSecret, or with a JWT signed by OAuth.PrivateKey (private_key_jwt).
func ClientCredentials() Grant { return clientCredentialsGrant{} }

type clientCredentialsGrant struct{}

func (clientCredentialsGrant) token(ctx context.Context, g *grantRequest) (*oauth2.Token, error) {
	return g.post(ctx, g.as.TokenEndpoint, "client_credentials", url.Values{})
}

// JWTBearer is the JWT bearer grant (RFC 7523 §2.1) for workload identity federation:
// assertion returns a JWT the platform issued to the workload, whose audience is the
// authorization server. A refused assertion is reported, not retried with another grant.
func JWTBearer(assertion func(ctx context.Context) (string, error)) Grant {
	return jwtBearerGrant{assertion: assertion}
}

type jwtBearerGrant struct {
	assertion func(ctx context.Context) (string, error)
}

func (j jwtBearerGrant) token(ctx context.Context, g *grantRequest) (*oauth2.Token, error) {
	a, err := j.assertion(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: the workload's assertion: %w", ErrAuthorization, err)
	}
	return g.post(ctx, g.as.TokenEndpoint, grantJWTBearer, url.Values{"assertion": {a}})
}

// IdentityProvider is the enterprise identity provider of EnterpriseManaged.
type IdentityProvider struct {
	// TokenURL is the identity provider's token endpoint.
	TokenURL string
	// ClientID and ClientSecret identify this client at the identity provider.
	ClientID, ClientSecret string
	// IDToken returns the user's ID token from the identity provider's sign-in.
	IDToken func(ctx context.Context) (string, error)
}

// EnterpriseManaged is enterprise-managed authorization (MCP extension
// io.modelcontextprotocol/enterprise-managed-authorization): the user's ID token is
// exchanged at the identity provider for an identity assertion authorization grant
// (RFC 8693 token exchange), which the authorization server trades for an access token
// (RFC 7523 JWT bearer grant, the client authenticated by OAuth.ClientID and ClientSecret).
func EnterpriseManaged(idp IdentityProvider) Grant { return enterpriseGrant{idp: idp} }

type enterpriseGrant struct{ idp IdentityProvider }

func (e enterpriseGrant) token(ctx context.Context, g *grantRequest) (*oauth2.Token, error) {
	if err := g.pinned(); err != nil {
		return nil, err
	}
	if e.idp.IDToken == nil || e.idp.TokenURL == "" {
		return nil, authErrorf("enterprise-managed authorization needs the identity provider's TokenURL and IDToken")
	}
	idt, err := e.idp.IDToken(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: the ID token: %w", ErrAuthorization, err)
	}
	cfg := &clientcredentials.Config{ClientID: e.idp.ClientID, ClientSecret: e.idp.ClientSecret, TokenURL: e.idp.TokenURL,
		Scopes: g.scopes, AuthStyle: oauth2.AuthStyleInParams, EndpointParams: url.Values{
			"grant_type": {grantTokenExchange}, "subject_token": {idt}, "subject_token_type": {tokenTypeIDToken},
			"requested_token_type": {tokenTypeIDJAG}, "audience": {g.as.Issuer}, "resource": {g.resource},
		}}
	jag, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, g.rt.hc))
	if err != nil {
		return nil, fmt.Errorf("%w: token exchange at the identity provider: %w", ErrAuthorization, err)
	}
	if tt, _ := jag.Extra("issued_token_type").(string); tt != tokenTypeIDJAG {
		return nil, authErrorf("the identity provider issued a %q, not an identity assertion grant", tt)
	}
	return g.post(ctx, g.as.TokenEndpoint, grantJWTBearer, url.Values{"assertion": {jag.AccessToken}})
}

// pinned refuses an authorization server other than OAuth.Issuer, when set, before the
// client's credentials are sent to it.
func (g *grantRequest) pinned() error {
	if iss := g.rt.o.Issuer; iss != "" && g.as.Issuer != iss {
		return authErrorf("the server names authorization server %s, not OAuth.Issuer %s: refusing to send the client's credentials there", g.as.Issuer, iss)
	}
	return nil
}

// post asks tokenURL for a token with grantType and params, the client authenticated as
// OAuth says and the resource named.
func (g *grantRequest) post(ctx context.Context, tokenURL, grantType string, params url.Values) (*oauth2.Token, error) {
	o := g.rt.o
	if o.ClientID == "" {
		return nil, authErrorf("a grant without a user needs OAuth.ClientID")
	}
	if err := g.pinned(); err != nil {
		return nil, err
	}
	params.Set("grant_type", grantType)
	if g.resource != "" {
		params.Set("resource", g.resource)
	}
	cfg := &clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: tokenURL, Scopes: g.scopes,
		EndpointParams: params, AuthStyle: oauth2.AuthStyleInParams}
	switch {
	case o.PrivateKey != nil:
		a, err := o.clientAssertion(o.ClientID, g.as)
		if err != nil {
			return nil, err
		}
		cfg.ClientSecret = ""
		for k := range a {
			params.Set(k, a.Get(k))
		}
	case o.ClientSecret != "":
		if ms := g.as.TokenEndpointAuthMethods; len(ms) == 0 || slices.Contains(ms, "client_secret_basic") {
			cfg.AuthStyle = oauth2.AuthStyleInHeader
		}
	}
	tok, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, g.rt.tokenClient(g.as)))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			return nil, authErrorf("the %s grant was refused: %s %s", grantType, re.ErrorCode, re.ErrorDescription)
		}
		return nil, fmt.Errorf("%w: the %s grant: %w", ErrAuthorization, grantType, err)
	}
	return tok, nil
}

// clientAssertion is a fresh private_key_jwt client authentication (RFC 7523 §2.2) of the
// client clientID at as, signed by OAuth.PrivateKey: the form fields of a token request,
// the grant's and its refreshes' alike. RFC 7523 §3: iss and sub are the client, aud the
// authorization server.
func (o *OAuth) clientAssertion(clientID string, as *asMetadata) (url.Values, error) {
	now := time.Now()
	jwt, err := signJWT(o.PrivateKey, map[string]any{"typ": "JWT"}, map[string]any{
		"iss": clientID, "sub": clientID, "aud": as.Issuer, "jti": randomID(),
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
	})
	if err != nil {
		return nil, err
	}
	return url.Values{"client_assertion_type": {assertionJWTBearer}, "client_assertion": {jwt}}, nil
}

// dpopSigner makes DPoP proofs (RFC 9449 §4) with one key and remembers the nonce each
// server last supplied (§8, §9).
type dpopSigner struct {
	key    crypto.Signer
	mu     sync.Mutex
	nonces map[string]string // by origin
}

func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

func (d *dpopSigner) nonce(u *url.URL) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nonces[origin(u)]
}

// learn keeps the nonce a response supplied; it says whether the nonce is new.
func (d *dpopSigner) learn(u *url.URL, resp *http.Response) bool {
	n := resp.Header.Get("DPoP-Nonce")
	if n == "" {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.nonces == nil {
		d.nonces = map[string]string{}
	}
	old := d.nonces[origin(u)]
	d.nonces[origin(u)] = n
	return old != n
}

// proof is a fresh proof for a request of method to u, bound to accessToken when set.
func (d *dpopSigner) proof(method string, u *url.URL, accessToken string) (string, error) {
	jwk, err := publicJWK(d.key)
	if err != nil {
		return "", err
	}
	htu := *u
	htu.RawQuery, htu.Fragment, htu.RawFragment = "", "", ""
	claims := map[string]any{"jti": randomID(), "htm": method, "htu": htu.String(), "iat": time.Now().Unix()}
	if n := d.nonce(u); n != "" {
		claims["nonce"] = n
	}
	if accessToken != "" {
		h := sha256.Sum256([]byte(accessToken))
		claims["ath"] = b64.EncodeToString(h[:])
	}
	return signJWT(d.key, map[string]any{"typ": "dpop+jwt", "jwk": jwk}, claims)
}

// dpopTransport adds a proof to each token request and, answered use_dpop_nonce with a
// new nonce, sends it once more with that nonce (RFC 9449 §8).
type dpopTransport struct {
	d    *dpopSigner
	base http.RoundTripper
}

func (t dpopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		r := req.Clone(req.Context())
		if attempt > 0 {
			if req.GetBody == nil {
				return nil, authErrorf("a token request cannot be sent again with the DPoP nonce")
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r.Body = body
		}
		p, err := t.d.proof(r.Method, r.URL, "")
		if err != nil {
			return nil, err
		}
		r.Header.Set("DPoP", p)
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		fresh := t.d.learn(r.URL, resp)
		if attempt > 0 || !fresh || (resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnauthorized) {
			return resp, nil
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(body, []byte("use_dpop_nonce")) {
			resp.Body = io.NopCloser(bytes.NewReader(body))
			return resp, nil
		}
	}
}

// tokenClient makes the requests to token endpoints: with DPoP proofs when the tokens are
// to be DPoP-bound.
func (rt *oauthRoundTripper) tokenClient(as *asMetadata) *http.Client {
	if !rt.usesDPoP(as) {
		return rt.hc
	}
	base := rt.hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *rt.hc
	c.Transport = dpopTransport{d: rt.dpop, base: base}
	return &c
}

// usesDPoP says whether tokens from as are to be DPoP-bound: a key is set and the server
// accepts its algorithm.
func (rt *oauthRoundTripper) usesDPoP(as *asMetadata) bool {
	if rt.o.DPoPKey == nil {
		return false
	}
	alg, err := jwsAlg(rt.o.DPoPKey)
	return err == nil && slices.Contains(as.DPoPAlgs, alg)
}

func isDPoP(tok *oauth2.Token) bool { return strings.EqualFold(tok.TokenType, "DPoP") }
