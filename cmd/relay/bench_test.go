package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
)

// TestBench measures examples/echo for two short windows, as JSON, and against itself with
// --vs: every round answers, without errors, under the 2026-07-28 protocol it detected.
func TestBench(t *testing.T) {
	code, out, errOut := rtRunOnce(t, "bench", "--json", "--inflight", "1,8", "--duration", "150ms", "--", rtEcho)
	if code != 0 {
		t.Fatalf("relay bench exited %d:\n%s", code, errOut)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 2 {
		t.Fatalf("want one JSON row per window, got %q", out)
	}
	for _, line := range rows {
		var r benchRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if r.Requests == 0 || r.Errors != 0 || r.PerSecond <= 0 || r.Protocol != "2026-07-28" || r.P50us <= 0 {
			t.Errorf("round %+v", r)
		}
		switch goruntime.GOOS { // the OSes that tell a child's peak memory (bench/load's Result.PeakRSSKiB)
		case "linux", "windows", "darwin", "freebsd", "netbsd", "openbsd", "dragonfly":
			if r.PeakRSSKiB <= 0 {
				t.Errorf("round %+v: no peak RSS", r)
			}
		}
	}
	svg := filepath.Join(t.TempDir(), "bench.svg")
	code, out, errOut = rtRunOnce(t, "bench", "--inflight", "4", "--duration", "150ms", "--svg", svg, "--vs", rtEcho, "--", rtEcho)
	if code != 0 || !strings.Contains(out, "a/b throughput:") {
		t.Fatalf("relay bench --vs exited %d:\n%s\n%s", code, out, errOut)
	}
	raw, err := os.ReadFile(svg)
	if err != nil || xml.Unmarshal(raw, new(struct{})) != nil || strings.Count(string(raw), "<rect") < 5 {
		t.Errorf("--svg wrote no chart: %v %.300s", err, raw)
	}
	if code, out, _ := rtRunOnce(t, "bench", "framing", "--duration", "50ms"); code != 0 || !strings.Contains(out, "1 KiB") {
		t.Errorf("relay bench framing exited %d: %s", code, out)
	}
	if code, _, _ := rtRunOnce(t, "bench", "--inflight", "0", "--", rtEcho); code != 2 {
		t.Errorf("a bad --inflight exited %d, want 2", code)
	}
}
