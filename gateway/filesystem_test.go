package gateway_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp/client"
)

// filesystemServer returns the node and the script of the official
// @modelcontextprotocol/server-filesystem (pinned in interop/legacy-server), installing it
// with npm ci when needed; it skips the test without Node.js or npm.
func filesystemServer(t *testing.T) (node, script string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: server-filesystem runs on Node.js")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipping: node is not installed (server-filesystem is a TypeScript server)")
	}
	dir, err := filepath.Abs(filepath.Join("..", "interop", "legacy-server"))
	if err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Skip("skipping: npm is not installed, and interop/legacy-server has no node_modules")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return node, script
}

// Three servers behind one: Relay's examples/echo and examples/everything (2026-07-28) and
// the official server-filesystem from npm (initialize generation only), its tools allowed
// to read only. Both generations of host, in memory and over HTTP, list the three merged
// and reach each.
func TestGateway_ThreeServersWithTheOfficialFilesystemServer(t *testing.T) {
	node, script := filesystemServer(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the filesystem server"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, _ = filepath.EvalSymlinks(root)
	f := startGateway(t, config(
		entry("echo", echoBin(t), ""),
		entry("everything", everythingBin(t), `"relay": {"prefix": "ev"}`),
		entry("files", node, `"args": [`+quoteJSON(script)+`, `+quoteJSON(root)+`], "relay": {"tools": {"allow": ["read_*", "list_*"]}}`),
	))
	eachClient(t, f, func(t *testing.T, c *client.Client) {
		names := toolNames(t, c)
		for _, want := range []string{"echo__echo", "ev__test_simple_text", "files__read_text_file", "files__list_directory"} {
			if !slices.Contains(names, want) {
				t.Errorf("tools/list lacks %s: %v", want, names)
			}
		}
		if slices.Contains(names, "files__write_file") || slices.Contains(names, "files__move_file") {
			t.Errorf("allow read_*, list_* let a writing tool through: %v", names)
		}
		ctx := context.Background()
		r, err := c.CallTool(ctx, "files__list_directory", map[string]string{"path": root})
		if err != nil || !strings.Contains(text(r), "hello.txt") {
			t.Errorf("files__list_directory: %q %v", text(r), err)
		}
		r, err = c.CallTool(ctx, "files__read_text_file", map[string]string{"path": filepath.Join(root, "hello.txt")})
		if err != nil || !strings.Contains(text(r), "hello from the filesystem server") {
			t.Errorf("files__read_text_file: %q %v", text(r), err)
		}
		if r, err = c.CallTool(ctx, "echo__echo", map[string]string{"text": "and echo"}); err != nil || text(r) != "and echo" {
			t.Errorf("echo__echo beside it: %q %v", text(r), err)
		}
	})
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
