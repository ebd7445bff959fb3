package conformance

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// ClientScenario is one client scenario of a run, as the suite's summary shows it.
type ClientScenario struct {
	Name                     string
	Passed, Failed, Warnings int    // checks
	Scored                   bool   // false for the extension scenarios a revision also runs
	Reason                   string // why it is not scored: "extension", "added-after-release"
}

// Authorization reports whether the scenario is one of the authorization scenarios
// (auth/...), which test a client's OAuth flows rather than MCP itself.
func (s ClientScenario) Authorization() bool { return strings.HasPrefix(s.Name, "auth/") }

// ClientReport is what a run of the client scenarios found.
type ClientReport struct {
	Revision  string
	Scenarios []ClientScenario
	// Passed and Failed are the checks of the whole run (the suite's "Total:" line).
	Passed, Failed int
	Output         string // everything the suite printed
}

// Scenario returns the scenario named name, and whether it ran.
func (r *ClientReport) Scenario(name string) (ClientScenario, bool) {
	for _, s := range r.Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return ClientScenario{}, false
}

var (
	// Client scenarios have names with "_" (tools_call) and "/" (auth/...), and a line may
	// end with a count of warnings.
	clientLine     = regexp.MustCompile(`(?m)^[✓✗] ([A-Za-z0-9_/.-]+): ([0-9]+) passed, ([0-9]+) failed(?:, ([0-9]+) warnings)?$`)
	clientUnscored = regexp.MustCompile(`(?m)^  [✓✗] ([A-Za-z0-9_/.-]+) \(([^)]*)\)$`)
	clientTotal    = regexp.MustCompile(`(?m)^Total: ([0-9]+) passed, ([0-9]+) failed`)
)

// RunClient runs the suite's 0.2 line with `client --command command --requirements
// revision`: every client scenario the revision requires (the authorization ones
// included), each with a scenario server whose URL the suite appends to command. It logs
// the summary and returns what each scenario found; judging it is the caller's. It fails t
// only when the run gave no summary at all.
func (s *Suite) RunClient(ctx context.Context, t testing.TB, command, revision string) *ClientReport {
	t.Helper()
	cmd := s.command(ctx, "conformance-0.2", "client", "--command", command, "--requirements", revision)
	out, err := cmd.CombinedOutput()
	text := string(out)
	summary := text
	if i := strings.Index(summary, "=== SUITE SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	rep := parseClientReport(revision, summary)
	rep.Output = text
	if len(rep.Scenarios) == 0 {
		t.Fatalf("the 0.2 suite (client --requirements %s) gave no summary: %v\n%s", revision, err, text)
	}
	t.Logf("0.2 suite, client --requirements %s:\n%s", revision, summary)
	return rep
}

func parseClientReport(revision, summary string) *ClientReport {
	rep := &ClientReport{Revision: revision}
	reasons := map[string]string{}
	for _, m := range clientUnscored.FindAllStringSubmatch(summary, -1) {
		reasons[m[1]] = m[2]
	}
	for _, m := range clientLine.FindAllStringSubmatch(summary, -1) {
		passed, _ := strconv.Atoi(m[2])
		failed, _ := strconv.Atoi(m[3])
		warnings, _ := strconv.Atoi(m[4])
		reason, unscored := reasons[m[1]]
		rep.Scenarios = append(rep.Scenarios, ClientScenario{Name: m[1], Passed: passed, Failed: failed,
			Warnings: warnings, Scored: !unscored, Reason: reason})
	}
	if m := clientTotal.FindStringSubmatch(summary); m != nil {
		rep.Passed, _ = strconv.Atoi(m[1])
		rep.Failed, _ = strconv.Atoi(m[2])
	}
	return rep
}
