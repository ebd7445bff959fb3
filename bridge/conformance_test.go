//go:build linux

package bridge_test

// Linux only: the test waits for the bridge's children through /proc (children_linux_test.go).

import (
	"context"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/conformance"
)

// TestB3_OfficialConformanceSuiteThroughTheBridge runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in interop/conformance with the Node.js 22 it
// needs) against `relay bridge --pool 2 -- examples/everything`: an initialize-generation
// HTTP client (B2) in front of 2026-07-28 stdio children (B3: the bridge answers
// initialize, adds the modern _meta to each request and turns input_required into
// server-to-client requests). Every scenario of the active suite must pass, as it does
// against examples/everything served directly.
func TestB3_OfficialConformanceSuiteThroughTheBridge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	suite := conformance.Prepare(ctx, t)
	relay := startRelay(t, []string{"--pool", "2"}, everythingBin(t))
	if kids := waitChildren(t, relay.pid(), 2, 30*time.Second); len(kids) != 2 {
		t.Fatalf("children: %+v", kids)
	}
	suite.Run(ctx, t, relay.url, "relay bridge --pool 2 -- examples/everything")
}
