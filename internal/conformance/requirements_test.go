package conformance

import (
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A summary of a --requirements run, as 0.2.0-alpha.12 prints it.
const summary = `=== SUMMARY ===
✓ server-stateless: 30 passed, 0 failed
✗ input-required-result-basic-elicitation: 1 passed, 1 failed
✗ tasks-lifecycle: 1 passed, 8 failed
✓ tasks-status-notifications: 0 passed, 0 failed
✗ http-custom-header-server-validation: 9 passed, 1 failed

Total: 41 passed, 10 failed

Not scored for 2026-07-28: 3 scenario(s) run, 2 failing. These do not affect conformance.
  ✗ tasks-lifecycle (extension)
  ✓ tasks-status-notifications (extension)
  ✗ http-custom-header-server-validation (pending)
`

func TestParseReport_ScoredFailuresAreThoseTheRevisionScores(t *testing.T) {
	rep := parseReport("2026-07-28", summary)
	if len(rep.Scenarios) != 5 || rep.Passed != 41 || rep.Failed != 10 {
		t.Fatalf("parsed %+v", rep)
	}
	var scored, unscored []string
	for _, s := range rep.ScoredFailures() {
		scored = append(scored, s.Name)
	}
	for _, s := range rep.Unscored() {
		unscored = append(unscored, s.Name+":"+s.Reason)
	}
	if !slices.Equal(scored, []string{"input-required-result-basic-elicitation"}) {
		t.Errorf("scored failures %v", scored)
	}
	want := []string{"tasks-lifecycle:extension", "tasks-status-notifications:extension", "http-custom-header-server-validation:pending"}
	if !slices.Equal(unscored, want) {
		t.Errorf("unscored %v, want %v", unscored, want)
	}
}
