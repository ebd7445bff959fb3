//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/hosttest"
)

// rtLegacyInit opens a 2025-11-25 session: the handshake an upgrade replays.
func rtLegacyInit(t *testing.T, r *rtRun) {
	t.Helper()
	if rep := r.Call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "upgrade-test", "version": "1"}}); rep.Error != nil {
		t.Fatalf("initialize = %v", rep)
	}
	r.Notify("notifications/initialized", map[string]any{})
}

// rtUntil calls the tool until its text is not the one given, for up to 10 s, and returns
// the new text.
func rtUntil(t *testing.T, r *rtRun, tool, not string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := r.Tool(tool, map[string]any{}).Text(); got != not || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The load: 64 calls always in flight through relay supervise while it gets a
// SIGHUP every 500 ms for 5 s. Every call is answered, and answered right; each SIGHUP makes
// a new child; the lists did not change, so the host hears no list_changed.
func TestSuperviseUpgradesOnSIGHUPUnderLoad(t *testing.T) {
	r := rtStart(t, "echo", append([]string{"supervise", "-v", "--"}, rtSelf(t)...)...)
	rtLegacyInit(t, r)

	const workers = 64
	var (
		stop        = make(chan struct{})
		wg          sync.WaitGroup
		calls       atomic.Int64
		mu          sync.Mutex
		wrong       []string
		wrongOrLost = func(s string) { mu.Lock(); wrong = append(wrong, s); mu.Unlock() }
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name, args, want := "echo", map[string]any{"text": fmt.Sprintf("w%d-%d", w, i)}, fmt.Sprintf("w%d-%d", w, i)
				if i%2 == 0 { // in flight for a while: across the switch to the new child
					ms := 20 + w%40
					name, args, want = "sleep", map[string]any{"ms": ms}, fmt.Sprintf("slept %d ms", ms)
				}
				_, ch := r.Send("tools/call", map[string]any{"name": name, "arguments": args})
				rep, ok := r.Wait(ch, 20*time.Second)
				calls.Add(1)
				if !ok || rep.Text() != want {
					wrongOrLost(fmt.Sprintf("%s %v: %v (answered %v)", name, args, rep, ok))
				}
			}
		}()
	}

	pids := map[string]bool{}
	pid := r.Tool("pid", nil).Text()
	pids[pid] = true
	const sighups = 10
	start := time.Now()
	for range sighups {
		time.Sleep(500 * time.Millisecond)
		r.cmd.Process.Signal(syscall.SIGHUP)
		// The next SIGHUP waits for this one's child: on a slow machine an upgrade may take
		// longer than 500 ms, and one asked for meanwhile would be joined to it.
		pid = rtUntil(t, r, "pid", pid)
		pids[pid] = true
	}
	close(stop)
	wg.Wait()
	took := time.Since(start)

	if len(wrong) > 0 {
		t.Errorf("%d of %d calls answered wrongly or not at all, first: %s", len(wrong), calls.Load(), wrong[0])
	}
	if len(pids) != sighups+1 {
		t.Errorf("%d SIGHUPs made %d children in all, want %d (one new child each)", sighups, len(pids), sighups+1)
	}
	if n := r.Notes("notifications/tools/list_changed"); n != 0 {
		t.Errorf("the host heard %d tools/list_changed, want none: every child lists the same tools", n)
	}
	if code := r.exit(true, 15*time.Second); code != 0 {
		t.Errorf("relay exited %d", code)
	}
	if n := strings.Count(r.stderr.String(), `"msg":"upgraded"`); n != sighups {
		t.Errorf("relay logged %d upgrades, want %d", n, sighups)
	}
	t.Logf("%d calls through %d upgrades in %s, every one answered", calls.Load(), sighups, took.Round(time.Millisecond))
}

// rtScript writes a server script that runs this test binary as the child version tag, or
// (tag "") a script that exits 3 at once: a broken release.
func rtScript(t *testing.T, path, tag string) {
	t.Helper()
	body := "#!/bin/sh\n# a broken release\nexit 3\n"
	if tag != "" {
		body = fmt.Sprintf("#!/bin/sh\n# version %s\n%s=%s exec %q\n", tag, rtTagEnv, tag, rtSelf(t)[0])
	}
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// --watch on the server's script: a rewrite upgrades the child, which serves the new version
// with the host's session (its handshake replayed); the host hears tools/list_changed when
// the new version lists other tools, and not when it lists the same. A rewrite to a broken
// script leaves the old child serving, and the next good one upgrades it.
func TestSuperviseWatchUpgradesARewrittenScript(t *testing.T) {
	script := filepath.Join(t.TempDir(), "server.sh")
	rtScript(t, script, "v1")
	r := rtStart(t, "echo", "supervise", "-v", "--watch", script, "--", script)
	rtLegacyInit(t, r)
	if got := r.Tool("tag", nil).Text(); got != "v1" {
		t.Fatalf("tag = %q, want v1", got)
	}
	pid := r.Tool("pid", nil).Text()

	rtScript(t, script, "v2")
	if got := rtUntil(t, r, "tag", "v1"); got != "v2" {
		t.Fatalf("after the script was rewritten, tag = %q, want v2", got)
	}
	if list := r.Call("tools/list", map[string]any{}); !strings.Contains(string(list.Result), `"tag-v2"`) || strings.Contains(string(list.Result), `"tag-v1"`) {
		t.Errorf("tools/list after the upgrade = %s, want tag-v2's", list.Result)
	}
	waitNotes(t, r.Host, "notifications/tools/list_changed", 1)
	pid = r.Tool("pid", nil).Text()

	// Another version that lists the same tools: a new child, and no list_changed.
	body, _ := os.ReadFile(script)
	os.WriteFile(script, append(body, "# the same tools\n"...), 0o755)
	pid2 := rtUntil(t, r, "pid", pid)
	if pid2 == pid {
		t.Fatal("rewriting the script again made no new child")
	}
	if n := r.Notes("notifications/tools/list_changed"); n != 1 {
		t.Errorf("tools/list_changed heard %d times, want 1: the last upgrade lists the same tools", n)
	}

	// A broken release: the new child exits at once, and the old one keeps serving.
	rtScript(t, script, "")
	time.Sleep(4 * watchEvery) // seen, and tried
	for range 5 {
		if got := r.Tool("pid", nil).Text(); got != pid2 {
			t.Fatalf("after an upgrade to a broken script, pid = %q, want the old child %s still serving", got, pid2)
		}
		time.Sleep(watchEvery)
	}
	rtScript(t, script, "v3")
	if got := rtUntil(t, r, "tag", "v2"); got != "v3" {
		t.Fatalf("after the script was mended, tag = %q, want v3", got)
	}
	if code := r.exit(true, 15*time.Second); code != 0 {
		t.Errorf("relay exited %d", code)
	}
	if log := r.stderr.String(); !strings.Contains(log, "upgrade failed") {
		t.Errorf("the failed upgrade was not logged:\n%s", rtTail(log, 3000))
	}
}

// waitNotes waits up to 10 s for at least n notifications of method.
func waitNotes(t *testing.T, h *hosttest.Host, method string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.Notes(method) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s heard %d times, want %d", method, h.Notes(method), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
