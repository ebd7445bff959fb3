//go:build unix

package bridge_test

// Unix only: startRelay's cleanup stops relay bridge with SIGTERM, which Windows cannot send.

// Honest health: one request cannot take the pool down, and when the supervisors do give up,
// relay bridge says so (/readyz 503, an error that is not retryable, and with
// --exit-on-give-up an exit status of 1).

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// readyz returns the status of relay's /readyz.
func (r *relayProc) readyz(t *testing.T) int {
	t.Helper()
	resp, err := r.client.Get(strings.TrimSuffix(r.url, "/mcp") + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func errData(t *testing.T, rep rpcReply) map[string]any {
	t.Helper()
	var data map[string]any
	if rep.Error == nil || json.Unmarshal(rep.Error.Data, &data) != nil {
		t.Fatalf("want an error with data, got %v", rep)
	}
	return data
}

// TestD_OneRequestCannotTakeThePoolDown: a read-only tool call that kills every child it
// reaches, among concurrent innocent calls, through `relay bridge --pool 2`. Each child's
// proxy replays it (it is annotated safe to repeat) until it has been alone in flight at a
// death, then answers it with an error that says it crashes the server and never sends it
// again; every innocent call is answered, the pool stays up, and /readyz says ready
// throughout.
func TestD_OneRequestCannotTakeThePoolDown(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(childEnv, "1")
	r := startRelay(t, []string{"--pool", "2", "--backoff", "10ms..50ms"}, self)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			rep, err := r.call(ctx, 100+i, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{"ms": 50}})
			if err != nil || rep.Error != nil || rep.text() == "" {
				t.Errorf("innocent call %d: %v %v", i, rep, err)
			}
		})
	}
	rep, err := r.call(ctx, 1, "tools/call", map[string]any{"name": "crash"})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if data := errData(t, rep); data["reason"] != "request crashes the server" || data["retryable"] != false {
		t.Errorf("the poison call: %v; want an error that says it crashes the server, not retryable", rep)
	}
	if code := r.readyz(t); code != http.StatusOK {
		t.Errorf("/readyz after the poison call: %d, want 200", code)
	}
	for i := range 4 {
		if rep, err := r.call(ctx, 200+i, "tools/call", map[string]any{"name": "whoami"}); err != nil || rep.Error != nil {
			t.Errorf("a call after the poison: %v %v", rep, err)
		}
	}
}

// giveUp runs relay bridge over one child that dies on the tool die, allowed one restart a
// minute, and kills it twice: the supervisor gives up.
func giveUp(t *testing.T, flags ...string) *relayProc {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(childEnv, "1")
	r := startRelay(t, append([]string{"--pool", "1", "--restart-limit", "1/1m", "--backoff", "10ms..20ms"}, flags...), self)
	if code := r.readyz(t); code != http.StatusOK {
		t.Fatalf("/readyz at the start: %d, want 200", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 2 {
		rep, err := r.call(ctx, i+1, "tools/call", map[string]any{"name": "die"})
		if err != nil || rep.Error == nil {
			t.Fatalf("die %d: %v %v; want an error", i, rep, err)
		}
	}
	return r
}

// TestD_GaveUpIsNotReadyAndNotRetryable: once the supervisor of the pool's only child has
// given up, /readyz answers 503 and every request an error that says relay stopped
// restarting the server, not retryable (it answered 503 "retry later", retryable, before).
func TestD_GaveUpIsNotReadyAndNotRetryable(t *testing.T) {
	r := giveUp(t)
	deadline := time.Now().Add(30 * time.Second)
	for r.readyz(t) != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatal("/readyz still answers 200 30 s after the supervisor gave up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rep, err := r.call(t.Context(), 10, "tools/call", map[string]any{"name": "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	data := errData(t, rep)
	if data["retryable"] != false || data["reason"] != "gave up" || strings.Contains(rep.Error.Message, "retry") ||
		rep.Status == http.StatusServiceUnavailable {
		t.Errorf("a request after the give-up: %v; want an error that says relay gave up, not retryable, not 503", rep)
	}
}

// TestD_ExitOnGiveUp: with --exit-on-give-up, relay bridge exits with status 1 once the
// supervisor has given up, for an orchestrator to restart it.
func TestD_ExitOnGiveUp(t *testing.T) {
	r := giveUp(t, "--exit-on-give-up")
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("relay bridge --exit-on-give-up still runs 30 s after the supervisor gave up")
	}
	if code := r.cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
}
