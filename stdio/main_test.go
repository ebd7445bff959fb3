package stdio

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test of the package leaves a goroutine running. It is the package's
// only TestMain: tests of Serve in this package (or in stdio_test) must not declare another.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
