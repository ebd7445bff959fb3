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

// TestRequirementsThroughTheBridge runs the official suite's 0.2 line (conformance-0.2 in
// interop/conformance) through `relay bridge --pool 2 -- examples/everything`, once per
// requirement set: --requirements 2025-11-25 (an initialize-generation client in front of
// 2026-07-28 children) and --requirements 2026-07-28 (forwarded as is). Every scenario a
// revision scores must pass, and under 2026-07-28 the tasks extension's too (tasks-*, which
// the suite runs without scoring): tasks follow their id to the child that runs them.
func TestRequirementsThroughTheBridge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	suite := conformance.Prepare(ctx, t)
	relay := startRelay(t, []string{"--pool", "2"}, everythingBin(t))
	waitChildren(t, relay.pid(), 2, 30*time.Second)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			rep := suite.RunRequirements(ctx, t, relay.url, rev, "relay bridge --pool 2 -- examples/everything")
			if rev == "2026-07-28" {
				rep.Require(t, "tasks-", "relay bridge --pool 2 -- examples/everything")
			}
		})
	}
}
