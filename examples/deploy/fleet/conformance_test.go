//go:build unix

package fleet

import (
	"testing"
	"time"

	"github.com/relayrt/relay/internal/conformance"
)

// TestConformance_RoundRobinFleet runs the official suite's 0.2 line, --requirements
// 2025-11-25 and --requirements 2026-07-28, through nginx round-robin (no affinity) over
// three instances sharing a real redis-server and a state key: every request of a session
// may land on another instance. Every scored scenario must pass, and the tasks extension's
// too. The instances are examples/everything (-poll-after 100ms closes long streams early,
// so resumption with Last-Event-ID, server-sse-polling, crosses instances as well), then
// relay bridge over examples/everything, whose children keep their tasks in the fleet's
// Redis. Measured (2026-12-02): examples/everything, 2025-11-25, 33 scenarios (2 of them
// pending), 82 checks passed, 0 failed; 2026-07-28, 50 scenarios (10 of the tasks
// extension, 3 pending), 195 passed, 0 failed; 32 of the suite's 34 sessions had requests
// on more than one instance.
func TestConformance_RoundRobinFleet(t *testing.T) {
	ctx := ctxFor(t, 15*time.Minute)
	suite := conformance.Prepare(ctx, t)
	for _, fc := range []struct {
		name, what string
		p          program
	}{
		{"everything", "three examples/everything behind nginx round-robin", everything("-poll-after", "100ms")},
		{"bridge", "three relay bridge -- examples/everything behind nginx round-robin", relayBridgeOf([]string{"--pool", "2"})},
	} {
		t.Run(fc.name, func(t *testing.T) {
			f := startFleetOf(t, fc.p)
			for _, rev := range []string{"2025-11-25", "2026-07-28"} {
				t.Run(rev, func(t *testing.T) {
					rep := suite.RunRequirements(ctx, t, f.url, rev, fc.what)
					t.Logf("--requirements %s through the fleet: %d checks passed, %d failed", rev, rep.Passed, rep.Failed)
					if rev == "2026-07-28" {
						rep.Require(t, "tasks-", fc.what)
					}
				})
			}
			// The suite's sessions really were spread: a session whose requests all reached
			// one instance would not test the fleet.
			sessions, spread := f.spread(t), 0
			for _, by := range sessions {
				if len(by) > 1 {
					spread++
				}
			}
			t.Logf("%d of the suite's %d sessions had their requests served by more than one instance", spread, len(sessions))
			if spread == 0 {
				t.Errorf("no session of the suite had requests on two instances: is nginx round-robin? %v", sessions)
			}
		})
	}
}
