//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

// loadCall is the i-th call of worker w in the upgrade tests' load: an echo, or a sleep that
// stays in flight for a while, across the switch to a new child; want is its answer's text.
func loadCall(w, i int) (name string, args map[string]any, want string) {
	if i%2 == 0 {
		ms := 20 + w%40
		return "sleep", map[string]any{"ms": ms}, fmt.Sprintf("slept %d ms", ms)
	}
	text := fmt.Sprintf("w%d-%d", w, i)
	return "echo", map[string]any{"text": text}, text
}

// 64 calls always in flight through relay supervise while it gets a
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
				name, args, want := loadCall(w, i)
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

// modernCall calls a tool through relay bridge at url as a 2026-07-28 client, and returns
// the text it answered, or an error that says what came back instead.
func modernCall(url, name string, args map[string]any) (string, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": name, "arguments": args, "_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}}})
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if i := bytes.LastIndex(b, []byte("data: ")); i >= 0 { // an SSE stream: its last event is the answer
		b = b[i+len("data: "):]
	}
	var rep hosttest.Reply
	if resp.StatusCode != http.StatusOK || json.Unmarshal(bytes.TrimSpace(b), &rep) != nil || rep.Error != nil {
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	return rep.Text(), nil
}

// A rolling upgrade of relay bridge's pool under load: 32 clients call through a pool of
// three children while the server's script is rewritten, and then while relay gets a
// SIGHUP. Every call is answered right; afterwards every child is of the new version, and
// none of the children that served before is left.
func TestBridgeRollingUpgradeUnderLoad(t *testing.T) {
	script := filepath.Join(t.TempDir(), "server.sh")
	rtScript(t, script, "v1")
	cmd, url := bridgeRecording(t, []string{rtChildEnv + "=echo"}, "--pool", "3", "--watch", script, "--", script)

	pidsOf := func() map[string]bool { // the children that answer, under a little load of its own
		pids := map[string]bool{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 12 {
			wg.Go(func() {
				for range 4 {
					if pid, err := modernCall(url, "pid", nil); err == nil {
						mu.Lock()
						pids[pid] = true
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		return pids
	}
	before := pidsOf()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls atomic.Int64
	var mu sync.Mutex
	var wrong []string
	for w := range 32 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name, args, want := loadCall(w, i)
				got, err := modernCall(url, name, args)
				calls.Add(1)
				if err != nil || got != want {
					mu.Lock()
					wrong = append(wrong, fmt.Sprintf("%s %v: %q %v", name, args, got, err))
					mu.Unlock()
				}
			}
		})
	}
	allTagged := func(tag string) bool { // 30 calls in a row, spread over the pool by load
		for range 30 {
			if got, err := modernCall(url, "tag", nil); err != nil || got != tag {
				return false
			}
		}
		return true
	}
	waitTag := func(tag string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !allTagged(tag) {
			if time.Now().After(deadline) {
				t.Fatalf("the pool does not serve %s only within 20 s", tag)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(300 * time.Millisecond)
	rtScript(t, script, "v2")
	waitTag("v2")
	cmd.Process.Signal(syscall.SIGHUP) // the same version again: new children all the same
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	if len(wrong) > 0 {
		t.Errorf("%d of %d calls answered wrongly or not at all, first: %s", len(wrong), calls.Load(), wrong[0])
	}
	after := pidsOf()
	for pid := range after {
		if before[pid] {
			t.Errorf("child %s served before the upgrade and still serves", pid)
		}
	}
	if len(before) == 0 || len(after) == 0 {
		t.Errorf("children seen: %d before, %d after", len(before), len(after))
	}
	// What the bridge says of the server itself is the new version's: a legacy client's
	// initialize, which the bridge answers for a pool of 2026-07-28 children.
	h := &httpSession{t: t, url: url}
	if init := h.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); !strings.Contains(init, `"version":"v2"`) {
		t.Errorf("initialize after the upgrade = %s, want serverInfo of v2", init)
	}
	stopBridge(t, cmd)
	t.Logf("%d calls through two rolling upgrades of a pool of 3, every one answered", calls.Load())
}

// A server of the initialize generation behind relay bridge: each HTTP session has a child
// of its own. An upgrade moves the session to a child of the new version at once, with its
// initialize replayed: the same session, never ended, answered by the new version.
func TestBridgeUpgradeMovesALegacySessionToTheNewVersion(t *testing.T) {
	script := filepath.Join(t.TempDir(), "server.sh")
	rtScript(t, script, "v1")
	cmd, url := bridgeRecording(t, []string{rtChildEnv + "=legacy"}, "--watch", script, "--", script)
	h := &httpSession{t: t, url: url}
	h.begin()
	id := h.id
	tag := func() string {
		out := h.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tag","arguments":{}}}`)
		if i := strings.LastIndex(out, "data: "); i >= 0 {
			out = out[i+len("data: "):]
		}
		var rep hosttest.Reply
		json.Unmarshal([]byte(strings.TrimSpace(out)), &rep)
		return rep.Text()
	}
	if got := tag(); got != "v1" {
		t.Fatalf("tag = %q, want v1", got)
	}
	rtScript(t, script, "v2")
	deadline := time.Now().Add(10 * time.Second)
	for tag() != "v2" {
		if time.Now().After(deadline) {
			t.Fatal("the session is not served by v2 within 10 s of the rewrite")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if h.id != id {
		t.Errorf("the session changed: %s, then %s", id, h.id)
	}
	stopBridge(t, cmd)
}
