//go:build unix

package e2e

// Unix only: Windows cannot send SIGTERM to another process.

import (
	"fmt"
	"syscall"
	"testing"
)

// TestSIGTERMDrainsInFlight: SIGTERM starts the same graceful drain as EOF: the 16 requests
// in flight are answered and the server exits 0 (DIGEST A12, D: a client terminates a server
// that does not exit on EOF with SIGTERM).
func TestSIGTERMDrainsInFlight(t *testing.T) {
	t.Parallel()
	c := start(t)
	const n = 16
	var lines []string
	for i := range n {
		lines = append(lines, sleepLine(fmt.Sprint(i), 200))
	}
	// The echo's answer proves the dispatcher has read and started the 16 sleeps before it.
	lines = append(lines, echoLine(`"sync"`, "sync"))
	c.send(lines...)
	c.response(`"sync"`)
	if got := len(c.snapshot()); got != 1 {
		t.Logf("%d sleeps finished before SIGTERM was sent; the drain is exercised less", got-1)
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := c.wait(); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	var sleeps []msg
	for _, m := range c.snapshot() {
		if string(m.ID) != `"sync"` {
			sleeps = append(sleeps, m)
		}
	}
	checkAllSlept(t, sleeps, n, 200)
}
