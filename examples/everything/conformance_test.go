package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/conformance"
	"github.com/relayrt/relay/internal/hosttest"
)

// TestConformance_OfficialSuiteOverHTTP runs the official MCP conformance suite
// (@modelcontextprotocol/conformance 0.1.16, pinned in interop/conformance with the Node.js
// 22 it needs) against this server on Streamable HTTP: every scenario of the active suite
// must pass. The suite speaks the initialize generation with sessions (DIGEST B2), so this is
// the legacy HTTP path end to end, from the handshake to DNS-rebinding protection (A13).
func TestConformance_OfficialSuiteOverHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	suite := conformance.Prepare(ctx, t)

	bin := hosttest.Exe(filepath.Join(t.TempDir(), "everything"))
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
		if err := server.Process.Signal(syscall.SIGTERM); err != nil { // Windows cannot send it: kill
			server.Process.Kill()
			server.Wait()
			return
		}
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

	suite.Run(ctx, t, "http://"+addr+"/mcp", "examples/everything -http")
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr())
}
