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
	addr := startHTTP(ctx, t)
	suite.Run(ctx, t, "http://"+addr+"/mcp", "examples/everything -http")
}

// TestConformance_RequirementsOverHTTP runs the official suite's 0.2 line
// (@modelcontextprotocol/conformance 0.2.0-alpha.12, the npm alias conformance-0.2 in
// interop/conformance) against this server on Streamable HTTP, once per requirement set:
// --requirements 2026-07-28 (the stateless revision: per-request _meta, server/discover,
// input_required results, subscriptions/listen, mirrored headers) and --requirements
// 2025-11-25 (the initialize generation). Every scenario a revision scores must pass, and so
// must the tasks extension's (tasks-*, io.modelcontextprotocol/tasks), which 2026-07-28 runs
// without scoring. The pending scenarios a revision also runs are listed by name with their
// results; the test does not fail on them.
func TestConformance_RequirementsOverHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	suite := conformance.Prepare(ctx, t)
	addr := startHTTP(ctx, t)
	for _, rev := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(rev, func(t *testing.T) {
			rep := suite.RunRequirements(ctx, t, "http://"+addr+"/mcp", rev, "examples/everything -http", knownGaps[rev]...)
			if rev == "2026-07-28" {
				rep.Require(t, "tasks-", "examples/everything -http")
			}
		})
	}
}

// knownGaps are the scored checks that fail for a reason the fixture cannot remove, by
// revision. The run fails if one of them passes: then it goes.
var knownGaps = map[string][]conformance.KnownGap{}

// startHTTP builds this server, serves it with -http on a free port until the test ends (then
// stops it with SIGTERM and expects a clean exit), and returns its address.
func startHTTP(ctx context.Context, t *testing.T) string {
	t.Helper()
	bin := hosttest.Exe(filepath.Join(t.TempDir(), "everything"))
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	// -poll-after: a call longer than 100 ms has its stream closed early and resumed (SSE
	// polling), as the 0.2 suite's server-sse-polling scenario asks; every scenario runs so.
	server := exec.Command(bin, "-http", addr, "-poll-after", "100ms") // stopped by the cleanup, after the test's context ends
	stderr, _ := server.StderrPipe()
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := server.Process.Signal(syscall.SIGTERM); err != nil { // Windows cannot send it: kill
			server.Process.Kill()
			server.Wait()
			return
		}
		if err := server.Wait(); err != nil {
			t.Errorf("the server did not shut down cleanly on SIGTERM: %v", err)
		}
	})
	ready := bufio.NewScanner(stderr)
	if !ready.Scan() || !strings.Contains(ready.Text(), "serving MCP") {
		t.Fatalf("the server did not start: %q", ready.Text())
	}
	go func() { // keep draining the server's log so it never blocks
		for ready.Scan() {
		}
	}()
	return addr
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr())
}
