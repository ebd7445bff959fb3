package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/conformance"
)

// conformanceGateway is a gateway whose one upstream is examples/everything with
// "prefix": "" (its names exposed as they are, so that the suite finds its fixture),
// served over Streamable HTTP on 127.0.0.1.
func conformanceGateway(t *testing.T) string {
	f := startGateway(t, config(entry("everything", everythingBin(t), `"relay": {"prefix": ""}`)))
	return serveHTTP(t, f.g.Server())
}

// TestConformance_ActiveSuiteThroughTheGateway runs the official suite's 0.1 line (an
// initialize-generation client: 2025-11-25) through the gateway: every scenario must pass,
// sampling and elicitation among them (asked of the host through its request).
func TestConformance_ActiveSuiteThroughTheGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	suite := conformance.Prepare(ctx, t)
	suite.Run(ctx, t, conformanceGateway(t), `relay gateway over examples/everything ("prefix": "")`)
}

// TestConformance_RequirementsThroughTheGateway runs the 0.2 line with --requirements
// 2025-11-25 and 2026-07-28 through the gateway: every scenario a revision scores must pass,
// and under 2026-07-28 the tasks extension's too (tasks-*, run unscored): tasks follow their
// id to the upstream that runs them.
func TestConformance_RequirementsThroughTheGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	suite := conformance.Prepare(ctx, t)
	url := conformanceGateway(t)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			what := `relay gateway over examples/everything ("prefix": "")`
			rep := suite.RunRequirements(ctx, t, url, rev, what)
			if rev == "2026-07-28" {
				rep.Require(t, "tasks-", what)
			}
		})
	}
}
