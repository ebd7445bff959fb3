package bridge_test

// Linux only: the tests watch the bridge's children through /proc (children_linux_test.go).

// Initialize-generation sessions on children of that generation: each session has a child
// process of its own (MCP 2025-11-25, Transports › Session Management), claimed from the warm
// spares and initialized with the client's own initialize, and stopped when the session ends.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/bridge"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/proc"
	"github.com/relayrt/relay/supervise"
)

// legacySession is one initialize-generation session of a test, on plain net/http.
type legacySession struct {
	t       *testing.T
	r       *relayProc
	id      string
	version string
	next    int
}

// openLegacy initializes a session as client name, with the capabilities given (JSON).
func openLegacy(t *testing.T, r *relayProc, name, caps string) *legacySession {
	t.Helper()
	status, sid, msg := legacyPost(t, r, "", "", fmt.Sprintf(
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":%s,"clientInfo":{"name":%q,"version":"1"}}}`, caps, name))
	if status != http.StatusOK || msg["result"] == nil || sid == "" {
		t.Fatalf("initialize of %s: HTTP %d, session %q, %s", name, status, sid, fmtMsg(msg))
	}
	s := &legacySession{t: t, r: r, id: sid, version: "2025-11-25"}
	if status, _, msg := legacyPost(t, r, sid, s.version, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d %s", status, fmtMsg(msg))
	}
	return s
}

// tool calls a tool of the legacy child and returns its text.
func (s *legacySession) tool(name string, args string) string {
	s.t.Helper()
	s.next++
	status, _, msg := legacyPost(s.t, s.r, s.id, s.version, fmt.Sprintf(
		`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, s.next, name, args))
	var res struct{ Content []struct{ Text string } }
	if status != http.StatusOK || json.Unmarshal(msg["result"], &res) != nil || len(res.Content) != 1 {
		s.t.Fatalf("tools/call %s: HTTP %d, %s", name, status, fmtMsg(msg))
	}
	return res.Content[0].Text
}

func (s *legacySession) pid() int {
	s.t.Helper()
	pid, err := strconv.Atoi(s.tool("whoami", "{}"))
	if err != nil {
		s.t.Fatal(err)
	}
	return pid
}

// del ends the session with DELETE.
func (s *legacySession) del() {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, s.r.url, nil)
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("MCP-Protocol-Version", s.version)
	resp, err := s.r.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("DELETE: HTTP %d", resp.StatusCode)
	}
}

// waitGone waits until process pid has exited.
func waitGone(t *testing.T, pid int, within time.Duration, what string) {
	t.Helper()
	p, ok := proc.Read(pid)
	if !ok {
		return
	}
	deadline := time.Now().Add(within)
	for alive(p) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: child %d still runs %v later", what, pid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func legacyChildCommand(t *testing.T) string {
	t.Setenv(legacyChildEnv, "1") // inherited by relay, and by the children it starts
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// TestB2_EachLegacySessionHasAChildOfItsOwn: `relay bridge --pool 1 --spares 2` in front of a
// child that speaks only the initialize generation. Before any session there are the pool's
// child and two spares; each session is served by a process of its own, which was given
// nothing before that client's initialize (a spare is spawned, not initialized), and saw the
// client's own clientInfo and capabilities; the spares are made up again; DELETE stops the
// session's child.
func TestB2_EachLegacySessionHasAChildOfItsOwn(t *testing.T) {
	r := startRelay(t, []string{"--pool", "1", "--spares", "2"}, legacyChildCommand(t))
	waitChildren(t, r.pid(), 3, 30*time.Second) // the pool's one and two spares

	a := openLegacy(t, r, "client-a", `{"sampling":{},"roots":{"listChanged":true}}`)
	b := openLegacy(t, r, "client-b", `{}`)
	pidA, pidB := a.pid(), b.pid()
	if pidA == pidB {
		t.Fatalf("both sessions were served by process %d; each has its own", pidA)
	}
	for range 3 { // every call of a session goes to its own child
		if p := a.pid(); p != pidA {
			t.Fatalf("session A was served by %d, then %d", pidA, p)
		}
	}
	for _, c := range []struct {
		s    *legacySession
		name string
		caps string
	}{{a, "client-a", `{"sampling":{},"roots":{"listChanged":true}}`}, {b, "client-b", `{}`}} {
		var seen struct {
			Initialize struct {
				Capabilities json.RawMessage
				ClientInfo   struct{ Name string }
			}
			Methods []string
		}
		raw := c.s.tool("seen", "{}")
		if err := json.Unmarshal([]byte(raw), &seen); err != nil {
			t.Fatal(err)
		}
		if seen.Initialize.ClientInfo.Name != c.name || compactJSON(seen.Initialize.Capabilities) != compactJSON(json.RawMessage(c.caps)) {
			t.Errorf("%s's child was initialized with %s; want its client's own clientInfo and capabilities %s", c.name, raw, c.caps)
		}
		if len(seen.Methods) < 2 || seen.Methods[0] != "initialize" || seen.Methods[1] != "notifications/initialized" {
			t.Errorf("%s's child was sent %v; want the client's initialize first, then notifications/initialized", c.name, seen.Methods)
		}
	}
	waitChildren(t, r.pid(), 5, 30*time.Second) // the two spares made up again

	a.del()
	waitGone(t, pidA, 30*time.Second, "DELETE of session A")
	waitChildren(t, r.pid(), 4, 30*time.Second)
	if p := b.pid(); p != pidB {
		t.Fatalf("session B was served by %d, then %d after A's end", pidB, p)
	}
	if status, _, msg := legacyPost(t, r, a.id, a.version, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); status != http.StatusNotFound {
		t.Errorf("a request of the deleted session: HTTP %d %s, want 404", status, fmtMsg(msg))
	}
}

func compactJSON(raw json.RawMessage) string {
	var v any
	json.Unmarshal(raw, &v)
	b, _ := json.Marshal(v)
	return string(b)
}

// TestB2_MaxSessionsBoundsTheChildren: `--max-sessions 2 --spares 0`. With two sessions busy,
// a third initialize is refused (503) with an error that says every session is busy; once
// they are idle, a third session takes the place of the one idle longest (A or B: their
// calls ended together), whose child is stopped.
func TestB2_MaxSessionsBoundsTheChildren(t *testing.T) {
	r := startRelay(t, []string{"--pool", "1", "--spares", "0", "--max-sessions", "2"}, legacyChildCommand(t))
	waitChildren(t, r.pid(), 1, 30*time.Second)
	a := openLegacy(t, r, "client-a", `{}`)
	pidA := a.pid()
	b := openLegacy(t, r, "client-b", `{}`)
	pidB := b.pid()

	var wg sync.WaitGroup
	for _, s := range []*legacySession{a, b} {
		s.next++
		id := s.next
		wg.Go(func() { // each session busy for 5 s
			legacyPost(t, r, s.id, s.version, fmt.Sprintf(
				`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":5000}}}`, id))
		})
	}
	time.Sleep(1500 * time.Millisecond) // the calls have reached the sessions (generous: a loaded machine)
	status, _, msg := legacyPost(t, r, "", "",
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"client-c","version":"1"}}}`)
	if status != http.StatusServiceUnavailable || !strings.Contains(string(msg["error"]), "busy") {
		t.Errorf("a third session while two are busy: HTTP %d %s; want 503 and an error that says every session is busy", status, fmtMsg(msg))
	}
	wg.Wait()

	c := openLegacy(t, r, "client-c", `{}`)
	if p := c.pid(); p == pidA || p == pidB {
		t.Fatalf("session C was served by the child %d of another session", p)
	}
	kids := waitChildren(t, r.pid(), 3, 30*time.Second) // the pool's, and two sessions'
	evicted, kept := a, pidB
	if slices.ContainsFunc(kids, func(k proc.Stat) bool { return k.PID == pidA }) {
		evicted, kept = b, pidA
	}
	if !slices.ContainsFunc(kids, func(k proc.Stat) bool { return k.PID == kept }) {
		t.Fatalf("children %+v: both A's %d and B's %d are gone; one session was to make room", kids, pidA, pidB)
	}
	if status, _, _ := legacyPost(t, r, evicted.id, evicted.version, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); status != http.StatusNotFound {
		t.Errorf("a request of the evicted session: HTTP %d, want 404", status)
	}
}

// TestB2_IdleSessionEndsAndItsChildStops: `--session-idle 1s`: a session unused that long
// ends, and its child is stopped.
func TestB2_IdleSessionEndsAndItsChildStops(t *testing.T) {
	r := startRelay(t, []string{"--pool", "1", "--spares", "0", "--session-idle", "1s"}, legacyChildCommand(t))
	a := openLegacy(t, r, "client-a", `{}`)
	pid := a.pid()
	waitGone(t, pid, 30*time.Second, "the idle timeout of session A")
	if status, _, _ := legacyPost(t, r, a.id, a.version, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); status != http.StatusNotFound {
		t.Errorf("a request of the expired session: HTTP %d, want 404", status)
	}
}

// TestB2_CloseStopsEverySessionsChild embeds the bridge over legacy children: Close stops the
// pool, the spare and the children of sessions still open, and returns once all have exited.
func TestB2_CloseStopsEverySessionsChild(t *testing.T) {
	exe := legacyChildCommand(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bridge.New(ctx, bridge.Options{Pool: 1, MaxSessions: 4, Spares: 1, Spec: supervise.Spec{
		Command: supervise.Command{Path: exe, Env: append(os.Environ(), legacyChildEnv+"=1", "GORACE=atexit_sleep_ms=0"), Name: "legacy"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := httpx.NewMCPProfileHandler(b.Profile(), nil, nil)
	srv := httptest.NewServer(h)
	r := &relayProc{url: srv.URL + "/mcp", client: srv.Client()}
	var pids []int
	for i := range 2 {
		s := openLegacy(t, r, fmt.Sprintf("client-%d", i), `{}`)
		pids = append(pids, s.pid())
	}
	// The pool's, the spare, two sessions': a session takes the spare and the bridge starts
	// the next one on its own time, so the fourth child may still be starting.
	kids := proc.Supervised(os.Getpid())
	for deadline := time.Now().Add(15 * time.Second); len(kids) < 4 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		kids = proc.Supervised(os.Getpid())
	}
	if len(kids) < 4 {
		t.Errorf("the test process has %d children, want at least 4: %+v", len(kids), kids)
	}
	srv.Close()
	b.Close() // before the handler: the sessions still hold their children
	h.Close()
	for _, k := range kids {
		if alive(k) {
			t.Errorf("child %d (%s) still runs after Close", k.PID, k.Comm)
		}
	}
	for _, pid := range pids {
		if p, ok := proc.Read(pid); ok && p.Alive() {
			t.Errorf("session child %d still runs after Close", pid)
		}
	}
}
