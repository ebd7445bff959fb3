package client_test

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// The authorization code flow end to end against a real authorization server:
// oidc-provider (interop/oidc, installed by npm ci) issues JWT access tokens for the MCP
// server's resource, the server is httpx's MCP handler with its TokenVerifier, and the
// client logs in through the provider's login and consent pages, filled in here.
func TestOAuth_OIDCProviderEndToEnd(t *testing.T) {
	dir, err := filepath.Abs("../../interop/oidc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "oidc-provider")); err != nil {
		t.Skip("oidc-provider is not installed: run npm ci in interop/oidc")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The MCP server's URL is the provider's resource, so it listens first; its handler
	// comes once the provider's keys can be read.
	var handler atomic.Pointer[http.Handler]
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := handler.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, "starting", http.StatusServiceUnavailable)
	}))
	defer rs.Close()
	resource := rs.URL + "/mcp"
	const redirect = "http://127.0.0.1:9/callback"

	cmd := exec.Command(node, "provider.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCP_RESOURCE="+resource, "REDIRECT_URI="+redirect)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the provider exits when its stdin closes
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	sc := bufio.NewScanner(stdout)
	var issuer string
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ISSUER "); ok {
			issuer = v
			break
		}
	}
	if issuer == "" {
		t.Fatal("the provider did not say its issuer")
	}
	go io.Copy(io.Discard, stdout) // the rest of its output; ends when it exits

	verifier, err := httpx.NewTokenVerifier(ctx, httpx.TokenVerifierOptions{Issuer: issuer, Audience: resource, Scopes: []string{"mcp:read"}})
	if err != nil {
		t.Fatal(err)
	}
	mh := httpx.NewMCPHandler(newFixture(), &httpx.MCPOptions{Logger: zap.NewNop(), Authenticator: verifier.Authenticate,
		ProtectedResource: &httpx.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{issuer},
			ScopesSupported: []string{"mcp:read"}}})
	defer mh.Close()
	var h http.Handler = mh
	handler.Store(&h)

	logins := 0
	tr := client.HTTP(resource)
	tr.OAuth = &client.OAuth{ClientID: "relay-e2e", RedirectURL: redirect,
		Authorize: func(ctx context.Context, authURL string) (*url.URL, error) {
			logins++
			return signIn(ctx, authURL, redirect)
		}}
	for _, g := range generations {
		c, err := client.Connect(ctx, tr, g.opts...)
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		res, err := c.CallTool(ctx, "echo", map[string]any{"text": "through oidc-provider"})
		c.Close()
		if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "through oidc-provider" {
			t.Fatalf("%s: CallTool: %v %+v", g.name, err, res)
		}
	}
	if logins != 1 {
		t.Fatalf("%d logins for two connections with one OAuth, want 1 (the token is kept)", logins)
	}
}

var (
	formAction = regexp.MustCompile(`<form[^>]*action="([^"]+)"`)
	formInput  = regexp.MustCompile(`<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"`)
)

// signIn plays a user at oidc-provider's development pages: any login and password, then
// consent; it returns the URL the provider redirects to, without visiting it.
func signIn(ctx context.Context, authURL, redirect string) (*url.URL, error) {
	jar, _ := cookiejar.New(nil)
	var back *url.URL
	hc := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirect) {
			back = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	for step := 0; err == nil && back == nil && step < 6; step++ {
		page, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		m := formAction.FindSubmatch(page)
		if m == nil {
			return nil, fmt.Errorf("HTTP %d at %s, with no form: %.300s", resp.StatusCode, resp.Request.URL, page)
		}
		action, perr := resp.Request.URL.Parse(html.UnescapeString(string(m[1])))
		if perr != nil {
			return nil, perr
		}
		form := url.Values{}
		for _, in := range formInput.FindAllSubmatch(page, -1) {
			form.Set(string(in[1]), html.UnescapeString(string(in[2])))
		}
		if form.Get("prompt") == "login" {
			form.Set("login", "relay-user")
			form.Set("password", "any")
		}
		post, _ := http.NewRequestWithContext(ctx, http.MethodPost, action.String(), strings.NewReader(form.Encode()))
		post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err = hc.Do(post)
	}
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if back == nil {
		return nil, fmt.Errorf("the provider never redirected to %s", redirect)
	}
	return back, nil
}
