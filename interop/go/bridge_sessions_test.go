package interop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// nodeTest runs `node --test file` in interop/ts (installing its packages with npm ci when
// needed) with the environment given, and fails the test if a test of file fails; it skips
// without Node.js.
func nodeTest(t *testing.T, file string, env ...string) {
	t.Helper()
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
	cmd := exec.CommandContext(ctx, node, "--test", file)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %s: %v\n%s", file, err, out)
	}
	t.Logf("node --test %s:\n%s", file, out)
}

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
	url := startBridgeFlags(t, []string{"--pool", "1", "--spares", "1"}, server...)
	nodeTest(t, "bridge_sessions.mjs", "RELAY_BRIDGE_URL="+url)
}

// TestB3_TypeScriptClientThroughTheBridgeToModernChildren runs the whole TypeScript SDK
// suite of interop/ts (everything.test.mjs, the initialize generation over Streamable HTTP)
// through `relay bridge --pool 2 -- examples/everything -watch 100ms` (2026-07-28 children):
// sampling and elicitation (input_required turned into requests on the client's stream),
// logging at the session's level, progress, cancellation, and resources/subscribe, whose
// updates reach the session's GET stream from a subscriptions/listen the bridge holds on the
// session's child.
func TestB3_TypeScriptClientThroughTheBridgeToModernChildren(t *testing.T) {
	if everythingBin == "" {
		t.Skipf("skipping: examples/everything is not available: %v", everythingErr)
	}
	url := startBridge(t, 2, everythingBin, "-watch", "100ms")
	nodeTest(t, "everything.test.mjs", "RELAY_EVERYTHING_URL="+url)
}
