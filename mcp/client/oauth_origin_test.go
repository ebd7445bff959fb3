package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// The token goes only to the MCP endpoint's origin: a redirect to another host is
// followed without it.
func TestOAuth_TokenOnlyToMCPOrigin(t *testing.T) {
	var mu sync.Mutex
	var leaked, sent string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = r.Header.Get("Authorization")
		mu.Unlock()
	}))
	defer other.Close()
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = r.Header.Get("Authorization")
		mu.Unlock()
		http.Redirect(w, r, other.URL+"/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer rs.Close()
	mcpURL := rs.URL + "/mcp"
	o := &OAuth{resource: map[string]*authState{mcpURL: {resource: mcpURL, as: &asMetadata{Issuer: rs.URL}}}}
	o.store().SetToken(context.Background(), mcpURL, &oauth2.Token{AccessToken: "secret", Expiry: time.Now().Add(time.Hour)})
	hc := &http.Client{Transport: o.roundTripper(nil, mcpURL)}
	resp, err := hc.Get(mcpURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if sent != "Bearer secret" {
		t.Errorf("the MCP endpoint got Authorization %q, want the token", sent)
	}
	if leaked != "" {
		t.Errorf("the redirect's target on another origin got Authorization %q", leaked)
	}
}

// An HTTP+SSE endpoint event naming another origin is refused: the messages (and the
// token) would go there.
func TestSSE_EndpointOnAnotherOriginRefused(t *testing.T) {
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("event: endpoint\ndata: http://attacker.example:8080/messages\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer rs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := HTTP(rs.URL + "/sse")
	c, err := tr.dialSSE(ctx, nil)
	if err == nil {
		c.close()
		t.Fatal("dialSSE accepted an endpoint on another origin")
	}
	if !strings.Contains(err.Error(), "origin") {
		t.Fatalf("dialSSE: %v, want an error naming the other origin", err)
	}
}
