package client_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/url"

	"github.com/relayrt/relay/mcp/client"
)

// Connect to a server protected by OAuth 2.1. Authorize shows the user the authorization
// URL and returns where the authorization server sent the browser back; here the test's
// authorization server approves at once, so one GET that does not follow the redirect
// plays the browser.
func ExampleOAuth() {
	srv, stop := startAuthServer(nil) // an authorization server and the MCP server it protects
	defer stop()

	t := client.HTTP(srv.mcpURL)
	t.OAuth = &client.OAuth{
		ClientName:  "example",
		RedirectURL: "http://127.0.0.1:8976/callback",
		Authorize: func(ctx context.Context, authURL string) (*url.URL, error) {
			browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
			if err != nil {
				return nil, err
			}
			resp, err := browser.Do(req)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			return resp.Location()
		},
	}
	ctx := context.Background()
	c, err := client.Connect(ctx, t)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	n := 0
	for _, err := range c.ListTools(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		n++
	}
	fmt.Println(n > 0)
	// Output: true
}
