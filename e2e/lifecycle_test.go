package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestCancelledRequestIsNeverAnswered: after notifications/cancelled the server sends nothing
// more for that request, its response included (DIGEST A8, stdio: MUST NOT; section F.2 is
// decided in favour of the stdio page), and stops the work: the process exits at once on EOF
// rather than after the 10 s sleep or the drain deadline.
func TestCancelledRequestIsNeverAnswered(t *testing.T) {
	t.Parallel()
	c := start(t)
	const cancelled = `"long-sleep"`
	c.send(
		callLine(cancelled, "sleep", `{"ms":10000}`),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long-sleep","reason":"user gave up"}}`,
		echoLine(`2`, "after the cancel"),
	)
	if got := toolText(t, c.response(`2`), true); got != "after the cancel" {
		t.Errorf("echo after cancel: %q", got)
	}
	begin := time.Now()
	c.closeStdin()
	if code := c.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("the server took %v to exit: the cancelled sleep kept running (DIGEST A8: stop the work)", d)
	}
	for _, m := range c.snapshot() {
		if string(m.ID) == cancelled {
			t.Errorf("a message for the cancelled request (DIGEST A8): %s", m)
		}
	}
	if n := len(c.snapshot()); n != 1 {
		t.Errorf("%d messages, want only the echo response", n)
	}
}

// TestCancelledWithProgressSendsNothingMore: a cancelled request that was reporting progress
// sends no further notification (DIGEST A8: no further message for that request; A7).
func TestCancelledWithProgressSendsNothingMore(t *testing.T) {
	t.Parallel()
	c := start(t)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":2000},` +
		`"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	c.waitFor("a first progress notification", func(ms []msg) bool { return len(ms) > 0 })
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	c.send(echoLine(`2`, "x"))
	c.response(`2`)
	before := len(c.snapshot())
	time.Sleep(500 * time.Millisecond) // at 200 ms per tick, a leak would show
	after := c.snapshot()
	for _, m := range after[before:] {
		t.Errorf("message after the cancel was answered (DIGEST A8): %s", m)
	}
	c.closeStdin()
	if code := c.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	for _, m := range c.snapshot() {
		if m.isResponse() && string(m.ID) == `1` {
			t.Errorf("the cancelled request was answered (DIGEST A8): %s", m)
		}
	}
}

// TestEOFDrainsInFlight: closing stdin is the graceful shutdown signal (DIGEST A12, D): the 64
// requests in flight are all answered, then the server exits 0.
func TestEOFDrainsInFlight(t *testing.T) {
	t.Parallel()
	c := start(t)
	const n = 64
	var lines []string
	for i := range n {
		lines = append(lines, sleepLine(fmt.Sprint(i), 300))
	}
	c.send(lines...)
	c.closeStdin()
	if code := c.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	checkAllSlept(t, c.snapshot(), n, 300)
}

// checkAllSlept checks that msgs are exactly the n sleep results for ids 0..n-1.
func checkAllSlept(t *testing.T, msgs []msg, n, ms int) {
	t.Helper()
	seen := map[string]int{}
	for _, m := range msgs {
		seen[string(m.ID)]++
		if got := toolText(t, m, true); got != fmt.Sprintf("slept %d ms", ms) {
			t.Errorf("id %s: %q", m.ID, got)
		}
	}
	for i := range n {
		if id := fmt.Sprint(i); seen[id] != 1 {
			t.Errorf("id %s answered %d times, want once", id, seen[id])
		}
	}
	if len(msgs) != n {
		t.Errorf("%d messages, want %d", len(msgs), n)
	}
}
