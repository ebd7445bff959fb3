//go:build linux

package e2e

// Linux only: the server's peak memory is read, while it runs, from /proc/<pid>/status.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestHugeLineIsRefusedInBoundedMemory sends a 48 MiB line, three times the default 16 MiB
// frame limit, then a working call. The line is answered with -32600 and no id (DIGEST A11;
// A1: the id could not be read), the call works, and the server never holds the line: its
// peak resident memory grows by less than 30 MiB over what it held once warmed up, well
// under the line's 48 MiB (DIGEST A12: the server keeps reading after it). The bound is on
// the growth, not the total, so that what a server binary links (OpenTelemetry's SDK adds
// ~5 MiB at start) does not move it.
func TestHugeLineIsRefusedInBoundedMemory(t *testing.T) {
	t.Parallel()
	const (
		lineSize = 48 << 20
		chunk    = 1 << 20
		limitKiB = 30 << 10
	)
	c := start(t, echoPlainBin) // never the -race build: its shadow memory is not the server's
	c.send(echoLine(`"before"`, "warm up"))
	c.response(`"before"`)
	base, err := c.vmHWM()
	if err != nil {
		t.Fatal(err)
	}

	head := []byte(`{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"echo",` + modernMeta + `,"arguments":{"text":"`)
	tail := []byte(`"}}}` + "\n")
	c.write(head)
	filler := bytes.Repeat([]byte("0123456789abcdef"), chunk/16)
	for left := lineSize - len(head) - len(tail); left > 0; left -= chunk {
		c.write(filler[:min(chunk, left)])
	}
	c.write(tail)

	c.send(echoLine(`"after"`, "still works"))
	if got := toolText(t, c.response(`"after"`), true); got != "still works" {
		t.Errorf("call after the huge line: %q", got)
	}
	hwm, err := c.vmHWM()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server VmHWM after a %d MiB line: %d KiB (%.1f MiB), %d KiB after warming up", lineSize>>20, hwm, float64(hwm)/1024, base)
	if hwm-base >= limitKiB {
		t.Errorf("peak resident memory grew by %d KiB, want less than %d KiB (DIGEST A12: an oversized line is discarded, not held)", hwm-base, limitKiB)
	}

	c.closeStdin()
	if code := c.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	msgs := c.snapshot()
	if len(msgs) != 3 {
		t.Fatalf("want 3 messages (before, the refusal, after), got %d: %v", len(msgs), msgs)
	}
	refusal := msgs[1]
	expectError(t, refusal, -32600, "")
	var data struct {
		LimitBytes int `json:"limitBytes"`
	}
	if err := json.Unmarshal(refusal.Error.Data, &data); err == nil && data.LimitBytes != 16<<20 {
		t.Errorf("data.limitBytes = %d, want the default 16 MiB", data.LimitBytes)
	}
	if string(msgs[2].ID) != `"after"` {
		t.Errorf("the refusal did not come before the later call's answer: %v", msgs)
	}
}

// vmHWM returns the server's peak resident set size, from /proc/<pid>/status.
func (c *client) vmHWM() (kib int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			_, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")), "%d kB", &kib)
			return kib, err
		}
	}
	return 0, errors.New("no VmHWM line in /proc/<pid>/status")
}
