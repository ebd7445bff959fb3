package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Scenario is one scenario of a run, as the suite's summary shows it.
type Scenario struct {
	Name           string
	Passed, Failed int    // checks
	Scored         bool   // false for the extension and pending scenarios a revision also runs
	Reason         string // why it is not scored: "extension", "pending"
}

// Report is what a run of a requirement set found.
type Report struct {
	Revision  string
	Scenarios []Scenario
	// Passed and Failed are the checks of the whole run (the suite's "Total:" line), the
	// scenarios that are not scored included.
	Passed, Failed int

	dir string // where the suite wrote each scenario's checks
}

// Require fails t for every scenario of the run whose name begins with prefix that has a
// failed check, scored by the suite or not, with its failed checks; and when no such scenario
// ran at all. It scores what the suite runs only for visibility (an extension's scenarios,
// say) once the server under test passes them. what names the server in messages.
func (r *Report) Require(t testing.TB, prefix, what string) {
	t.Helper()
	ran := 0
	for _, sc := range r.Scenarios {
		if !strings.HasPrefix(sc.Name, prefix) {
			continue
		}
		ran++
		if sc.Failed == 0 {
			continue
		}
		var b strings.Builder
		for _, c := range failedChecks(r.dir, sc.Name) {
			fmt.Fprintf(&b, "\n  %s: %s", c.id, c.message)
		}
		t.Errorf("%s against %s: %d of %d checks failed (required, though the suite does not score it):%s",
			sc.Name, what, sc.Failed, sc.Passed+sc.Failed, b.String())
	}
	if ran == 0 {
		t.Errorf("no %s* scenario ran against %s (--requirements %s); the suite no longer runs them?", prefix, what, r.Revision)
	}
}

// ScoredFailures returns the scored scenarios with a failed check.
func (r *Report) ScoredFailures() []Scenario {
	var out []Scenario
	for _, s := range r.Scenarios {
		if s.Scored && s.Failed > 0 {
			out = append(out, s)
		}
	}
	return out
}

// Unscored returns the scenarios the revision runs without scoring them.
func (r *Report) Unscored() []Scenario {
	var out []Scenario
	for _, s := range r.Scenarios {
		if !s.Scored {
			out = append(out, s)
		}
	}
	return out
}

var (
	summaryLine  = regexp.MustCompile(`(?m)^[✓✗] ([a-z0-9-]+): ([0-9]+) passed, ([0-9]+) failed$`)
	unscoredLine = regexp.MustCompile(`(?m)^  [✓✗] ([a-z0-9-]+) \(([^)]*)\)$`)
	totalLine    = regexp.MustCompile(`(?m)^Total: ([0-9]+) passed, ([0-9]+) failed$`)
	runTime      = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T`)
)

// KnownGap is a failed check that a run tolerates: a gap of Relay's that is known, written
// down with its reason, and checked to still be there. The check must fail with a message
// that contains Says: failing for another reason is not the known gap.
type KnownGap struct {
	Scenario, Check, Says string
	Why                   string
}

// RunRequirements runs the suite's 0.2 line (conformance-0.2 in interop/conformance) with
// --requirements revision ("2026-07-28", "2025-11-25") against the Streamable HTTP endpoint
// url: every scenario the revision requires, frozen at its release, and the extension and
// pending scenarios it runs without scoring. It logs the summary and the unscored scenarios
// by name, and fails t when a scored scenario has a failed check, with that scenario's failed
// checks, unless the check is one of known; it fails t too when a known gap did not show, so
// that the entry goes once the gap is closed. what names the server in messages.
func (s *Suite) RunRequirements(ctx context.Context, t testing.TB, url, revision, what string, known ...KnownGap) *Report {
	t.Helper()
	outDir := t.TempDir()
	cmd := s.command(ctx, "conformance-0.2",
		"server", "--url", url, "--requirements", revision, "-o", outDir)
	out, err := cmd.CombinedOutput()
	text := string(out)
	summary := text
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	rep := parseReport(revision, summary)
	rep.dir = outDir
	if len(rep.Scenarios) == 0 {
		t.Fatalf("the 0.2 suite (--requirements %s) against %s gave no summary: %v\n%s", revision, what, err, text)
	}
	t.Logf("0.2 suite, --requirements %s, against %s:\n%s", revision, what, summary)
	var unscored []string
	for _, sc := range rep.Unscored() {
		state := "passed"
		if sc.Failed > 0 {
			state = fmt.Sprintf("%d of %d checks failed", sc.Failed, sc.Passed+sc.Failed)
		}
		unscored = append(unscored, fmt.Sprintf("%s (%s): %s", sc.Name, sc.Reason, state))
	}
	if len(unscored) > 0 {
		t.Logf("not scored for %s:\n  %s", revision, strings.Join(unscored, "\n  "))
	}
	seen := make([]bool, len(known))
	var b strings.Builder
	nFailed := 0
	for _, sc := range rep.ScoredFailures() {
		var unknown []string
		checks := failedChecks(outDir, sc.Name)
		for _, c := range checks {
			gap := slices.IndexFunc(known, func(k KnownGap) bool {
				return k.Scenario == sc.Name && k.Check == c.id && strings.Contains(c.message, k.Says)
			})
			if gap >= 0 {
				seen[gap] = true
				t.Logf("known gap, %s %s: %s (%s)", sc.Name, c.id, c.message, known[gap].Why)
				continue
			}
			unknown = append(unknown, c.id+": "+c.message)
		}
		if len(unknown) == 0 && len(checks) == sc.Failed { // every failed check is a known gap
			continue
		}
		nFailed++
		fmt.Fprintf(&b, "%s: %d of %d checks failed\n", sc.Name, sc.Failed, sc.Passed+sc.Failed)
		for _, c := range unknown {
			fmt.Fprintf(&b, "  %s\n", c)
		}
	}
	for i, k := range known {
		if !seen[i] {
			t.Errorf("the known gap %s %s (%s) did not show against %s: remove it from the list",
				k.Scenario, k.Check, k.Why, what)
		}
	}
	if nFailed > 0 {
		t.Errorf("the 0.2 suite (--requirements %s) against %s: %d scored scenarios failed:\n%s",
			revision, what, nFailed, b.String())
	} else if err != nil && len(rep.ScoredFailures()) == 0 {
		// The suite exits 1 only for failed scored scenarios: anything else is its own trouble.
		t.Errorf("the 0.2 suite (--requirements %s) against %s exited with %v and no failed scored scenario:\n%s",
			revision, what, err, text)
	}
	return rep
}

// parseReport reads the summary of a --requirements run.
func parseReport(revision, summary string) *Report {
	rep := &Report{Revision: revision}
	reasons := map[string]string{}
	for _, m := range unscoredLine.FindAllStringSubmatch(summary, -1) {
		reasons[m[1]] = m[2]
	}
	for _, m := range summaryLine.FindAllStringSubmatch(summary, -1) {
		passed, _ := strconv.Atoi(m[2])
		failed, _ := strconv.Atoi(m[3])
		reason, unscored := reasons[m[1]]
		rep.Scenarios = append(rep.Scenarios, Scenario{Name: m[1], Passed: passed, Failed: failed,
			Scored: !unscored, Reason: reason})
	}
	if m := totalLine.FindStringSubmatch(summary); m != nil {
		rep.Passed, _ = strconv.Atoi(m[1])
		rep.Failed, _ = strconv.Atoi(m[2])
	}
	return rep
}

type check struct{ id, message string }

// failedChecks returns the failed checks of scenario, from the checks.json the suite wrote
// under dir.
func failedChecks(dir, scenario string) []check {
	files, _ := filepath.Glob(filepath.Join(dir, "server-"+scenario+"-*", "checks.json"))
	var out []check
	for _, f := range files {
		// server-<scenario>-<time>: another scenario's name may begin with this one's.
		at := strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "server-"+scenario+"-")
		if !runTime.MatchString(at) {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var checks []struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			ErrorMessage string `json:"errorMessage"`
		}
		json.Unmarshal(raw, &checks)
		for _, c := range checks {
			if c.Status == "FAILURE" {
				out = append(out, check{c.ID, c.ErrorMessage})
			}
		}
	}
	return out
}
