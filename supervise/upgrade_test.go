//go:build unix

package supervise

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Upgrades in process (so that the race detector sees the proxy's side of them): a strict
// legacy child, which refuses every request until it is initialized, behind Proxy; calls
// that are safe to repeat (sleep) and calls that are not (danger) always in flight; five
// upgrades one after another. Every call is answered right, each upgrade makes a child of
// its own, and the new child has the host's handshake and log level before its first call.
func TestProxyUpgradeUnderLoad(t *testing.T) {
	h := tpStart(t, tpSpec(t, "echo,strict", ""), nil)
	if r := h.Call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}}); r.Error != nil {
		t.Fatalf("initialize = %v", r)
	}
	h.Notify("notifications/initialized", nil)
	if r := h.Call("logging/setLevel", map[string]any{"level": "debug"}); r.Error != nil {
		t.Fatalf("setLevel = %v", r)
	}
	tpLearn(t, h)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wrong []string
	calls := 0
	for w := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name, args, want := "sleep", map[string]any{"ms": 10 + w}, fmt.Sprintf("slept %d", 10+w)
				if w%4 == 0 { // not safe to repeat: the old child must answer it
					name, args, want = "danger", map[string]any{"text": fmt.Sprint(w, "-", i), "ms": 15}, fmt.Sprint("danger:", w, "-", i)
				}
				_, ch := h.Send("tools/call", map[string]any{"name": name, "arguments": args})
				r, ok := h.Wait(ch, 20*time.Second)
				mu.Lock()
				calls++
				if !ok || r.Text() != want {
					wrong = append(wrong, fmt.Sprintf("%s %v: %v (answered %v)", name, args, r, ok))
				}
				mu.Unlock()
			}
		})
	}
	pids := map[string]bool{h.Tool("pid", nil).Text(): true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 5 {
		time.Sleep(100 * time.Millisecond)
		if err := h.sup.Upgrade(ctx, "test"); err != nil {
			t.Fatalf("Upgrade = %v", err)
		}
		pids[h.Tool("pid", nil).Text()] = true
		if level := h.Tool("level", nil).Text(); level != "debug" {
			t.Errorf("the new child's log level = %q, want the host's debug", level)
		}
		if inits := h.Tool("inits", nil).Text(); inits != "1" {
			t.Errorf("the new child was initialized %s times, want once", inits)
		}
	}
	close(stop)
	wg.Wait()
	if len(wrong) > 0 {
		t.Errorf("%d of %d calls answered wrongly or not at all, first: %s", len(wrong), calls, wrong[0])
	}
	if len(pids) != 6 {
		t.Errorf("5 upgrades made %d children in all, want 6", len(pids))
	}
	if n := h.Notes("notifications/tools/list_changed"); n != 0 {
		t.Errorf("tools/list_changed heard %d times, want none: every child lists the same", n)
	}
	if err := h.close(10 * time.Second); err != nil {
		t.Errorf("Proxy = %v", err)
	}
}

// An upgrade asked for while the child restarts waits for the new child, then upgrades it;
// one asked for while the proxy stops is refused with an error that says so.
func TestProxyUpgradeDuringARestartAndTheStop(t *testing.T) {
	h := tpStart(t, tpSpec(t, "echo", ""), nil)
	tpLearn(t, h)
	first := h.Tool("pid", nil).Text()
	h.sup.Restart("the test restarts the child")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.sup.Upgrade(ctx, "during a restart"); err != nil {
		t.Fatalf("Upgrade = %v", err)
	}
	if pid := h.Tool("pid", nil).Text(); pid == first {
		t.Errorf("the child %s still serves", pid)
	}
	if err := h.close(10 * time.Second); err != nil {
		t.Errorf("Proxy = %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if err := h.sup.Upgrade(ctx2, "after the end"); err == nil {
		t.Error("an upgrade after the proxy ended succeeded")
	}
}
