package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/relayrt/relay/internal/oauthmeta"
)

// maxMetadata bounds the metadata documents and registration answers read.
const maxMetadata = 1 << 20

// prmMetadata is a protected resource's metadata (RFC 9728 §2).
type prmMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// asMetadata is an authorization server's metadata (RFC 8414 §2, OpenID Connect
// Discovery §3).
type asMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethods              []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethods          []string `json:"token_endpoint_auth_methods_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	DPoPAlgs                          []string `json:"dpop_signing_alg_values_supported"`
}

// grantTypes are the grant types the server supports, RFC 8414's default when unsaid.
func (m *asMetadata) grantTypes() []string {
	if m.GrantTypesSupported == nil {
		return []string{"authorization_code", "implicit"}
	}
	return m.GrantTypesSupported
}

// discover finds the protected resource metadata and the authorization server of the
// endpoint (MCP 2025-11-25, Authorization › Authorization Server Discovery) and records
// them for later requests. prm is nil for a server of the 2025-03-26 revision, which
// publishes none: its origin is then its authorization server.
func (rt *oauthRoundTripper) discover(ctx context.Context, ch map[string]string) (*authState, *prmMetadata, error) {
	mcpURL, err := url.Parse(rt.mcp)
	if err != nil {
		return nil, nil, err
	}
	origin := mcpURL.Scheme + "://" + mcpURL.Host
	var candidates []string
	if u := ch["resource_metadata"]; u != "" {
		candidates = []string{u}
	} else {
		// RFC 9728 §3.1: the path-suffixed well-known URI first, then the root.
		if p := strings.TrimSuffix(mcpURL.EscapedPath(), "/"); p != "" {
			candidates = append(candidates, origin+"/.well-known/oauth-protected-resource"+p)
		}
		candidates = append(candidates, origin+"/.well-known/oauth-protected-resource")
	}
	var prm *prmMetadata
	for _, c := range candidates {
		if err := requireHTTPS("the protected resource metadata", c); err != nil {
			return nil, nil, err
		}
		var m prmMetadata
		ok, err := rt.getJSON(ctx, c, &m)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			prm = &m
			break
		}
	}
	st := &authState{resource: rt.mcp}
	issuer := origin
	if prm != nil {
		// RFC 9728 §3.3: the metadata must be for this resource.
		if !resourceCovers(prm.Resource, mcpURL) {
			return nil, nil, authErrorf("the protected resource metadata names resource %q, which is not %s: refusing to authorize for it", prm.Resource, rt.mcp)
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, nil, authErrorf("the protected resource metadata of %s names no authorization server", rt.mcp)
		}
		st.resource = prm.Resource
		issuer = prm.AuthorizationServers[0]
	}
	as, err := rt.asMetadata(ctx, issuer)
	if err != nil {
		return nil, nil, err
	}
	if as == nil {
		if prm != nil {
			return nil, nil, authErrorf("authorization server %s publishes no metadata (RFC 8414 or OpenID discovery)", issuer)
		}
		// MCP 2025-03-26, Authorization › Fallbacks: default endpoints at the origin.
		// That revision requires PKCE of every client and authorization server, so this one,
		// which publishes no metadata to say so, supports S256.
		as = &asMetadata{Issuer: issuer, AuthorizationEndpoint: origin + "/authorize", TokenEndpoint: origin + "/token",
			RegistrationEndpoint: origin + "/register", CodeChallengeMethods: []string{"S256"}}
	}
	st.as = as
	rt.o.mu.Lock()
	if rt.o.resource == nil {
		rt.o.resource = map[string]*authState{}
	}
	rt.o.resource[rt.mcp] = st
	rt.o.mu.Unlock()
	return st, prm, nil
}

// asMetadata fetches issuer's metadata from the well-known URIs MCP lists (2025-11-25,
// Authorization › Authorization Server Metadata Discovery); nil when none answers.
func (rt *oauthRoundTripper) asMetadata(ctx context.Context, issuer string) (*asMetadata, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, authErrorf("the authorization server %q is not an absolute URL", issuer)
	}
	if err := requireHTTPS("the authorization server", issuer); err != nil {
		return nil, err
	}
	for _, c := range oauthmeta.MetadataURLs(u) {
		var m asMetadata
		ok, err := rt.getJSON(ctx, c, &m)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		// RFC 8414 §3.3: metadata for another issuer must not be used.
		if m.Issuer != issuer {
			return nil, authErrorf("the metadata at %s is for issuer %q, not %q: refusing to use it", c, m.Issuer, issuer)
		}
		if m.AuthorizationEndpoint == "" || m.TokenEndpoint == "" {
			return nil, authErrorf("the metadata at %s lacks the authorization or token endpoint", c)
		}
		for _, e := range []struct{ what, u string }{{"authorization endpoint", m.AuthorizationEndpoint},
			{"token endpoint", m.TokenEndpoint}, {"registration endpoint", m.RegistrationEndpoint}} {
			if e.u == "" {
				continue
			}
			if err := requireHTTPS("the "+e.what+" of "+issuer, e.u); err != nil {
				return nil, err
			}
		}
		return &m, nil
	}
	return nil, nil
}

// resourceCovers says whether the resource identifier names the endpoint u: the same
// origin, and a path that is u's or one of its parents.
func resourceCovers(resource string, u *url.URL) bool {
	r, err := url.Parse(resource)
	if err != nil || !strings.EqualFold(r.Scheme, u.Scheme) || !strings.EqualFold(r.Host, u.Host) || r.Fragment != "" {
		return false
	}
	rp := strings.TrimSuffix(r.Path, "/")
	up := strings.TrimSuffix(u.Path, "/")
	return rp == "" || up == rp || strings.HasPrefix(up, rp+"/")
}

// getJSON GETs u into v: false when the server has no such document (any status but 200).
func (rt *oauthRoundTripper) getJSON(ctx context.Context, u string, v any) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, authErrorf("metadata URL %q: %v", u, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := rt.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK {
		return false, nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return false, authErrorf("the metadata at %s is not JSON: %v", u, err)
	}
	return true, nil
}

// register returns the client's registration at as: the pre-registered credentials, the
// client ID metadata document's URL, or a dynamic registration (RFC 7591), in that order
// (MCP 2025-11-25, Authorization › Client Registration Approaches). Registrations are kept
// by issuer, never carried to another authorization server.
func (rt *oauthRoundTripper) register(ctx context.Context, as *asMetadata, scopes []string) (registration, error) {
	o := rt.o
	reg, ok := o.known(as)
	if ok {
		return reg, nil
	}
	switch {
	case as.ClientIDMetadataDocumentSupported && o.ClientMetadataURL != "":
		reg = registration{id: o.ClientMetadataURL, method: "none"}
	case as.RegistrationEndpoint != "":
		var err error
		if reg, err = rt.registerDynamically(ctx, as, scopes); err != nil {
			return reg, err
		}
	default:
		return reg, authErrorf("authorization server %s offers no way to register this client: register it there and set OAuth.ClientID", as.Issuer)
	}
	o.mu.Lock()
	if o.clients == nil {
		o.clients = map[string]registration{}
	}
	o.clients[as.Issuer] = reg
	o.mu.Unlock()
	return reg, nil
}

// known returns the registration the client already has at as, without registering: the
// pre-registered credentials when they are for as, else the one kept from an earlier
// registration.
func (o *OAuth) known(as *asMetadata) (registration, bool) {
	if o.ClientID != "" && (o.Issuer == "" || o.Issuer == as.Issuer) {
		method := "none"
		switch {
		case o.PrivateKey != nil:
			method = "private_key_jwt" // every token request carries a fresh assertion
		case o.ClientSecret != "":
			method = "client_secret_basic"
			if len(as.TokenEndpointAuthMethods) > 0 && !slices.Contains(as.TokenEndpointAuthMethods, method) {
				method = "client_secret_post"
			}
		}
		return registration{id: o.ClientID, secret: o.ClientSecret, method: method}, true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	reg, ok := o.clients[as.Issuer]
	return reg, ok
}

func (rt *oauthRoundTripper) registerDynamically(ctx context.Context, as *asMetadata, scopes []string) (registration, error) {
	o := rt.o
	method := "none"
	if ms := as.TokenEndpointAuthMethods; len(ms) > 0 && !slices.Contains(ms, "none") {
		method = ms[0]
	}
	name := o.ClientName
	if name == "" {
		name = "relay"
	}
	appType := "web"
	if u, err := url.Parse(o.RedirectURL); err == nil && oauthmeta.IsLoopback(u.Hostname()) {
		appType = "native"
	}
	meta := map[string]any{
		"client_name": name, "redirect_uris": []string{o.RedirectURL},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": method, "application_type": appType,
	}
	if len(scopes) > 0 {
		meta["scope"] = strings.Join(scopes, " ")
	}
	body, _ := json.Marshal(meta)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, as.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return registration{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := rt.hc.Do(req)
	if err != nil {
		return registration{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return registration{}, err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return registration{}, authErrorf("dynamic registration at %s: HTTP %d: %s", as.RegistrationEndpoint, resp.StatusCode, bytes.TrimSpace(data))
	}
	var got struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Method       string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(data, &got); err != nil || got.ClientID == "" {
		return registration{}, authErrorf("dynamic registration at %s answered no client_id", as.RegistrationEndpoint)
	}
	if got.Method != "" {
		method = got.Method
	}
	return registration{id: got.ClientID, secret: got.ClientSecret, method: method}, nil
}

// requireHTTPS refuses u, what's URL, unless it is https, or http on a loopback host
// (OAuth 2.1 §1.5: authorization servers and their endpoints are reached over TLS).
func requireHTTPS(what, u string) error {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return authErrorf("%s %q is not an absolute URL", what, u)
	}
	switch {
	case strings.EqualFold(p.Scheme, "https"):
		return nil
	case strings.EqualFold(p.Scheme, "http") && oauthmeta.IsLoopback(p.Hostname()):
		return nil
	}
	return authErrorf("%s %s is not https (http is allowed only on a loopback host): refusing to use it", what, u)
}

// challenges are the parsed WWW-Authenticate challenges, by lower-cased scheme.
type challenges map[string]map[string]string

func (c challenges) get(scheme string) map[string]string {
	if m := c[scheme]; m != nil {
		return m
	}
	return map[string]string{}
}

// parseChallenges reads WWW-Authenticate values (RFC 9110 §11.6.1): schemes, each with
// auth-params whose values are tokens or quoted strings.
func parseChallenges(values []string) challenges {
	out := challenges{}
	for _, v := range values {
		var cur map[string]string
		s := v
		for {
			s = strings.TrimLeft(s, " \t,")
			if s == "" {
				break
			}
			i := strings.IndexAny(s, " \t=,")
			if i < 0 {
				i = len(s)
			}
			tok := s[:i]
			rest := strings.TrimLeft(s[i:], " \t")
			if !strings.HasPrefix(rest, "=") || cur == nil {
				if strings.HasPrefix(rest, "=") { // a param before any scheme: skip it
					cur = map[string]string{}
				} else {
					cur = map[string]string{}
					out[strings.ToLower(tok)] = cur
					s = rest
					continue
				}
			}
			rest = strings.TrimLeft(rest[1:], " \t")
			var val string
			if strings.HasPrefix(rest, `"`) {
				var b strings.Builder
				j := 1
				for ; j < len(rest) && rest[j] != '"'; j++ {
					if rest[j] == '\\' && j+1 < len(rest) {
						j++
					}
					b.WriteByte(rest[j])
				}
				val = b.String()
				if j < len(rest) {
					j++
				}
				rest = rest[j:]
			} else {
				k := strings.IndexAny(rest, " \t,")
				if k < 0 {
					k = len(rest)
				}
				val, rest = rest[:k], rest[k:]
			}
			cur[strings.ToLower(tok)] = val
			s = rest
		}
	}
	return out
}
