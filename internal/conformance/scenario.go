package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check is one check of a scenario, as the suite's checks.json records it.
type Check struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, SKIPPED, INFO
	ErrorMessage string `json:"errorMessage"`
}

// RunScenario runs one server scenario of the suite's 0.2 line, by name, against the
// Streamable HTTP endpoint url, and returns every check it recorded, whatever its status: for
// a test that must tell a check that passed from one that was skipped, which a run's summary
// counts alike. It fails t when the scenario recorded no check.
func (s *Suite) RunScenario(ctx context.Context, t testing.TB, url, scenario string) []Check {
	t.Helper()
	outDir := t.TempDir()
	out, err := s.command(ctx, "conformance-0.2", "server", "--url", url, "--scenario", scenario, "-o", outDir).CombinedOutput()
	files, _ := filepath.Glob(filepath.Join(outDir, "server-"+scenario+"-*", "checks.json"))
	var checks []Check
	for _, f := range files {
		at := strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "server-"+scenario+"-")
		if !runTime.MatchString(at) { // another scenario whose name begins with this one's
			continue
		}
		raw, rerr := os.ReadFile(f)
		if rerr != nil {
			continue
		}
		var got []Check
		json.Unmarshal(raw, &got)
		checks = append(checks, got...)
	}
	if len(checks) == 0 {
		t.Fatalf("the 0.2 suite's scenario %s recorded no check against %s: %v\n%s", scenario, url, err, out)
	}
	return checks
}
