package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/hosttest"
)

// TestInterop_TypeScriptSDKClient runs interop/ts: the official MCP TypeScript SDK
// client (1.32.2, the initialize generation, DIGEST B1/B3) launches this server as a
// subprocess and exercises the whole fixture over stdio (DIGEST A12). It is skipped when node
// or npm is not installed, and with -short.
func TestInterop_TypeScriptSDKClient(t *testing.T) {
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

	bin := hosttest.Exe(filepath.Join(t.TempDir(), "everything"))
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
	run("node --test (stdio)", cmd)

	// The same client tests over Streamable HTTP (DIGEST B2): StreamableHTTPClientTransport
	// with an initialize-generation session, server-to-client requests on the POST's SSE
	// stream, resource updates on the session's GET stream.
	addr := freeAddr(t)
	// -poll-after: a call longer than 100 ms has its stream closed early, primed, and the SDK
	// resumes it with Last-Event-ID (MCP 2025-11-25, SSE polling); every test below runs so.
	server := exec.CommandContext(ctx, bin, "-http", addr, "-watch", "100ms", "-poll-after", "100ms")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := server.Process.Signal(syscall.SIGTERM); err != nil { // Windows cannot send it: kill
			server.Process.Kill()
			server.Wait()
			return
		}
		if err := server.Wait(); err != nil {
			t.Errorf("the HTTP server did not shut down cleanly: %v", err)
		}
	}()
	waitListening(t, addr)
	cmd = exec.CommandContext(ctx, node, "--test")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RELAY_EVERYTHING_URL=http://"+addr+"/mcp", "RELAY_POLL_AFTER=100ms")
	cmd.WaitDelay = 10 * time.Second
	run("node --test (Streamable HTTP)", cmd)
}

func waitListening(t *testing.T, addr string) {
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}
