package main

// Linux only: these tests find relay's child through /proc (internal/proc).

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/hosttest"
	"github.com/relayrt/relay/internal/proc"
)

// rtChildOf waits for a live child of relay other than not.
func rtChildOf(t *testing.T, relay, not int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range proc.Supervised(relay) {
			if c.PID != not {
				return c.PID
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("relay %d has no new child", relay)
	return 0
}

// End to end: the built relay with the built examples/echo as the child, a 2026-07-28 host
// and a legacy one, each through crashes.
func TestSuperviseEchoEndToEnd(t *testing.T) {
	modern := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	t.Run("modern", func(t *testing.T) {
		r := rtStart(t, "", "supervise", "--restart-limit", "0", "--backoff", "10ms..50ms", "--stop-wait", "500ms", "--", rtEcho)
		relay := r.cmd.Process.Pid
		list := r.Call("tools/list", map[string]any{"_meta": modern})
		if !strings.Contains(string(list.Result), `"name":"sleep"`) || !strings.Contains(string(list.Result), `"readOnlyHint":true`) {
			t.Fatalf("tools/list = %v", list)
		}
		prev := 0
		for crash := 0; crash < 3; crash++ {
			pid := rtChildOf(t, relay, prev)
			if rep := r.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}, "_meta": modern}); rep.Text() != "hi" {
				t.Errorf("echo = %v", rep)
			}
			_, slow := r.Send("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 300}, "_meta": modern})
			time.Sleep(50 * time.Millisecond)
			killPid(pid) // the sleep in flight is annotated: replayed
			select {
			case rep := <-slow:
				if rep.Text() != "slept 300 ms" {
					t.Errorf("sleep in flight at the crash = %v, want it replayed", rep)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("sleep: no answer")
			}
			prev = pid
		}
		if code := r.exit(true, 10*time.Second); code != 0 {
			t.Errorf("relay exited %d after EOF, want 0", code)
		}
		rtNothingLeft(t, relay)
	})
	t.Run("legacy", func(t *testing.T) {
		r := rtStart(t, "", "supervise", "--restart-limit", "0", "--backoff", "10ms..50ms", "--", rtEcho)
		relay := r.cmd.Process.Pid
		if rep := r.Call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "legacy", "version": "1"}}); rep.Error != nil {
			t.Fatalf("initialize = %v", rep)
		}
		r.Notify("notifications/initialized", nil)
		if rep := r.Call("logging/setLevel", map[string]any{"level": "debug"}); rep.Error != nil {
			t.Fatalf("setLevel = %v", rep)
		}
		r.Call("tools/list", map[string]any{})
		pid := rtChildOf(t, relay, 0)
		changed := r.Notes("notifications/tools/list_changed")
		killPid(pid)
		for deadline := time.Now().Add(10 * time.Second); r.Notes("notifications/tools/list_changed") == changed && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if rep := r.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "again"}}); rep.Text() != "again" {
			t.Errorf("echo after the crash, without initializing again = %v", rep)
		}
		if code := r.exit(true, 10*time.Second); code != 0 {
			t.Errorf("relay exited %d after EOF, want 0", code)
		}
		rtNothingLeft(t, relay)
	})
}

// The chaos test through the binary: `relay supervise --restart-limit 0 --backoff
// 10ms..50ms -- <test binary>`, a load of concurrent requests, the child SIGKILLed on a
// seeded schedule.
func TestSuperviseChaos(t *testing.T) {
	const seed, workers, crashes, minReqs = 7, 12, 12, 800
	r := rtStart(t, "echo", append([]string{"supervise", "--restart-limit", "0", "--backoff", "10ms..50ms", "--stop-wait", "500ms", "--"}, rtSelf(t)...)...)
	relay := r.cmd.Process.Pid
	if list := r.Call("tools/list", map[string]any{}); !strings.Contains(string(list.Result), "danger") {
		t.Fatalf("tools/list = %v", list)
	}
	var (
		issued, total, restartErrs atomic.Int64
		killsDone                  atomic.Bool
		wg                         sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := issued.Add(1)
				if killsDone.Load() && i > minReqs {
					return
				}
				text := fmt.Sprintf("r%d", i)
				kind := [...]string{"echo", "sleep", "danger", "echo", "danger"}[i%5]
				_, ch := r.Send("tools/call", map[string]any{"name": kind, "arguments": map[string]any{"text": text, "ms": int(i % 20)}})
				var rep hosttest.Reply
				select {
				case rep = <-ch:
				case <-time.After(20 * time.Second):
					t.Errorf("%s %s: no answer (lost)", kind, text)
					return
				}
				total.Add(1)
				switch {
				case kind == "echo" && rep.Text() == text:
				case kind == "sleep" && rep.Text() == fmt.Sprintf("slept %d ms", i%20):
				case kind == "danger" && rep.Text() == "danger:"+text:
				case kind == "danger" && rep.IsRestartError():
					restartErrs.Add(1)
				default:
					t.Errorf("%s %s: %v", kind, text, rep)
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	prev := 0
	for k := 0; k < crashes; k++ {
		pid := rtChildOf(t, relay, prev)
		time.Sleep(time.Duration(30+rng.IntN(70)) * time.Millisecond)
		killPid(pid)
		prev = pid
	}
	killsDone.Store(true)
	wg.Wait()
	t.Logf("seed %d: %d requests, %d crashes, 0 lost, %d restart errors", seed, total.Load(), crashes, restartErrs.Load())
	if code := r.exit(true, 15*time.Second); code != 0 {
		t.Errorf("relay exited %d after EOF, want 0", code)
	}
	rtNothingLeft(t, relay)
}

// SIGTERM to relay stops the child and exits 0.
func TestSuperviseSIGTERM(t *testing.T) {
	r := rtStart(t, "echo", append([]string{"supervise", "--"}, rtSelf(t)...)...)
	relay := r.cmd.Process.Pid
	if rep := r.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}); rep.Text() != "x" {
		t.Fatalf("echo = %v", rep)
	}
	child := rtChildOf(t, relay, 0)
	r.cmd.Process.Signal(syscall.SIGTERM)
	if code := r.exit(false, 10*time.Second); code != 0 {
		t.Errorf("relay exited %d after SIGTERM, want 0", code)
	}
	if _, ok := proc.Read(child); ok {
		t.Errorf("child %d still exists", child)
	}
	rtNothingLeft(t, relay)
	r.in.Close()
}
