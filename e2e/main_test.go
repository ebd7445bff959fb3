package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/internal/hosttest"
)

// Paths of the examples/echo binaries built once by TestMain.
var (
	// echoBin is the server the tests drive; under -race it is built with -race as well.
	echoBin string
	// echoPlainBin is always built without -race: memory measurements need the real footprint.
	echoPlainBin string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "relay-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		echoPlainBin = hosttest.Exe(filepath.Join(dir, "echo"))
		if err := build(echoPlainBin, false); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 2
		}
		echoBin = echoPlainBin
		if raceEnabled {
			echoBin = hosttest.Exe(filepath.Join(dir, "echo-race"))
			if err := build(echoBin, true); err != nil {
				fmt.Fprintln(os.Stderr, "e2e:", err)
				return 2
			}
		}
		code := m.Run()
		if code == 0 {
			if err := goleak.Find(); err != nil {
				fmt.Fprintln(os.Stderr, "e2e: goroutines leaked by the tests:", err)
				code = 1
			}
		}
		return code
	}()
	os.Exit(code)
}

// build compiles ./examples/echo (this package's directory is e2e/, one level down).
func build(out string, race bool) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(goruntime.GOROOT(), "bin", "go")
	}
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "../examples/echo")
	cmd := exec.Command(gobin, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %v\n%s", args, err, b)
	}
	return nil
}
