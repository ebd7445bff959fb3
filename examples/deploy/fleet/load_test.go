//go:build unix

package fleet

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp/client"
)

// worker is one client of a load: its own connection (an initialize-generation session, or a
// 2026-07-28 client) calling tools in a loop through nginx.
type worker struct {
	name string
	c    *client.Client
	rec  *recorder // its HTTP requests
	ok   int
	errs []string // what failed, when (ms from the start of the load), how
}

// call makes one tool call, alternating a quick answer (JSON) and a call that streams progress
// for about 150 ms (SSE), so that calls are in flight on every instance at any moment.
func (w *worker) call(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if i%2 == 0 {
		_, err := w.c.CallTool(ctx, "test_simple_text", map[string]any{})
		return err
	}
	_, err := w.c.CallTool(ctx, "test_tool_with_progress", map[string]any{}, client.WithProgress(func(client.Progress) {}))
	return err
}

// connectWorkers connects n clients of each generation through the fleet's nginx.
func connectWorkers(ctx context.Context, t *testing.T, f *fleet, legacy, modern int) []*worker {
	t.Helper()
	var ws []*worker
	for i := range legacy + modern {
		tr := client.HTTP(f.url)
		base := http.DefaultTransport.(*http.Transport).Clone()
		t.Cleanup(base.CloseIdleConnections)
		rec := &recorder{base: base}
		tr.Client = &http.Client{Transport: rec}
		opts := []client.Option{client.WithVersion("2025-11-25")}
		name := fmt.Sprintf("legacy-%d", i)
		if i >= legacy {
			opts, name = nil, fmt.Sprintf("modern-%d", i-legacy)
		}
		c, err := client.Connect(ctx, tr, opts...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { c.Close() })
		ws = append(ws, &worker{name: name, c: c, rec: rec})
	}
	return ws
}

// load runs every worker's loop until ctx ends, calling during (at its offset from the
// start) while the load runs. It returns when during returned, in ms from the start (the
// failures' times are too).
func load(ctx context.Context, ws []*worker, during func(), at time.Duration) (doneAt int64) {
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				err := w.call(ctx, i)
				switch {
				case err == nil:
					w.ok++
				case ctx.Err() != nil: // the load's end, not a failure
				default:
					w.errs = append(w.errs, fmt.Sprintf("%s at %d ms: %v", w.name, time.Since(start).Milliseconds(), err))
					time.Sleep(50 * time.Millisecond) // as a client that retries would
				}
			}
		})
	}
	select {
	case <-time.After(at):
		during()
		doneAt = time.Since(start).Milliseconds()
	case <-ctx.Done():
	}
	wg.Wait()
	return doneAt
}

// summary counts the calls that worked and lists the failures.
func summary(ws []*worker) (ok int, failures []string) {
	for _, w := range ws {
		ok += w.ok
		failures = append(failures, w.errs...)
	}
	sort.Strings(failures)
	return ok, failures
}

// kinds groups failures by their message (without the worker and the time, the message cut
// at 160 bytes), with how many there were of each.
func kinds(failures []string) map[string]int {
	out := map[string]int{}
	for _, e := range failures {
		_, msg, _ := strings.Cut(e, " ms: ")
		out[msg]++
	}
	return out
}

// TestKillOneInstanceUnderLoad SIGKILLs instance b while eight clients (six
// initialize-generation sessions, two 2026-07-28 clients) call tools in a loop through nginx
// round-robin. The other instances carry on and nginx stops sending to b (connect refused:
// it passes the request to the next instance); no session is lost: every client's next calls
// succeed, the sessions b served included. Only a call in flight on b when it dies may fail,
// at most one per client. Measured (2026-12-02, five runs): 370-417 calls succeed in the 5 s,
// 0-3 fail, all within 30 ms of the kill, in two ways: a 2025-11-25 call whose POST b held
// gets nginx's 502 Bad Gateway page ("mcp/client: HTTP 502: <html>…"; nginx does not send a
// POST that reached an instance to another, as it may have run there), and a 2026-07-28 call
// whose event stream b had begun ends with "mcp/client: the server closed the event stream
// of tools/call before answering" (2026-07-28 has no resumption). Both are safe to retry for
// an idempotent tool.
func TestKillOneInstanceUnderLoad(t *testing.T) {
	ctx := ctxFor(t, 3*time.Minute)
	f := startFleet(t)
	ws := connectWorkers(ctx, t, f, 6, 2)
	lctx, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	load(lctx, ws, f.instances["b"].kill, 2*time.Second)
	ok, failures := summary(ws)
	t.Logf("%d calls succeeded, %d failed; b was killed 2000 ms into the 5 s load", ok, len(failures))
	for _, e := range failures {
		t.Logf("failed: %s", e)
	}
	if ok == 0 {
		t.Fatal("no call succeeded")
	}
	if len(failures) > len(ws) { // at most the calls in flight on b, one per client
		t.Errorf("%d calls failed: more than the %d that can have been in flight on b", len(failures), len(ws))
	}
	// No session is lost: every client's next calls work, on a and c.
	for _, w := range ws {
		for i := range 4 {
			if err := w.call(ctx, i); err != nil {
				t.Errorf("%s after b died, call %d: %v", w.name, i, err)
			}
		}
	}
}

// sessions returns the session ids w's requests carried, in the order first seen, and how
// many answers were 404 Not Found.
func (w *worker) sessions() (ids []string, notFound int) {
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	for _, h := range w.rec.hops {
		if h.session != "" && !slices.Contains(ids, h.session) {
			ids = append(ids, h.session)
		}
		if h.status == http.StatusNotFound {
			notFound++
		}
	}
	return ids, notFound
}
