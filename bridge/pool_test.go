//go:build linux

package bridge_test

// Linux only: the tests read the children's /proc/<pid>/io and kill them with SIGKILL.

// `relay bridge --pool 3 -- examples/echo`: routing over the pool (A3: any child may serve
// any 2026-07-28 request), a child's crash under load (D: restart it, retry what is safe to
// repeat on the new process), and shutdown (D: every child stopped, nothing left running).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/proc"
)

// TestA3_PoolSpreadsConcurrentCallsOverEveryChild: many concurrent 2026-07-28 tools/call
// requests all succeed, and every child of the pool served some of them (each child's
// stdout byte count, /proc/<pid>/io wchar, grows by the answers it wrote).
func TestA3_PoolSpreadsConcurrentCallsOverEveryChild(t *testing.T) {
	relay := startRelay(t, []string{"--pool", "3"}, echoBin(t))
	kids := waitChildren(t, relay.pid(), 3, 30*time.Second)
	before := map[int]ioCounters{}
	for _, k := range kids {
		if k.Comm != "echo" {
			t.Fatalf("child %d is %q, want echo", k.PID, k.Comm)
		}
		before[k.PID] = readIO(t, k.PID)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 90
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			var rep rpcReply
			var err error
			want := ""
			if i%3 == 0 {
				want = fmt.Sprintf("call %d", i)
				rep, err = relay.call(ctx, i+1, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": want}})
			} else {
				want = "slept 200 ms"
				rep, err = relay.call(ctx, i+1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 200}})
			}
			switch {
			case err != nil:
				errs <- fmt.Errorf("call %d: %v", i, err)
			case rep.Error != nil || rep.Status != 200 || rep.text() != want:
				errs <- fmt.Errorf("call %d: %v, want text %q", i, rep, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	after := waitChildren(t, relay.pid(), 3, time.Second)
	for _, k := range after {
		b, ok := before[k.PID]
		if !ok {
			t.Errorf("child %d is new: a child was restarted during the run; children before %+v", k.PID, kids)
			continue
		}
		c := readIO(t, k.PID)
		t.Logf("child %d: read %d bytes in %d reads, wrote %d bytes in %d writes",
			k.PID, c.rchar-b.rchar, c.syscr-b.syscr, c.wchar-b.wchar, c.syscw-b.syscw)
		if c.wchar == b.wchar {
			t.Errorf("child %d answered nothing: the pool did not spread %d concurrent calls over its 3 children", k.PID, n)
		}
	}
}

// TestD_ChildKilledUnderLoadReplaysAnnotatedCalls: SIGKILL one child while calls of a tool
// annotated readOnlyHint/idempotentHint (echo's sleep) are in flight on it. Every call still
// succeeds (the supervisor replays them on the restarted child), the pool keeps serving
// while that child restarts, and the killed child is replaced by a new process.
//
// The client lists the tools once, as clients do, and one child answers that list; the child
// killed is another one. Which child saw the client's tools/list must not matter: with the
// default --replay annotated, the annotations are the children's own.
func TestD_ChildKilledUnderLoadReplaysAnnotatedCalls(t *testing.T) {
	relay := startRelay(t, []string{"--pool", "3", "--backoff", "50ms..1s"}, echoBin(t))
	kids := waitChildren(t, relay.pid(), 3, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	snapshot := func() map[int]ioCounters {
		m := map[int]ioCounters{}
		for _, k := range kids {
			m[k.PID] = readIO(t, k.PID)
		}
		return m
	}
	beforeList := snapshot()
	list, err := relay.call(ctx, 1, "tools/list", nil)
	if err != nil || list.Error != nil {
		t.Fatalf("tools/list: %v %v", list, err)
	}
	if !strings.Contains(string(list.Result), `"readOnlyHint":true`) {
		t.Fatalf("echo's tools are not annotated read-only: %s", list.Result)
	}
	afterList := snapshot()
	lister := 0
	for pid, c := range afterList {
		if c.rchar > beforeList[pid].rchar {
			lister = pid
		}
	}

	const n = 30
	var wg sync.WaitGroup
	var answered atomic.Int32
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			rep, err := relay.call(ctx, 100+i, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}})
			answered.Add(1)
			switch {
			case err != nil:
				errs <- fmt.Errorf("sleep call %d: %v", i, err)
			case rep.Error != nil || rep.text() != "slept 1500 ms":
				errs <- fmt.Errorf("sleep call %d: %v, want it replayed and answered", i, rep)
			}
		})
	}
	// Wait until every child has taken some of the calls.
	deadline := time.Now().Add(10 * time.Second)
	for {
		busy := 0
		for pid, c := range snapshot() {
			if c.rchar > afterList[pid].rchar {
				busy++
			}
		}
		if busy == len(kids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s only %d of %d children took calls", busy, len(kids))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if answered.Load() != 0 {
		t.Fatalf("%d calls were answered before the kill; the sleeps are too short for this machine", answered.Load())
	}
	var victim proc.Stat
	for _, k := range kids {
		if k.PID != lister {
			victim = k
			break
		}
	}
	t.Logf("children %v; tools/list answered by %d; killing %d", pids(kids), lister, victim.PID)
	if victim.PID <= 1 {
		t.Fatalf("no child to kill among %v", pids(kids)) // kill(0) would hit the test's own group
	}
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	// The pool stays available while the killed child restarts.
	for i := range 5 {
		start := time.Now()
		rep, err := relay.call(ctx, 200+i, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "still here"}})
		if err != nil || rep.Error != nil || rep.text() != "still here" {
			t.Errorf("echo during the restart: %v %v", rep, err)
		} else if d := time.Since(start); d > 2*time.Second {
			t.Errorf("echo during the restart took %v", d)
		}
	}

	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// The killed child was replaced: three children again, one of them new.
	deadline = time.Now().Add(10 * time.Second)
	for {
		now := proc.Supervised(relay.pid())
		if len(now) == 3 && !slices.Contains(pids(now), victim.PID) {
			t.Logf("children after the restart: %v", pids(now))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed child %d was not replaced within 10 s: children %+v", victim.PID, now)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if alive(victim) {
		t.Errorf("the killed child %d still runs", victim.PID)
	}
	rep, err := relay.call(ctx, 300, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "after"}})
	if err != nil || rep.Error != nil || rep.text() != "after" {
		t.Errorf("echo after the restart: %v %v", rep, err)
	}
}

// TestD_SIGTERMDrainsThenStopsEveryChild: SIGTERM to relay bridge lets the calls in flight
// finish, stops every child, and exits 0; no child process is left.
func TestD_SIGTERMDrainsThenStopsEveryChild(t *testing.T) {
	echo := echoBin(t)
	relay := startRelay(t, []string{"--pool", "3"}, echo)
	kids := waitChildren(t, relay.pid(), 3, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const n = 6
	var wg sync.WaitGroup
	var started sync.WaitGroup
	errs := make(chan error, n)
	before := map[int]ioCounters{}
	for _, k := range kids {
		before[k.PID] = readIO(t, k.PID)
	}
	started.Add(n)
	for i := range n {
		wg.Go(func() {
			started.Done()
			rep, err := relay.call(ctx, i+1, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 800}})
			if err != nil || rep.Error != nil || rep.text() != "slept 800 ms" {
				errs <- fmt.Errorf("call %d in flight at SIGTERM: %v %v", i, rep, err)
			}
		})
	}
	started.Wait()
	// The calls are in flight once the children have read them.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var read int64
		for _, k := range kids {
			read += readIO(t, k.PID).rchar - before[k.PID].rchar
		}
		if read > 0 {
			time.Sleep(100 * time.Millisecond) // let the rest arrive
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no child read a call within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}

	start := time.Now()
	if err := relay.stop(t, 30*time.Second); err != nil {
		t.Errorf("relay bridge exited with %v after SIGTERM, want exit code 0", err)
	}
	t.Logf("relay bridge exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, k := range kids {
		if alive(k) {
			t.Errorf("child %d (%s) still runs after relay bridge exited", k.PID, k.Comm)
		}
	}
	if left := processesOf(echo); len(left) > 0 {
		t.Errorf("processes of %s still run after relay bridge exited: %v", echo, left)
	}
}

func pids(ps []proc.Stat) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.PID)
	}
	slices.Sort(out)
	return out
}

// processesOf returns the pids of the running processes whose executable is path.
func processesOf(path string) []int {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		exe, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err == nil && exe == path {
			var pid int
			fmt.Sscan(e.Name(), &pid)
			out = append(out, pid)
		}
	}
	return out
}
