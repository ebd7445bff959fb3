package interop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// The Relay binaries TestMain builds from the repository root (two levels up). Under -race
// they are built with -race too, and every test fails if a server reports a data race on
// its stderr.
var (
	echoBin  string
	relayBin string // relay (./cmd/relay), for the relay bridge tests

	// everythingBin is empty when examples/everything does not build (yet);
	// everythingErr then says why, and its tests skip.
	everythingBin string
	everythingErr error
)

func TestMain(m *testing.M) {
	if serveSDKChild() {
		return
	}
	dir, err := os.MkdirTemp("", "relay-interop-go-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		os.Exit(2)
	}
	echoBin = exe(filepath.Join(dir, "echo"))
	if err := build(echoBin, "./examples/echo"); err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "interop:", err)
		os.Exit(2)
	}
	relayBin = exe(filepath.Join(dir, "relay"))
	if err := build(relayBin, "./cmd/relay"); err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "interop:", err)
		os.Exit(2)
	}
	everythingBin, everythingErr = buildOptional(exe(filepath.Join(dir, "everything")), "examples/everything")
	if everythingErr != nil {
		fmt.Fprintf(os.Stderr, "interop: the examples/everything tests will skip: %v\n", everythingErr)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// buildOptional builds a package that may not exist yet, returning why it could not.
func buildOptional(out, dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(repoRoot(), dir)); err != nil {
		return "", fmt.Errorf("%s does not exist yet", dir)
	}
	if err := build(out, "./"+dir); err != nil {
		return "", err
	}
	return out, nil
}

func repoRoot() string { return filepath.Join("..", "..") }

// exe returns the path a built binary is given: with ".exe" on Windows, where os/exec runs no
// file without an extension (go build -o writes exactly the name it is given).
func exe(path string) string {
	if goruntime.GOOS == "windows" {
		return path + ".exe"
	}
	return path
}

// build compiles a main package of the Relay module into out, from the repository root.
func build(out, pkg string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(goruntime.GOROOT(), "bin", "go")
	}
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, pkg)
	cmd := exec.Command(gobin, args...)
	cmd.Dir = repoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), cmd.Dir, err, b)
	}
	return nil
}
