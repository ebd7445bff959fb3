//go:build unix

package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// hop is one HTTP request a client sent through nginx, and the instance that answered it.
type hop struct {
	httpMethod string // POST, GET, DELETE
	rpc        string // the JSON-RPC method, or "answer" for an answer to the server
	session    string // the Mcp-Session-Id it carried
	instance   string // the answer's Relay-Instance
	status     int
	answered   string // the answer's Mcp-Session-Id
}

// recorder is an http.RoundTripper that notes every request and who answered it.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	hops []hop
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	h := hop{httpMethod: req.Method, session: req.Header.Get("Mcp-Session-Id")}
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		json.Unmarshal(body, &m)
		h.rpc = m.Method
		if m.Method == "" && (m.Result != nil || m.Error != nil) {
			h.rpc = "answer"
		}
	}
	res, err := r.base.RoundTrip(req)
	if err == nil {
		h.instance, h.status, h.answered = res.Header.Get("Relay-Instance"), res.StatusCode, res.Header.Get("Mcp-Session-Id")
	}
	r.mu.Lock()
	r.hops = append(r.hops, h)
	r.mu.Unlock()
	return res, err
}

// connectLegacy opens a 2025-11-25 session of Relay's client through url, noting every
// HTTP request it sends; the client accepts every elicitation as alice.
func connectLegacy(ctx context.Context, t *testing.T, url string) (*client.Client, *recorder) {
	t.Helper()
	rec := &recorder{base: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(rec.base.(*http.Transport).CloseIdleConnections)
	tr := client.HTTP(url)
	tr.Client = &http.Client{Transport: rec}
	c, err := client.Connect(ctx, tr, client.WithVersion("2025-11-25"),
		client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "alice", "email": "alice@example.com"}}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

// hearUpdates subscribes c to uri through a listen and waits for n of its updates (20 s at
// most for each), then ends the listen.
func hearUpdates(ctx context.Context, t *testing.T, c *client.Client, uri string, n int) {
	t.Helper()
	lctx, stop := context.WithCancel(ctx)
	heard := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- c.Listen(lctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}},
			func(method string, params json.RawMessage) {
				if method == "notifications/resources/updated" {
					select {
					case heard <- string(params):
					default:
					}
				}
			})
	}()
	for range n {
		select {
		case p := <-heard:
			if !strings.Contains(p, uri) {
				t.Errorf("update %s, want %s", p, uri)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("no notifications/resources/updated of %s within 20 s", uri)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// gets returns the instances that took the GETs noted so far, in order.
func (r *recorder) gets() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, h := range r.hops {
		if h.httpMethod == http.MethodGet {
			out = append(out, h.instance)
		}
	}
	return out
}

// posts returns the POSTs noted so far.
func (r *recorder) posts() []hop {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hop
	for _, h := range r.hops {
		if h.httpMethod == http.MethodPost {
			out = append(out, h)
		}
	}
	return out
}

// TestLegacySession_EveryRequestOnAnotherInstance drives one initialize-generation session
// (2025-11-25, Relay's own client) through nginx round-robin: each POST reaches the next
// instance (checked with each answer's Relay-Instance), and the session works all the same.
// A tool runs; an elicitation the tool asks on one instance is answered with a POST that
// another instance takes; the log level set on one instance holds for a tool called on
// another (info: three messages; error: none); a resource subscription made through one
// instance is heard on the GET stream another instance holds.
func TestLegacySession_EveryRequestOnAnotherInstance(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	f := startFleet(t, "-watch", "300ms")
	c, rec := connectLegacy(ctx, t, f.url)
	defer c.Close()
	if c.Modern() || c.Version() != "2025-11-25" {
		t.Fatalf("connected with %q (modern %v), want the 2025-11-25 session", c.Version(), c.Modern())
	}

	t.Run("tools", func(t *testing.T) {
		n := 0
		for tool, err := range c.ListTools(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if tool.Name != "" {
				n++
			}
		}
		res, err := c.CallTool(ctx, "test_simple_text", map[string]any{})
		if err != nil || n == 0 || len(res.Content) == 0 {
			t.Fatalf("%d tools; test_simple_text: %+v, %v", n, res, err)
		}
	})
	t.Run("elicitation answered on another instance", func(t *testing.T) {
		before := len(rec.posts())
		res, err := c.CallTool(ctx, "test_elicitation", map[string]any{"message": "who are you?"})
		if err != nil {
			t.Fatal(err)
		}
		text, _ := json.Marshal(res.Content)
		if !strings.Contains(string(text), "action=accept") || !strings.Contains(string(text), "alice@example.com") {
			t.Fatalf("test_elicitation: %s; want the accepted answer", text)
		}
		// The answer's POST may still be on its way back (its 202 comes after the instance
		// passed the answer on, and the tool's result may overtake it): wait for it.
		var call, answer string
		for deadline := time.Now().Add(5 * time.Second); answer == "" && time.Now().Before(deadline); {
			for _, h := range rec.posts()[before:] {
				switch h.rpc {
				case "tools/call":
					call = h.instance
				case "answer":
					answer = h.instance
				}
			}
			if answer == "" {
				time.Sleep(10 * time.Millisecond)
			}
		}
		t.Logf("the tool ran on %s; the elicitation's answer was POSTed to %s", call, answer)
		if call == "" || answer == "" || call == answer {
			t.Errorf("tools/call on %q, its elicitation's answer on %q: want two instances", call, answer)
		}
	})
	t.Run("log level holds on every instance", func(t *testing.T) {
		logs := func() (n int, on string) {
			before := len(rec.posts())
			_, err := c.CallTool(ctx, "test_tool_with_logging", map[string]any{}, client.WithNotifications(func(method string, _ json.RawMessage) {
				if method == "notifications/message" {
					n++
				}
			}))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range rec.posts()[before:] {
				if h.rpc == "tools/call" {
					on = h.instance
				}
			}
			return n, on
		}
		for _, tc := range []struct {
			level mcp.LoggingLevel
			want  int
		}{{mcp.LevelInfo, 3}, {mcp.LevelError, 0}, {mcp.LevelDebug, 3}} {
			before := len(rec.posts())
			if err := c.SetLogLevel(ctx, tc.level); err != nil {
				t.Fatal(err)
			}
			set := rec.posts()[before].instance
			n, on := logs()
			t.Logf("level %s set on %s; the tool on %s sent %d messages", tc.level, set, on, n)
			if n != tc.want || set == on {
				t.Errorf("level %s set on %s, tool on %s: %d log messages, want %d on another instance", tc.level, set, on, n, tc.want)
			}
		}
	})
	t.Run("resource subscription heard on the GET stream", func(t *testing.T) {
		before := len(rec.posts())
		hearUpdates(ctx, t, c, "test://watched-resource", 2) // whichever instance's watcher made them
		var sub string
		for _, h := range rec.posts()[before:] {
			if h.rpc == "resources/subscribe" {
				sub = h.instance
			}
		}
		gets := rec.gets()
		t.Logf("subscribed on %s; GET streams held by %v", sub, gets)
		if len(gets) == 0 || sub == "" || !slices.ContainsFunc(gets, func(on string) bool { return on != sub }) {
			t.Errorf("subscribed on %q, GET streams on %v: want the updates heard on a stream another instance holds", sub, gets)
		}
	})

	// Every POST of the session carried its id, and the session's requests went round.
	posts := rec.posts()
	byInstance := map[string]int{}
	same := 0
	for i, h := range posts {
		byInstance[h.instance]++
		if i > 0 && h.session == "" {
			t.Errorf("POST %d (%s) carried no session id", i, h.rpc)
		}
		if h.status != http.StatusOK && h.status != http.StatusAccepted {
			t.Errorf("POST %d (%s) on %s: status %d", i, h.rpc, h.instance, h.status)
		}
		if i > 0 && posts[i-1].instance == h.instance {
			same++
		}
	}
	t.Logf("%d POSTs of one session: %v; %d followed one on the same instance", len(posts), byInstance, same)
	if len(byInstance) != 3 || byInstance[""] > 0 || same > 0 {
		t.Errorf("the session's POSTs by instance: %v; want all three in turn, each answer naming its instance", byInstance)
	}
}
