//go:build unix

package fleet

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// relayGateway is relay gateway --listen with examples/everything as its one local server.
func relayGateway(t *testing.T, name, addr string, fleet ...string) []string {
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": everythingBin(t), "args": []string{"-watch", "300ms"}}}})
	path := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return append([]string{relayBin(t), "gateway", "--listen", addr, "--instance", name, "--config", path,
		"--reload-check", "0", "--quiet-child"}, fleet...)
}

// relayBridge is relay bridge over a pool of one examples/everything child (2026-07-28 on
// stdio).
func relayBridge(t *testing.T, name, addr string, fleet ...string) []string {
	cmdline := append([]string{relayBin(t), "bridge", "--listen", addr, "--instance", name, "--pool", "1"}, fleet...)
	return append(cmdline, "--", everythingBin(t), "-watch", "300ms")
}

// TestRelayFleet_OneSessionOnEveryInstance runs three instances of relay gateway, then of
// relay bridge, with --redis behind nginx round-robin, and one 2025-11-25 session of
// Relay's client through them, each POST on the next instance: it lists the tools and calls
// one; a log level set through one instance holds for a tool called through another; a
// question of the server's asked by one instance is answered with a POST another takes; a
// resource subscribed to through one instance is updated on the GET stream another holds;
// and a DELETE through one ends the session on all. Without the shared sessions, every
// request that reaches another instance than the initialize's is refused with 404.
func TestRelayFleet_OneSessionOnEveryInstance(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      program
		prefix string // of the tools' names
	}{{"gateway", relayGateway, "everything__"}, {"bridge", relayBridge, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t, 2*time.Minute)
			f := startFleetOf(t, tc.p)
			c, rec := connectLegacy(ctx, t, f.url)
			if c.Modern() {
				t.Fatalf("connected with %q, want the 2025-11-25 session", c.Version())
			}
			// on returns the instance that took the last POST of method since the before-th.
			on := func(before int, method string) string {
				var at string
				for _, h := range rec.posts()[before:] {
					if h.rpc == method {
						at = h.instance
					}
				}
				return at
			}

			found := false
			for tool, err := range c.ListTools(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				found = found || tool.Name == tc.prefix+"test_simple_text"
			}
			if res, err := c.CallTool(ctx, tc.prefix+"test_simple_text", map[string]any{}); err != nil || !found || len(res.Content) == 0 {
				t.Fatalf("listed %stest_simple_text: %v; called: %+v, %v", tc.prefix, found, res, err)
			}

			for _, lc := range []struct {
				level mcp.LoggingLevel
				want  int
			}{{mcp.LevelError, 0}, {mcp.LevelInfo, 3}} {
				before := len(rec.posts())
				if err := c.SetLogLevel(ctx, lc.level); err != nil {
					t.Fatal(err)
				}
				n := 0
				_, err := c.CallTool(ctx, tc.prefix+"test_tool_with_logging", map[string]any{}, client.WithNotifications(func(method string, _ json.RawMessage) {
					if method == "notifications/message" {
						n++
					}
				}))
				set, called := on(before, "logging/setLevel"), on(before, "tools/call")
				if err != nil || n != lc.want || set == called {
					t.Errorf("level %s set on %s, test_tool_with_logging on %s: %d log messages (%v); want %d, on another instance",
						lc.level, set, called, n, err, lc.want)
				}
			}

			before := len(rec.posts())
			res, err := c.CallTool(ctx, tc.prefix+"test_elicitation", map[string]any{"message": "who are you?"})
			if err != nil {
				t.Fatal(err)
			}
			if text, _ := json.Marshal(res.Content); !strings.Contains(string(text), "action=accept") || !strings.Contains(string(text), "alice@example.com") {
				t.Fatalf("%stest_elicitation: %s; want the accepted answer", tc.prefix, text)
			}
			// The answer's POST may still be on its way back (the tool's result can overtake
			// its 202): wait for it.
			for deadline := time.Now().Add(5 * time.Second); on(before, "answer") == "" && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if asked, answered := on(before, "tools/call"), on(before, "answer"); asked == "" || answered == "" || asked == answered {
				t.Errorf("the question asked on %q, answered on %q: want two instances", asked, answered)
			}

			// The subscription is made through another instance than the one holding the GET
			// stream (a 2025-11-25 session hears updates only there): pings until one lands
			// there, so that nginx sends the next POST on.
			gets := rec.gets()
			if len(gets) != 1 || gets[0] == "" {
				t.Fatalf("GET streams on %q; want the session's one, on a named instance", gets)
			}
			getOn := gets[0]
			for range 3 {
				before = len(rec.posts())
				if err := c.Ping(ctx); err != nil {
					t.Fatal(err)
				}
				if on(before, "ping") == getOn {
					break
				}
			}
			before = len(rec.posts())
			hearUpdates(ctx, t, c, "test://watched-resource", 1)
			if sub, gets := on(before, "resources/subscribe"), rec.gets(); sub == "" || sub == getOn || len(gets) != 1 {
				t.Errorf("subscribed on %q, GET streams on %v: want the update heard on the one stream, which another instance holds", sub, gets)
			}

			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			spread := f.spread(t)
			if len(spread) != 1 {
				t.Fatalf("nginx saw %d sessions, want 1: %v", len(spread), spread)
			}
			for sid, served := range spread {
				t.Logf("session %s: requests per instance %v", sid, served)
				for name, in := range f.instances { // DELETEd through one: ended on all
					if status, _, body := rawPost(ctx, t, "http://"+in.addr+"/mcp", sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); status != http.StatusNotFound {
						t.Errorf("instance %s, after the DELETE: %d %s; want 404, the session has ended", name, status, body)
					}
				}
			}
		})
	}
}
