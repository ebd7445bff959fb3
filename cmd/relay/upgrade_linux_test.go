package main

import (
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/proc"
)

// A 2026-07-28 host's listen moves to the new child at an upgrade: the old child, with
// nothing else in flight, is stopped at once rather than held for --drain (60 s here), the
// new child's acknowledgement is not passed on (the host's stream never ended), and the
// host hears no list_changed, since both children list the same.
func TestSuperviseUpgradeMovesAListen(t *testing.T) {
	modern := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	r := rtStart(t, "", "supervise", "-v", "--drain", "60s", "--", rtEcho)
	relay := r.cmd.Process.Pid
	if rep := r.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}, "_meta": modern}); rep.Text() != "hi" {
		t.Fatalf("echo = %v", rep)
	}
	r.Send("subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true, "promptsListChanged": true,
		"resourcesListChanged": true}, "_meta": modern})
	waitNotes(t, r.Host, "notifications/subscriptions/acknowledged", 1)
	old := rtChildOf(t, relay, 0)

	r.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, alive := proc.Read(old); !alive || st.State == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the old child %d still runs 10 s after the upgrade: the listen held it", old)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rtChildOf(t, relay, old) == old {
		t.Fatal("no new child")
	}
	if rep := r.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "again"}, "_meta": modern}); rep.Text() != "again" {
		t.Fatalf("echo after the upgrade = %v", rep)
	}
	for _, m := range []string{"notifications/subscriptions/acknowledged", "notifications/tools/list_changed",
		"notifications/prompts/list_changed", "notifications/resources/list_changed"} {
		if want, n := map[bool]int{true: 1}[m == "notifications/subscriptions/acknowledged"], r.Notes(m); n != want {
			t.Errorf("%s heard %d times, want %d", m, n, want)
		}
	}
}
