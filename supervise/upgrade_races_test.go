//go:build unix

package supervise

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// An upgrade asked for before the host's handshake (a --watch or SIGHUP as the host
// connects), whose new child is slow to start: the host's initialize, sent meanwhile, goes to
// the old child, and the upgrade starts again, so that the new child serves initialized.
func TestProxyUpgradeBeforeTheHostsHandshakeStartsAgain(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "slow")
	h := tpStart(t, tpSpec(t, "echo,strict,slowstartfile="+marker, ""), nil)
	time.Sleep(300 * time.Millisecond) // the first child is up (and fast)
	os.WriteFile(marker, nil, 0o644)   // the next one takes 1.5 s to read its input
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.sup.Upgrade(ctx, "before the handshake") }()
	time.Sleep(300 * time.Millisecond)
	if r := h.Call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}}); r.Error != nil {
		t.Fatalf("initialize = %v", r)
	}
	h.Notify("notifications/initialized", nil)
	if err := <-done; err != nil {
		t.Fatalf("Upgrade = %v", err)
	}
	if r := h.Tool("echo", map[string]any{"text": "hi"}); r.Text() != "hi" {
		t.Errorf("after the upgrade, echo = %v, want hi (the new child was never initialized)", r)
	}
	if inits := h.Tool("inits", nil).Text(); inits != "1" {
		t.Errorf("the new child was initialized %q times, want once", inits)
	}
	h.close(10 * time.Second)
}

// State the host sets while the lists are compared (after the new child's handshake was
// replayed, before it serves) reaches the new child too.
func TestProxyUpgradePassesOnStateSetDuringIt(t *testing.T) {
	h := tpStart(t, tpSpec(t, "echo,strict,slowlist=1500", ""), nil)
	if r := h.Call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}}); r.Error != nil {
		t.Fatalf("initialize = %v", r)
	}
	h.Notify("notifications/initialized", nil)
	if r := h.Call("logging/setLevel", map[string]any{"level": "debug"}); r.Error != nil {
		t.Fatalf("setLevel = %v", r)
	}
	time.Sleep(2 * time.Second) // the proxy's own tools/list of the old child is done
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.sup.Upgrade(ctx, "test") }()
	time.Sleep(500 * time.Millisecond) // the candidate is initialized, its lists under way
	if r := h.Call("logging/setLevel", map[string]any{"level": "error"}); r.Error != nil {
		t.Fatalf("setLevel = %v", r)
	}
	if err := <-done; err != nil {
		t.Fatalf("Upgrade = %v", err)
	}
	if level := h.Tool("level", nil).Text(); level != "error" {
		t.Errorf("the new child's level = %q, want error: the host set it during the upgrade", level)
	}
	h.close(10 * time.Second)
}

// A request on an upgraded-away child that the host cancels is its last: the child owes
// nothing, and is stopped at once rather than held for the whole Drain.
func TestProxyUpgradeStopsAnOldChildWhoseLastRequestIsCancelled(t *testing.T) {
	h := tpStart(t, tpSpec(t, "echo", ""), &ProxyOptions{Drain: 8 * time.Second})
	tpLearn(t, h)
	old, _ := strconv.Atoi(h.Tool("pid", nil).Text())
	// held: like a server that, as MCP says, does not answer a cancelled request
	id, ch := h.Send("tools/call", map[string]any{"name": "danger", "arguments": map[string]any{"text": "x", "hold": true}})
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.sup.Upgrade(ctx, "test"); err != nil {
		t.Fatalf("Upgrade = %v", err)
	}
	h.Notify("notifications/cancelled", map[string]any{"requestId": json.RawMessage(id)})
	if !tcGone(old, 3*time.Second) {
		t.Errorf("the old child %d still runs 3 s after its last request was cancelled (Drain 8 s)", old)
	}
	_ = ch
	h.stop(15 * time.Second)
}

// The proxy's own tools/list, sent to the old child (after its tools/list_changed) and
// answered once that child is retiring, is not taken for the new child's: a tool the old
// version called idempotent and the new one does not is not replayed, and runs once.
func TestProxyUpgradeIgnoresTheOldChildsLateList(t *testing.T) {
	dir := t.TempDir()
	marker, logPath := filepath.Join(dir, "safe"), filepath.Join(dir, "log")
	os.WriteFile(marker, nil, 0o644) // the old version says danger is idempotent
	h := tpStart(t, tpSpec(t, "echo,slowlist=1000,safefile="+marker, logPath), nil)
	h.Call("tools/list", map[string]any{})
	time.Sleep(1500 * time.Millisecond)                                                                           // the proxy's own list is done
	os.Remove(marker)                                                                                             // the new version says it is not
	_, sleeping := h.Send("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 4000}}) // keeps the old child
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.sup.Upgrade(ctx, "test") }()
	time.Sleep(50 * time.Millisecond)
	h.Tool("announce", nil) // on the old child: its tools/list_changed makes the proxy list it again
	if err := <-done; err != nil {
		t.Fatalf("Upgrade = %v", err)
	}
	time.Sleep(1500 * time.Millisecond) // the old child answers the proxy's list
	newPID, _ := strconv.Atoi(h.Tool("pid", nil).Text())
	_, ch := h.Send("tools/call", map[string]any{"name": "danger", "arguments": map[string]any{"text": "once", "hold": true}})
	time.Sleep(200 * time.Millisecond)
	killPid(newPID)
	r, _ := h.Wait(ch, 10*time.Second)
	if n := tpLog(t, logPath)["exec once"]; n != 1 {
		t.Errorf("danger, not idempotent in the new version, ran %d times (answer %v)", n, r)
	}
	h.Wait(sleeping, 10*time.Second)
	h.stop(15 * time.Second)
}
