package bridge_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/proc"
)

// ---- the bridge's children, seen through /proc ----

// waitChildren waits until pid has exactly n live children and returns them.
func waitChildren(t *testing.T, pid, n int, within time.Duration) []proc.Stat {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		kids := proc.Supervised(pid)
		if len(kids) == n {
			return kids
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d has %d children after %v, want %d: %+v", pid, len(kids), within, n, kids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether the process p still runs (a zombie or another process on a reused
// pid does not count).
func alive(p proc.Stat) bool {
	now, ok := proc.Read(p.PID)
	return ok && now.Start == p.Start && now.Alive()
}

// ioCounters are a process's /proc/<pid>/io read and write counts: a child's reads are the
// requests it took from its stdin, its writes the answers it wrote to its stdout.
type ioCounters struct{ rchar, wchar, syscr, syscw int64 }

func readIO(t *testing.T, pid int) ioCounters {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatalf("reading the I/O counters of child %d: %v", pid, err)
	}
	var c ioCounters
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "rchar":
			c.rchar = n
		case "wchar":
			c.wchar = n
		case "syscr":
			c.syscr = n
		case "syscw":
			c.syscw = n
		}
	}
	return c
}
