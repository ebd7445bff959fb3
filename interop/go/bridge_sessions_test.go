package interop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestB2_BridgeSessionsAreIsolated runs two clients of the official TypeScript SDK
// (interop/ts/bridge_sessions.mjs, initialize generation over Streamable HTTP) through
// `relay bridge --spares 1 -- server-everything` (the reference server, of that generation
// only): each HTTP session gets a server process of its own, initialized with its client's
// own initialize (MCP 2025-11-25, Transports › Session Management). One client's log level,
// resource subscription and toggles of simulated logging and updates never reach or affect
// the other, and each client's declared capabilities reach its own server (server-everything
// offers trigger-sampling-request only to a client that declared sampling, and that
// client's sampling handler answers it through the bridge).
func TestB2_BridgeSessionsAreIsolated(t *testing.T) {
	server := legacyServer(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipping: node is not installed")
	}
	dir, err := filepath.Abs(filepath.Join(repoRoot(), "interop", "ts"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Skip("skipping: npm is not installed, and interop/ts has no node_modules")
		}
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	url := startBridgeFlags(t, []string{"--pool", "1", "--spares", "1"}, server...)
	cmd := exec.CommandContext(ctx, node, "--test", "bridge_sessions.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RELAY_BRIDGE_URL="+url)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test bridge_sessions.mjs: %v\n%s", err, out)
	}
	t.Logf("node --test bridge_sessions.mjs:\n%s", out)
}
