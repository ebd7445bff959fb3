package supervise

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// tcPortableEnv runs the tests with the Linux-only extras switched off (see portable).
const tcPortableEnv = "SUPERVISE_TEST_PORTABLE"

// TestMain lets the binary be a child's guard (GuardMain), or a test child when asked,
// before goleak or flags are involved; otherwise it runs the tests and checks that none
// left a goroutine running.
func TestMain(m *testing.M) {
	if os.Getenv(tcPortableEnv) != "" {
		portable = true // first: a guard started from this binary must take the portable path too
	}
	GuardMain()
	runTestChildIfAsked()
	goleak.VerifyTestMain(m)
}
