package gateway_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/relayrt/relay/gateway"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// A reload adds an upstream and later removes one, mid-session: the hosts connected (an
// initialize-generation session over HTTP, a 2026-07-28 client in memory) hear
// list_changed and stay connected, the upstream left alone keeps serving, and a call to a
// removed upstream's tool is refused as an unknown tool.
func TestGateway_ReloadAddsAndRemovesAnUpstreamMidSession(t *testing.T) {
	echo := entry("echo", echoBin(t), "")
	everything := entry("everything", everythingBin(t), `"relay": {"prefix": "ev"}`)
	f := startGateway(t, config(echo))
	legacy := connect(t, client.HTTP(serveHTTP(t, f.g.Server())), client.WithVersion(mcp.Version20251125))
	modern := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	reload := func(cfg []byte) {
		t.Helper()
		c, err := gateway.ParseConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.g.Reload(c); err != nil {
			t.Fatal(err)
		}
	}

	reload(config(echo, everything))
	for _, c := range []*client.Client{legacy, modern} {
		waitForTools(t, c, "everything's tools join the list", func(names []string) bool {
			return slices.Contains(names, "ev__test_simple_text") && slices.Contains(names, "echo__echo")
		})
		if r, err := c.CallTool(context.Background(), "ev__test_simple_text", nil); err != nil || r.IsError {
			t.Errorf("the added upstream: %v", err)
		}
	}

	reload(config(everything))
	for _, c := range []*client.Client{legacy, modern} {
		waitForTools(t, c, "echo's tools leave the list", func(names []string) bool {
			return !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "echo__") }) &&
				slices.Contains(names, "ev__test_simple_text")
		})
		if _, err := c.CallTool(context.Background(), "echo__echo", map[string]string{"text": "x"}); err == nil {
			t.Error("a removed upstream's tool was still called")
		}
		if r, err := c.CallTool(context.Background(), "ev__test_simple_text", nil); err != nil || r.IsError {
			t.Errorf("the upstream left alone, after the reload: %v", err)
		}
	}
	if st := f.g.Status(); len(st) != 1 || st[0].Name != "everything" {
		t.Errorf("status after removing echo: %+v", st)
	}
	if err := f.g.Reload(&gateway.Config{}); err == nil {
		t.Error("a configuration with no server was taken")
	}
}

// `relay gateway` reloads its FILE when it changes: the host, connected over stdio, hears
// list_changed and gets the new server's tools without a new connection.
func TestRelayGateway_ReloadsAChangedConfigFile(t *testing.T) {
	path := writeConfig(t, config(entry("echo", echoBin(t), "")))
	c := connect(t, client.Command(relayBin(t), "gateway", "--config", path, "--quiet-child", "--reload-check", "50ms"))
	if names := toolNames(t, c); !slices.Contains(names, "echo__echo") {
		t.Fatalf("before: %v", names)
	}
	if err := os.WriteFile(path, config(entry("echo", echoBin(t), ""), entry("everything", everythingBin(t), `"relay": {"prefix": "ev"}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	waitForTools(t, c, "the new server's tools join the list", func(names []string) bool {
		return slices.Contains(names, "ev__test_simple_text") && slices.Contains(names, "echo__echo")
	})
	if r, err := c.CallTool(context.Background(), "echo__echo", map[string]string{"text": "still here"}); err != nil || text(r) != "still here" {
		t.Errorf("after the reload: %q %v", text(r), err)
	}
}
