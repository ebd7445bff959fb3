package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestInterop_TypeScriptSDKClientOverStdio runs interop/ts: the official MCP TypeScript SDK
// client (1.32.2, the initialize generation, DIGEST B1/B3) launches this server as a
// subprocess and exercises the whole fixture over stdio (DIGEST A12). It is skipped when node
// or npm is not installed, and with -short.
func TestInterop_TypeScriptSDKClientOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the TypeScript interop run builds a binary and starts node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "interop", "ts"))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	run := func(name string, cmd *exec.Cmd) {
		t.Helper()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		t.Logf("%s:\n%s", name, out)
	}

	bin := filepath.Join(t.TempDir(), "everything")
	run("go build", exec.CommandContext(ctx, "go", "build", "-o", bin, "."))

	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		run("npm ci", cmd)
	}

	cmd := exec.CommandContext(ctx, node, "--test")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RELAY_EVERYTHING_BIN="+bin)
	cmd.WaitDelay = 10 * time.Second
	run("node --test", cmd)
}
