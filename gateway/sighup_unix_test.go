//go:build unix

package gateway_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// `relay gateway --listen` reloads its FILE on SIGHUP (--reload-check 0: no polling): an
// initialize-generation session open across the reload hears list_changed, gets the added
// server's tools, and keeps its own session.
func TestRelayGateway_SIGHUPReloads(t *testing.T) {
	path := writeConfig(t, config(entry("echo", echoBin(t), "")))
	cmd := exec.Command(relayBin(t), "gateway", "--config", path, "--listen", "127.0.0.1:0", "--quiet-child", "--reload-check", "0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var url string
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "serving MCP on "); ok {
			url = strings.Fields(rest)[0]
			break
		}
	}
	drained := make(chan struct{})
	go func() { // reads the rest of stderr until relay exits
		defer close(drained)
		for lines.Scan() {
		}
	}()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-drained
		cmd.Wait()
	}()
	if url == "" {
		t.Fatal("relay gateway never said where it serves")
	}
	c := connect(t, client.HTTP(url), client.WithVersion(mcp.Version20251125))
	if names := toolNames(t, c); !slices.Contains(names, "echo__echo") {
		t.Fatalf("before: %v", names)
	}
	if err := os.WriteFile(path, config(entry("echo", echoBin(t), ""), entry("everything", everythingBin(t), `"relay": {"prefix": "ev"}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitForTools(t, c, "the reload on SIGHUP adds everything's tools", func(names []string) bool {
		return slices.Contains(names, "ev__test_simple_text") && slices.Contains(names, "echo__echo")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := c.CallTool(ctx, "ev__test_simple_text", nil); err != nil || r.IsError {
		t.Errorf("the added server, in the same session: %v", err)
	}
}
