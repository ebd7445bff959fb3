//go:build unix

package fleet

import (
	"context"
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
func relayGateway(t *testing.T, name, addr string) []string {
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": everythingBin(t), "args": []string{"-watch", "0"}}}})
	path := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{relayBin(t), "gateway", "--listen", addr, "--config", path, "--reload-check", "0", "--quiet-child"}
}

// TestGatewayFleet_OneSessionOnEveryInstance runs three relay gateway instances with
// --redis behind nginx round-robin, and one 2025-11-25 session of Relay's client through
// them: it lists the tools, calls one, has a question of the server's answered (asked by
// one instance, its answer POSTed wherever nginx sends it) and ends with DELETE, and nginx's
// log shows its requests served by all three. Without the shared sessions, every request
// that reaches another instance than the initialize's is refused with 404.
func TestGatewayFleet_OneSessionOnEveryInstance(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	f := startFleetOf(t, relayGateway)
	c, err := client.Connect(ctx, client.HTTP(f.url), client.WithVersion("2025-11-25"),
		client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "alice", "email": "alice@example.com"}}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Modern() {
		t.Fatalf("connected with %q, want the 2025-11-25 session", c.Version())
	}
	found := false
	for tool, err := range c.ListTools(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		found = found || tool.Name == "everything__test_simple_text"
	}
	if !found {
		t.Fatal("tools/list has no everything__test_simple_text")
	}
	for range 3 { // a call on each instance, nginx taking turns
		if res, err := c.CallTool(ctx, "everything__test_simple_text", map[string]any{}); err != nil || len(res.Content) == 0 {
			t.Fatalf("everything__test_simple_text: %+v, %v", res, err)
		}
	}
	res, err := c.CallTool(ctx, "everything__test_elicitation", map[string]any{"message": "who are you?"})
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := json.Marshal(res.Content); !strings.Contains(string(text), "action=accept") || !strings.Contains(string(text), "alice@example.com") {
		t.Fatalf("everything__test_elicitation: %s; want the accepted answer", text)
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
		if len(served) != len(f.instances) {
			t.Errorf("the session's requests reached %d instances, want all %d", len(served), len(f.instances))
		}
		for name, in := range f.instances { // DELETEd through one: ended on all
			if status, _, body := rawPost(ctx, t, "http://"+in.addr+"/mcp", sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); status != http.StatusNotFound {
				t.Errorf("instance %s, after the DELETE: %d %s; want 404, the session has ended", name, status, body)
			}
		}
	}
}
