package httpx_test

// A fleet's session state changed through several instances (MCPOptions.SessionStore): each
// revision is kept only over the one before it, so that a failed or a simultaneous save is
// refused and retried rather than lost or kept by one replica only, and a deleted session is
// never written back. These tests failed before revisions were kept that way.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
)

// flakyStore is a SessionStore whose Put can be made to fail or to wait.
type flakyStore struct {
	*httpx.MemorySessionStore
	fail  atomic.Bool
	mu    sync.Mutex
	delay chan struct{} // when set, Put waits for it to close (after doing nothing yet)
	putIn chan struct{} // signalled when a delayed Put is waiting
}

func (s *flakyStore) Put(ctx context.Context, id string, rev uint64, rec []byte, ttl time.Duration) (bool, error) {
	if s.fail.Load() {
		return false, errors.New("store down")
	}
	s.mu.Lock()
	d, in := s.delay, s.putIn
	s.mu.Unlock()
	if d != nil {
		in <- struct{}{}
		<-d
	}
	return s.MemorySessionStore.Put(ctx, id, rev, rec, ttl)
}

type rvInst struct {
	url string
	h   *httpx.MCPHandler
}

func reviewFleet(t *testing.T, n int, store httpx.SessionStore, o func(*httpx.MCPOptions)) []rvInst {
	t.Helper()
	bus := mcp.NewMemoryBus()
	events := httpx.NewMemoryEventStore(0, 0, 0)
	var out []rvInst
	for i := range n {
		s := mcp.NewServer(mcp.Implementation{Name: "rv", Version: "1"}, &mcp.ServerOptions{Bus: bus, Logger: zap.NewNop()})
		mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "log"},
			func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
				req.Log(mcp.LevelInfo, "fleet", "INFO-LINE")
				req.Log(mcp.LevelError, "fleet", "ERROR-LINE")
				return mcp.TextResult("ok"), nil
			})
		mo := &httpx.MCPOptions{SessionStore: store, EventStore: events, Bus: bus, Instance: string(rune('a' + i)), Logger: zap.NewNop()}
		if o != nil {
			o(mo)
		}
		h := httpx.NewMCPHandler(s, mo)
		srv := httptest.NewServer(h)
		t.Cleanup(func() { srv.Close(); h.Close(); s.Close() })
		out = append(out, rvInst{url: srv.URL + "/mcp", h: h})
	}
	return out
}

func rvDo(t *testing.T, method, url, sid, body string) (int, string, http.Header) {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1, err.Error(), nil // the caller's check fails with it (this may run off the test's goroutine)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func rvInit(t *testing.T, url string) string {
	t.Helper()
	st, body, hdr := rvDo(t, "POST", url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if st != 200 {
		t.Fatalf("initialize: %d %s", st, body)
	}
	sid := hdr.Get("Mcp-Session-Id")
	if st, body, _ := rvDo(t, "POST", url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); st != 202 {
		t.Fatalf("initialized: %d %s", st, body)
	}
	return sid
}

func setLevel(t *testing.T, url, sid, level string) (int, string) {
	st, body, _ := rvDo(t, "POST", url, sid, `{"jsonrpc":"2.0","id":"lvl-`+level+`","method":"logging/setLevel","params":{"level":"`+level+`"}}`)
	return st, body
}

// A save that failed on A must not cost A a revision: the state B saves next is taken on A.
func TestFleet_AFailedSaveLeavesTheNextChangeToHold(t *testing.T) {
	store := &flakyStore{MemorySessionStore: httpx.NewMemorySessionStore()}
	f := reviewFleet(t, 2, store, nil)
	A, B := f[0].url, f[1].url
	sid := rvInit(t, A)
	if st, body := setLevel(t, A, sid, "error"); st != 200 || strings.Contains(body, `"error":{`) {
		t.Fatalf("setLevel error on A: %d %s", st, body)
	}
	// B takes the session up (rev 2: level error).
	if st, body, _ := rvDo(t, "POST", B, sid, `{"jsonrpc":"2.0","id":"p1","method":"ping"}`); st != 200 {
		t.Fatalf("ping on B: %d %s", st, body)
	}
	store.fail.Store(true)
	st, body := setLevel(t, A, sid, "emergency") // fails: A rolls back to error, but its rev is now 3
	t.Logf("failing setLevel on A: %d %s", st, body)
	store.fail.Store(false)
	if st, body := setLevel(t, B, sid, "debug"); st != 200 || strings.Contains(body, `"error":{`) {
		t.Fatalf("setLevel debug on B: %d %s", st, body)
	}
	time.Sleep(100 * time.Millisecond)
	_, body, _ = rvDo(t, "POST", A, sid, `{"jsonrpc":"2.0","id":"call","method":"tools/call","params":{"name":"log","arguments":{}}}`)
	if !strings.Contains(body, "INFO-LINE") {
		t.Errorf("the client's last setLevel (debug, through B) does not hold on A: the info log was filtered out\n%s", body)
	}
}

// A save in flight when the client DELETEs the session through another instance must not
// write the record back: the deleted session stays deleted.
func TestFleet_ADeletedSessionStaysDeleted(t *testing.T) {
	store := &flakyStore{MemorySessionStore: httpx.NewMemorySessionStore()}
	f := reviewFleet(t, 3, store, nil)
	A, B, C := f[0].url, f[1].url, f[2].url
	sid := rvInit(t, A)
	rvDo(t, "POST", B, sid, `{"jsonrpc":"2.0","id":"p1","method":"ping"}`) // B holds a replica
	release := make(chan struct{})
	store.mu.Lock()
	store.delay, store.putIn = release, make(chan struct{}, 1)
	store.mu.Unlock()
	done := make(chan int, 1)
	go func() { st, _ := setLevel(t, B, sid, "debug"); done <- st }()
	<-store.putIn // B's save is on its way
	store.mu.Lock()
	store.delay = nil
	store.mu.Unlock()
	if st, body, _ := rvDo(t, "DELETE", A, sid, ""); st != 204 {
		t.Fatalf("DELETE: %d %s", st, body)
	}
	close(release)
	<-done
	st, body, _ := rvDo(t, "POST", C, sid, `{"jsonrpc":"2.0","id":"p2","method":"ping"}`)
	if st != 404 {
		t.Errorf("a session deleted (204) is served again: %d %s", st, body)
	}
}

// Two saves made at once through two instances: one is kept and the other refused, and the
// replicas agree afterwards.
func TestFleet_SimultaneousSavesLeaveOneState(t *testing.T) {
	store := &flakyStore{MemorySessionStore: httpx.NewMemorySessionStore()}
	f := reviewFleet(t, 2, store, nil)
	A, B := f[0].url, f[1].url
	sid := rvInit(t, A)
	rvDo(t, "POST", B, sid, `{"jsonrpc":"2.0","id":"p1","method":"ping"}`)
	release := make(chan struct{})
	store.mu.Lock()
	store.delay, store.putIn = release, make(chan struct{}, 2)
	store.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); setLevel(t, A, sid, "debug") }()
	go func() { defer wg.Done(); setLevel(t, B, sid, "error") }()
	<-store.putIn
	<-store.putIn
	store.mu.Lock()
	store.delay = nil
	store.mu.Unlock()
	close(release)
	wg.Wait()
	time.Sleep(100 * time.Millisecond)
	call := `{"jsonrpc":"2.0","id":"call","method":"tools/call","params":{"name":"log","arguments":{}}}`
	for range 3 { // later requests, one after the other: still no convergence
		_, a, _ := rvDo(t, "POST", A, sid, call)
		_, b, _ := rvDo(t, "POST", B, sid, call)
		if strings.Contains(a, "INFO-LINE") != strings.Contains(b, "INFO-LINE") {
			t.Errorf("A and B disagree on the session's log level (A info=%v, B info=%v)", strings.Contains(a, "INFO-LINE"), strings.Contains(b, "INFO-LINE"))
		}
	}
}

// An instance's name is part of its streams' names, up to their first dash: in a fleet, a
// name that is not letters and digits is refused at once.
func TestFleet_AnInstanceNameOfLettersAndDigits(t *testing.T) {
	s := mcp.NewServer(mcp.Implementation{Name: "rv", Version: "1"}, nil)
	defer s.Close()
	defer func() {
		if recover() == nil {
			t.Error("a fleet instance named web-2 was taken")
		}
	}()
	httpx.NewMCPHandler(s, &httpx.MCPOptions{SessionStore: httpx.NewMemorySessionStore(), Instance: "web-2"})
}

// A Last-Event-ID that names no stream of the fleet's is refused at once: no instance is asked
// to follow it.
func TestFleet_AResumptionOfNoStreamAsksNoInstance(t *testing.T) {
	bus := mcp.NewMemoryBus()
	f := reviewFleet(t, 1, httpx.NewMemorySessionStore(), func(o *httpx.MCPOptions) { o.Bus = bus })
	sid := rvInit(t, f[0].url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heard, err := bus.Subscribe(ctx, "httpx/sessions")
	if err != nil {
		t.Fatal(err)
	}
	for _, last := range []string{"zzz-garbage.3", "p3.1", "zzz-px.2"} {
		req, _ := http.NewRequest("GET", f[0].url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Last-Event-ID", last)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("Last-Event-ID %q: %d, want 404", last, resp.StatusCode)
		}
	}
	select {
	case m := <-heard:
		t.Fatalf("an instance was asked to follow a stream that is none: %q", m)
	default:
	}
}
