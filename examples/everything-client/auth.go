package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/relayrt/relay/mcp/client"
)

// conformanceContext is MCP_CONFORMANCE_CONTEXT: the credentials an authorization
// scenario hands its client.
type conformanceContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	Issuer       string `json:"issuer"`

	// Client credentials with private_key_jwt.
	PrivateKeyPEM string `json:"private_key_pem"`
	// Enterprise-managed authorization: the identity provider and the user's ID token.
	IDPClientID      string `json:"idp_client_id"`
	IDPIDToken       string `json:"idp_id_token"`
	IDPTokenEndpoint string `json:"idp_token_endpoint"`
	// Workload identity: the platform's JWT for this workload.
	ValidJWT string `json:"valid_jwt"`
}

// clientMetadataURL is the client ID metadata document the suite's authorization servers
// expect when they advertise client_id_metadata_document_supported.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// oauthFor returns the OAuth configuration of an authorization scenario, nil for the
// others. The suite's authorization servers approve at once, so the "browser" is one GET
// of the authorization URL whose redirect is read, not followed.
func oauthFor(scenario, raw string) (*client.OAuth, error) {
	if !strings.HasPrefix(scenario, "auth/") {
		return nil, nil
	}
	var cc conformanceContext
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &cc); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	o := &client.OAuth{
		ClientID: cc.ClientID, ClientSecret: cc.ClientSecret, Issuer: cc.Issuer,
		ClientMetadataURL: clientMetadataURL,
		ClientName:        "relay-everything-client",
		RedirectURL:       "http://localhost:3000/callback",
		Authorize:         approve,
	}
	switch scenario {
	case "auth/client-credentials-basic":
		o.Grant = client.ClientCredentials()
	case "auth/client-credentials-jwt":
		block, _ := pem.Decode([]byte(cc.PrivateKeyPEM))
		if block == nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: private_key_pem holds no PEM block")
		}
		key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: private_key_pem: %w", err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: private_key_pem is a %T, which cannot sign", key)
		}
		o.PrivateKey, o.Grant = signer, client.ClientCredentials()
	case "auth/enterprise-managed-authorization":
		o.Grant = client.EnterpriseManaged(client.IdentityProvider{
			TokenURL: cc.IDPTokenEndpoint, ClientID: cc.IDPClientID,
			IDToken: func(context.Context) (string, error) { return cc.IDPIDToken, nil },
		})
	case "auth/wif-jwt-bearer":
		o.Grant = client.JWTBearer(func(context.Context) (string, error) { return cc.ValidJWT, nil })
	case "auth/dpop", "auth/dpop-nonce":
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		o.DPoPKey = key
	}
	return o, nil
}

// approve visits authURL as a browser whose user approves, and returns where the
// authorization server redirects it.
func approve(ctx context.Context, authURL string) (*url.URL, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	loc := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || loc == "" {
		return nil, fmt.Errorf("the authorization endpoint answered HTTP %d without a redirect", resp.StatusCode)
	}
	return resp.Request.URL.Parse(loc)
}
