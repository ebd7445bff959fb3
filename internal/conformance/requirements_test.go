package conformance

import (
	"fmt"
	"slices"
	"strings"
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

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestReport_RequireFailsOnTheUnscoredScenariosItNames(t *testing.T) {
	rep := parseReport("2026-07-28", summary)
	rep.dir = t.TempDir()
	r := &recorder{TB: t}
	rep.Require(r, "tasks-", "the server")
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "tasks-lifecycle against the server: 8 of 9 checks failed") {
		t.Errorf("Require reported %q", r.errs)
	}
	r.errs = nil
	rep.Require(r, "sep-9999-", "the server")
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "no sep-9999-* scenario ran") {
		t.Errorf("Require of scenarios that did not run reported %q", r.errs)
	}
	r.errs = nil
	rep.Require(r, "server-", "the server")
	if len(r.errs) != 0 {
		t.Errorf("Require of passing scenarios reported %q", r.errs)
	}
}
