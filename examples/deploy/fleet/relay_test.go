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
// stdio) whose watcher changes a resource every 300 ms.
var relayBridge = relayBridgeOf([]string{"--pool", "1"}, "-watch", "300ms")

// relayBridgeOf is relay bridge with flags over examples/everything with args.
func relayBridgeOf(flags []string, args ...string) program {
	return func(t *testing.T, name, addr string, fleet ...string) []string {
		cmdline := append([]string{relayBin(t), "bridge", "--listen", addr, "--instance", name}, fleet...)
		cmdline = append(append(cmdline, flags...), "--", everythingBin(t))
		return append(cmdline, args...)
	}
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

// TestRelayFleet_ATaskIsFollowedThroughEveryInstance starts a task (2026-07-28, the tasks
// extension) through three relay gateway instances behind nginx round-robin, then three
// relay bridge instances, and polls it: its tasks/get reach every instance, and each finds
// the task, which runs in a child of the instance that started it. The instances share a
// state key, from which they sign the task ids they hand out, and hand the fleet's Redis to
// their children (examples/everything), which keep their tasks there. Without either, a
// poll that reaches another instance is told the task does not exist.
func TestRelayFleet_ATaskIsFollowedThroughEveryInstance(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      program
		prefix string // of the tools' names
	}{{"gateway", relayGateway, "everything__"}, {"bridge", relayBridgeOf([]string{"--pool", "2"}), ""}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t, 2*time.Minute)
			f := startFleetOf(t, tc.p)
			rec := &recorder{base: http.DefaultTransport.(*http.Transport).Clone()}
			t.Cleanup(rec.base.(*http.Transport).CloseIdleConnections)
			tr := client.HTTP(f.url)
			tr.Client = &http.Client{Transport: rec}
			c, err := client.Connect(ctx, tr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if !c.Modern() {
				t.Fatalf("connected with %q, want 2026-07-28", c.Version())
			}
			task, err := c.StartTool(ctx, tc.prefix+"slow_compute", map[string]any{"seconds": 1, "label": "fleet"})
			if err != nil {
				t.Fatal(err)
			}
			for polls := 0; polls < 3 || task.Status == "working"; polls++ { // one poll on each instance at least
				if err := task.Refresh(ctx); err != nil {
					t.Fatalf("tasks/get of %s, poll %d: %v", task.ID, polls+1, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			res, err := task.Wait(ctx)
			if err != nil {
				t.Fatalf("the task %s: %v", task.ID, err)
			}
			if text, _ := json.Marshal(res.Content); !strings.Contains(string(text), `Computed \"fleet\"`) {
				t.Errorf("the task's result: %s", text)
			}
			polled := map[string]int{}
			for _, h := range rec.posts() {
				if h.rpc == "tasks/get" {
					polled[h.instance]++
				}
			}
			t.Logf("tasks/get by instance: %v", polled)
			if len(polled) != len(f.instances) {
				t.Errorf("tasks/get reached %v; want every instance", polled)
			}
		})
	}
}
