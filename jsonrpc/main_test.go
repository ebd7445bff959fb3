package jsonrpc_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test of the package leaves a goroutine running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
