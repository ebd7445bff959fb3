package gateway_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestInterop_TypeScriptSDKClientOverStdio runs interop/ts/gateway.test.mjs: the official
// MCP TypeScript SDK client (1.32.2, the initialize generation) runs `relay gateway
// --config FILE` over stdio, as a host does, with examples/echo and examples/everything
// behind it: merged tools under their prefixes, calls routed, prompts, a template,
// progress, log messages, and sampling and elicitation asked of the client. Skipped
// without node or npm, and with -short.
func TestInterop_TypeScriptSDKClientOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the TypeScript interop run starts node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("..", "interop", "ts"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Skip("npm is not installed, and interop/ts has no node_modules")
		}
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	path := writeConfig(t, config(entry("echo", echoBin(t), ""), entry("everything", everythingBin(t), `"relay": {"prefix": "ev"}`)))
	cmd := exec.CommandContext(ctx, node, "--test", "gateway.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RELAY_BIN="+relayBin(t), "RELAY_GATEWAY_CONFIG="+path)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("node --test gateway.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("the TypeScript SDK client through relay gateway: %v", err)
	}
}
