// Package oidctest runs a real authorization server for Relay's tests: oidc-provider
// (npm, installed in interop/oidc), with one public client, resource indicators that issue
// RS256 JWT access tokens for one MCP resource, and its development login and consent
// pages, which SignIn fills in as a user would.
package oidctest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// ClientID is the provider's one client: public, with PKCE.
const ClientID = "relay-e2e"

// Start runs the provider until the test ends, issuing tokens for resource (scope
// "mcp:read") to ClientID, which may redirect only to redirect, and returns its issuer. It
// skips the test when node or interop/oidc's packages are missing.
func Start(t testing.TB, resource, redirect string) (issuer string) {
	t.Helper()
	_, file, _, _ := goruntime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "interop", "oidc")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "oidc-provider")); err != nil {
		t.Skip("oidc-provider is not installed: run npm ci in interop/oidc")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
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
	t.Cleanup(func() {
		stdin.Close() // the provider exits when its stdin closes
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ISSUER "); ok {
			issuer = v
			break
		}
	}
	if issuer == "" {
		t.Fatal("oidc-provider did not say its issuer")
	}
	go io.Copy(io.Discard, stdout) // the rest of its output; ends when it exits
	return issuer
}

var (
	formAction = regexp.MustCompile(`<form[^>]*action="([^"]+)"`)
	formInput  = regexp.MustCompile(`<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"`)
)

// SignIn plays a user at the provider's development pages: any login and password, then
// consent; it returns the URL the provider redirects to, without visiting it.
func SignIn(ctx context.Context, authURL, redirect string) (*url.URL, error) {
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

// Token signs in and runs the authorization code flow with PKCE and the resource indicator
// (RFC 8707) against the provider, as a client that knows its endpoints would, and returns
// the access token for resource: for tests of servers whose clients are not Relay's.
func Token(ctx context.Context, issuer, resource, redirect string) (string, error) {
	var meta struct {
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		TokenEndpoint         string `json:"token_endpoint"`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&meta)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	cfg := &oauth2.Config{ClientID: ClientID, RedirectURL: redirect, Scopes: []string{"mcp:read"},
		Endpoint: oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	res := oauth2.SetAuthURLParam("resource", resource)
	back, err := SignIn(ctx, cfg.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier), res), redirect)
	if err != nil {
		return "", err
	}
	if back.Query().Get("state") != "state-1" {
		return "", fmt.Errorf("the provider redirected with state %q", back.Query().Get("state"))
	}
	tok, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier), res)
	if err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}
