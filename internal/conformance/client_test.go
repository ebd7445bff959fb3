package conformance

import "testing"

func TestParseClientReportReadsNamesWithUnderscoresSlashesAndWarnings(t *testing.T) {
	summary := "=== SUITE SUMMARY ===\n\n" +
		"✓ tools_call: 2 passed, 0 failed\n" +
		"✗ request-metadata: 4 passed, 0 failed, 1 warnings\n" +
		"✗ auth/metadata-default: 0 passed, 7 failed\n" +
		"✗ auth/dpop: 0 passed, 3 failed\n\n" +
		"Total: 6 passed, 10 failed, 1 warnings\n\n" +
		"Not scored for 2026-07-28: 1 scenario(s) run, 1 failing. These do not affect conformance.\n" +
		"  ✗ auth/dpop (extension)\n"
	rep := parseClientReport("2026-07-28", summary)
	want := []ClientScenario{
		{Name: "tools_call", Passed: 2, Scored: true},
		{Name: "request-metadata", Passed: 4, Warnings: 1, Scored: true},
		{Name: "auth/metadata-default", Failed: 7, Scored: true},
		{Name: "auth/dpop", Failed: 3, Reason: "extension"},
	}
	if len(rep.Scenarios) != len(want) {
		t.Fatalf("scenarios %+v", rep.Scenarios)
	}
	for i, w := range want {
		if rep.Scenarios[i] != w {
			t.Errorf("scenario %d: %+v, want %+v", i, rep.Scenarios[i], w)
		}
	}
	if rep.Passed != 6 || rep.Failed != 10 {
		t.Errorf("total %d passed %d failed", rep.Passed, rep.Failed)
	}
	if !rep.Scenarios[2].Authorization() || rep.Scenarios[0].Authorization() {
		t.Error("Authorization")
	}
}
