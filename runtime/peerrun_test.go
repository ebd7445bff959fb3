package runtime_test

import (
	"encoding/json"
	"testing"

	"github.com/relayrt/relay/runtime"
)

// countingSession counts the notifications it is given: state that only the dispatcher's
// goroutine touches.
type countingSession struct{ n int }

func (s *countingSession) Route(*runtime.Request) runtime.Route {
	return runtime.Route{Result: json.RawMessage(`{}`)}
}
func (s *countingSession) Notification(string, json.RawMessage) { s.n++ }

// Peer.Run runs its function on the dispatcher's goroutine: it reads the state the Session's
// methods change without a lock (the race detector would see it otherwise), in order with
// them, and its notify reaches the peer.
func TestPeerRunRunsWhereTheSessionRuns(t *testing.T) {
	peers := make(chan *runtime.Peer, 1)
	ss := &countingSession{}
	p := profile(nil, false)
	p.NewSession = func(peer *runtime.Peer) runtime.Session { peers <- peer; return ss }
	c := dial(t, p)
	c.send(`{"jsonrpc":"2.0","method":"one"}`, `{"jsonrpc":"2.0","method":"two"}`, req(1, "sync"))
	c.next() // both notifications have been given to the session
	peer := <-peers
	seen := make(chan int, 1)
	if err := peer.Run(func(notify func(string, any) error) {
		seen <- ss.n
		notify("counted", map[string]int{"n": ss.n})
	}); err != nil {
		t.Fatal(err)
	}
	if n := <-seen; n != 2 {
		t.Errorf("Run saw %d notifications, want 2", n)
	}
	if m := c.next(); string(m["method"]) != `"counted"` || string(m["params"]) != `{"n":2}` {
		t.Errorf("Run's notification: %s", mustJSON(m))
	}
}

// A panic in Peer.Run's function is the function's alone: the connection goes on serving.
func TestPeerRunPanicDoesNotStopTheConnection(t *testing.T) {
	peers := make(chan *runtime.Peer, 1)
	p := profile(nil, false)
	p.NewSession = func(peer *runtime.Peer) runtime.Session { peers <- peer; return &countingSession{} }
	c := dial(t, p)
	c.send(req(1, "sync"))
	c.next()
	if err := (<-peers).Run(func(func(string, any) error) { panic("a bug in the session's work") }); err != nil {
		t.Fatal(err)
	}
	c.send(req(2, "sync"))
	if m := c.next(); string(m["id"]) != "2" {
		t.Fatalf("after the panic: %s", mustJSON(m))
	}
}
