package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// inspector returns the pinned MCP Inspector's command line, installing it with npm ci when
// needed, or skips the test when Node.js is not installed.
func inspector(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed; the Inspector check needs Node.js")
	}
	dir, err := filepath.Abs("../interop/inspector")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		// npm install, not ci: the Inspector's lock names an optional Windows-only package
		// that npm ci reports as out of sync; install keeps the locked versions.
		cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm install in interop/inspector: %v\n%s", err, out)
		}
	}
	return bin
}

func runInspector(t *testing.T, bin string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--cli", echoBin}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp-inspector %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("mcp-inspector printed no JSON: %v\n%s", err, out)
	}
	return v
}

// TestInspector_ListsAndCallsEveryTool drives examples/echo with the official MCP Inspector's
// command line, the check a server author runs by hand: list the tools, then call each one.
func TestInspector_ListsAndCallsEveryTool(t *testing.T) {
	bin := inspector(t)
	listed := runInspector(t, bin, "--method", "tools/list")
	args := map[string][]string{"echo": {"text=hello inspector"}, "sleep": {"ms=5"}}
	tools, _ := listed["tools"].([]any)
	if len(tools) != len(args) {
		t.Fatalf("listed %d tools, want %d: %v", len(tools), len(args), listed)
	}
	for _, tl := range tools {
		name := tl.(map[string]any)["name"].(string)
		call := []string{"--method", "tools/call", "--tool-name", name}
		for _, a := range args[name] {
			call = append(call, "--tool-arg", a)
		}
		res := runInspector(t, bin, call...)
		content, _ := res["content"].([]any)
		if res["isError"] == true || len(content) == 0 {
			t.Errorf("tool %s: %v", name, res)
		}
		if name == "echo" && content[0].(map[string]any)["text"] != "hello inspector" {
			t.Errorf("echo returned %v", content)
		}
	}
}
