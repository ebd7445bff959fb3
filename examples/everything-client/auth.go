package main

import (
	"context"
	"encoding/json"
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
	return &client.OAuth{
		ClientID: cc.ClientID, ClientSecret: cc.ClientSecret, Issuer: cc.Issuer,
		ClientMetadataURL: clientMetadataURL,
		ClientName:        "relay-everything-client",
		RedirectURL:       "http://localhost:3000/callback",
		Authorize:         approve,
	}, nil
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
