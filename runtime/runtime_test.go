package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testSession routes by method name to the handlers of a test.
type testSession struct {
	handlers map[string]runtime.Handler
	notes    chan string
}

func (s *testSession) Route(req *runtime.Request) runtime.Route {
	switch req.Method {
	case "now":
		return runtime.Route{Result: map[string]string{"answered": "at once"}}
	case "fail-now":
		return runtime.Route{Err: jsonrpc.Errorf(-32099, "refused")}
	case "shutdown":
		return runtime.Route{Result: json.RawMessage(`{}`), Shutdown: true}
	case "listen":
		return runtime.Route{Handler: func(ctx context.Context, r *runtime.Request) (any, error) {
			select {
			case <-r.Draining():
				return "stream ended", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}
	}
	if h, ok := s.handlers[req.Method]; ok {
		return runtime.Route{Handler: h}
	}
	return runtime.Route{Err: jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found")}
}

func (s *testSession) Notification(method string, params json.RawMessage) {
	if s.notes != nil {
		s.notes <- method
	}
}

// profile returns a test profile; answered says whether cancelled requests are answered
// (RCP's rule) or not (MCP's).
func profile(handlers map[string]runtime.Handler, answered bool) runtime.Profile {
	p := runtime.Profile{
		CancelMethod: "cancel",
		CancelTarget: func(params json.RawMessage) (jsonrpc.ID, bool) {
			id := jsonrpc.Field(params, "id")
			return id, jsonrpc.IsRequestID(id)
		},
		FrameTooLarge: func(limit int) *jsonrpc.Error { return jsonrpc.Errorf(-32013, "too large") },
		Overloaded: func(retry time.Duration) *jsonrpc.Error {
			return &jsonrpc.Error{Code: -32011, Message: "busy", Data: map[string]int64{"retryAfterMs": retry.Milliseconds()}}
		},
		Abandoned:  jsonrpc.Errorf(-32010, "shutting down"),
		NewSession: func(*runtime.Peer) runtime.Session { return &testSession{handlers: handlers} },
	}
	if answered {
		p.Cancelled = jsonrpc.Errorf(-32006, "cancelled")
		p.NullID = true
		p.Batches = true
	}
	return p
}

// conn is one connection to a server under test, driven through its channels.
type conn struct {
	t    *testing.T
	in   chan runtime.Inbound
	out  chan []byte
	done chan error
	stop context.CancelFunc
}

func dial(t *testing.T, p runtime.Profile, opts ...runtime.Option) *conn {
	t.Helper()
	opts = append([]runtime.Option{runtime.WithLogger(zap.NewNop())}, opts...)
	srv := runtime.NewServer(p, opts...)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "serve"))
	c := &conn{t: t, in: make(chan runtime.Inbound, 16), out: make(chan []byte, 4096), done: make(chan error, 1), stop: cancel}
	go func() { c.done <- srv.Serve(ctx, c.in, c.out) }()
	t.Cleanup(func() {
		c.closeInput()
		cancel()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Error("the dispatcher did not stop")
		}
	})
	return c
}

func (c *conn) send(frames ...string) {
	for _, f := range frames {
		c.in <- runtime.Inbound{Frame: []byte(f)}
	}
}

var closed sync.Map

func (c *conn) closeInput() {
	if _, loaded := closed.LoadOrStore(c, true); !loaded {
		close(c.in)
	}
}

// next returns the next frame the server wrote, failing after a generous wait.
func (c *conn) next() map[string]json.RawMessage {
	c.t.Helper()
	select {
	case f, ok := <-c.out:
		if !ok {
			c.t.Fatal("the connection closed; wanted another frame")
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(f, &m); err != nil {
			c.t.Fatalf("frame is not a JSON object: %q", f)
		}
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("no frame within 10 s")
	}
	return nil
}

// quiet asserts that no frame is written before the connection's output closes.
func (c *conn) rest() [][]byte {
	var frames [][]byte
	for f := range c.out {
		frames = append(frames, f)
	}
	return frames
}

func errCode(m map[string]json.RawMessage) int64 {
	var e jsonrpc.Error
	json.Unmarshal(m["error"], &e)
	return e.Code
}

func req(id any, method string) string {
	idj, _ := json.Marshal(id)
	if s, ok := id.(json.RawMessage); ok {
		idj = s
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{}}`, idj, method)
}

func TestConcurrency_AllHandlersRunAtOnce(t *testing.T) {
	// Proven without clocks: each handler waits at a barrier that opens only when all N
	// handlers have started. A dispatcher that ran them one at a time would never answer.
	const n = 200
	var arrived sync.WaitGroup
	arrived.Add(n)
	barrier := make(chan struct{})
	go func() { arrived.Wait(); close(barrier) }()
	c := dial(t, profile(map[string]runtime.Handler{
		"wait": func(ctx context.Context, r *runtime.Request) (any, error) {
			arrived.Done()
			<-barrier
			return "ok", nil
		},
	}, false))
	for i := range n {
		c.send(req(i, "wait"))
	}
	seen := map[string]bool{}
	for range n {
		m := c.next()
		seen[string(m["id"])] = true
	}
	if len(seen) != n {
		t.Fatalf("got %d distinct answers, want %d", len(seen), n)
	}
}

func TestBudget_RequestsOverTheCountRefusedAtOnceAndServedOnceFreed(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	c := dial(t, profile(map[string]runtime.Handler{
		"block": func(ctx context.Context, r *runtime.Request) (any, error) {
			started <- struct{}{}
			<-release
			return "done", nil
		},
	}, false), runtime.WithBudget(2, 0), runtime.WithRetryAfter(250*time.Millisecond))
	c.send(req(1, "block"), req(2, "block"))
	<-started
	<-started
	c.send(req(3, "block")) // a third would exceed the budget: refused at once, not queued
	m := c.next()
	if string(m["id"]) != "3" || errCode(m) != -32011 {
		t.Fatalf("want id 3 refused with the overload error, got %s", mustJSON(m))
	}
	if !strings.Contains(string(m["error"]), `"retryAfterMs":250`) {
		t.Errorf("overload error does not say when to retry: %s", m["error"])
	}
	// A request answered at once holds nothing, so it is answered even with the budget spent.
	c.send(req(5, "now"))
	if m := c.next(); string(m["id"]) != "5" || m["result"] == nil {
		t.Fatalf("want id 5 answered while the budget is spent, got %s", mustJSON(m))
	}
	release <- struct{}{} // one of 1 and 2 finishes
	if m := c.next(); (string(m["id"]) != "1" && string(m["id"]) != "2") || m["result"] == nil {
		t.Fatalf("want 1 or 2 answered, got %s", mustJSON(m))
	}
	c.send(req(4, "block")) // the freed place is taken by the next request
	<-started
	close(release)
	ids := map[string]bool{}
	for range 2 {
		m := c.next()
		if m["result"] == nil {
			t.Fatalf("want results, got %s", mustJSON(m))
		}
		ids[string(m["id"])] = true
	}
	if !ids["4"] {
		t.Fatalf("request 4, sent after a place freed, was not served: %v", ids)
	}
}

func TestBudget_FrameBytesOverTheBudgetRefusedAtOnceAndServedOnceFreed(t *testing.T) {
	// Bytes are counted, not requests: with room for one large frame, a second large one is
	// refused while small ones still start, and once the large one finishes the next is served.
	bigRelease, release := make(chan struct{}), make(chan struct{})
	started := make(chan string, 10)
	c := dial(t, profile(map[string]runtime.Handler{
		"big": func(ctx context.Context, r *runtime.Request) (any, error) {
			started <- string(r.ID)
			<-bigRelease
			return "big done", nil
		},
		"small": func(ctx context.Context, r *runtime.Request) (any, error) {
			started <- string(r.ID)
			<-release
			return "small done", nil
		},
	}, false), runtime.WithBudget(0, 1000))
	big := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"big","params":{"pad":%q}}`, id, strings.Repeat("x", 560))
	}
	c.send(big(1))
	if id := <-started; id != "1" {
		t.Fatalf("started %s, want 1", id)
	}
	c.send(big(2)) // 2 × ~600 bytes > 1000
	if m := c.next(); string(m["id"]) != "2" || errCode(m) != -32011 {
		t.Fatalf("want the second large frame refused with the overload error, got %s", mustJSON(m))
	}
	c.send(req(3, "small"), req(4, "small"))
	for range 2 {
		if id := <-started; id != "3" && id != "4" {
			t.Fatalf("started %s, want 3 or 4", id)
		}
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"small","params":{"pad":%q}}`, strings.Repeat("x", 1000)))
	if m := c.next(); string(m["id"]) != "5" || errCode(m) != -32011 {
		t.Fatalf("want a frame longer than the whole budget refused, got %s", mustJSON(m))
	}
	bigRelease <- struct{}{}
	if m := c.next(); string(m["id"]) != "1" || m["result"] == nil {
		t.Fatalf("want 1 answered, got %s", mustJSON(m))
	}
	c.send(big(6))
	if id := <-started; id != "6" {
		t.Fatalf("started %s, want 6: the large frame after the first one finished", id)
	}
	close(bigRelease)
	close(release)
	ids := map[string]bool{}
	for range 3 {
		m := c.next()
		if m["result"] == nil {
			t.Fatalf("want results, got %s", mustJSON(m))
		}
		ids[string(m["id"])] = true
	}
	if !ids["3"] || !ids["4"] || !ids["6"] {
		t.Fatalf("answered %v, want 3, 4 and 6", ids)
	}
}

func TestBudget_BatchMembersCountedEachAtItsOwnLength(t *testing.T) {
	// Each member of a batch in flight holds a copy of its own bytes, not the whole batch, and
	// is counted for that: a batch longer than the budget still runs the members that fit,
	// and the member over the budget is refused inside the batch's answer.
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	c := dial(t, profile(map[string]runtime.Handler{
		"block": func(ctx context.Context, r *runtime.Request) (any, error) {
			started <- struct{}{}
			<-release
			return "done", nil
		},
	}, true), runtime.WithBudget(0, 2*len(req(1, "block"))+10))
	batch := "[" + req(1, "block") + "," + req(2, "block") + "," + req(3, "block") + "]"
	c.send(batch)
	<-started
	<-started
	close(release)
	var answers []map[string]json.RawMessage
	select {
	case f := <-c.out:
		if err := json.Unmarshal(f, &answers); err != nil {
			t.Fatalf("batch answer %q: %v", f, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no batch answer")
	}
	got := map[string]int64{}
	for _, m := range answers {
		got[string(m["id"])] = errCode(m)
	}
	if len(got) != 3 || got["1"] != 0 || got["2"] != 0 || got["3"] != -32011 {
		t.Fatalf("want 1 and 2 served and 3 refused with the overload error, got %v", got)
	}
}

func TestCancel_NotAnsweredWhenProfileSaysSo(t *testing.T) {
	// DIGEST A8: after a cancel the server MUST NOT send any further message for the request.
	c := dial(t, profile(map[string]runtime.Handler{
		"slow": func(ctx context.Context, r *runtime.Request) (any, error) {
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), runtime.ErrCancelled) {
				t.Errorf("cause = %v, want ErrCancelled", context.Cause(ctx))
			}
			r.Notify("progress", map[string]int{"p": 1}) // must be dropped too
			return "too late", nil
		},
	}, false))
	c.send(req("a", "slow"), `{"jsonrpc":"2.0","method":"cancel","params":{"id":"a"}}`, req("b", "now"))
	if m := c.next(); string(m["id"]) != `"b"` {
		t.Fatalf("want only b's answer, got %s", mustJSON(m))
	}
	c.closeInput()
	if rest := c.rest(); len(rest) != 0 {
		t.Fatalf("cancelled request produced output: %q", rest)
	}
}

func TestCancel_AnsweredExactlyOnceWhenProfileSaysSo(t *testing.T) {
	// DIGEST C5 (RCP): a cancelled request still gets exactly one response, -32006.
	c := dial(t, profile(map[string]runtime.Handler{
		"slow": func(ctx context.Context, r *runtime.Request) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}, true))
	c.send(req(7, "slow"), `{"jsonrpc":"2.0","method":"cancel","params":{"id":7}}`,
		`{"jsonrpc":"2.0","method":"cancel","params":{"id":7}}`)
	if m := c.next(); string(m["id"]) != "7" || errCode(m) != -32006 {
		t.Fatalf("want -32006 for id 7, got %s", mustJSON(m))
	}
	c.closeInput()
	if rest := c.rest(); len(rest) != 0 {
		t.Fatalf("more than one answer: %q", rest)
	}
}

func TestDuplicateIDInFlight_InvalidRequest(t *testing.T) {
	release := make(chan struct{})
	c := dial(t, profile(map[string]runtime.Handler{
		"block": func(ctx context.Context, r *runtime.Request) (any, error) { <-release; return 1, nil },
	}, false))
	c.send(req(9, "block"), req(9, "block"))
	if m := c.next(); string(m["id"]) != "9" || errCode(m) != jsonrpc.CodeInvalidRequest {
		t.Fatalf("want -32600 for the duplicate, got %s", mustJSON(m))
	}
	close(release)
	if m := c.next(); string(m["id"]) != "9" || m["result"] == nil {
		t.Fatalf("want the first request's result, got %s", mustJSON(m))
	}
	// Once answered, the id may be used again.
	c.send(req(9, "now"))
	if m := c.next(); m["result"] == nil {
		t.Fatalf("reused id refused: %s", mustJSON(m))
	}
}

func TestPanic_InternalErrorAndServerGoesOn(t *testing.T) {
	c := dial(t, profile(map[string]runtime.Handler{
		"boom": func(ctx context.Context, r *runtime.Request) (any, error) { panic("kaboom") },
	}, false))
	c.send(req(1, "boom"), req(2, "now"))
	got := map[string]map[string]json.RawMessage{}
	for range 2 {
		m := c.next()
		got[string(m["id"])] = m
	}
	if errCode(got["1"]) != jsonrpc.CodeInternalError {
		t.Fatalf("panic answered with %s, want -32603", mustJSON(got["1"]))
	}
	if strings.Contains(string(got["1"]["error"]), "kaboom") {
		t.Errorf("the panic value leaked to the peer: %s", got["1"]["error"])
	}
	if got["2"]["result"] == nil {
		t.Fatal("server did not go on after a panic")
	}
}

// panickyResult panics while it is encoded, as a faulty MarshalJSON or Appender would.
type panickyResult struct{}

func (panickyResult) AppendJSON([]byte) []byte { panic("cannot encode") }
func (panickyResult) SizeHint() int            { return 0 }

// A result whose encoding panics is a panic of the request actor: answered with an internal
// error, and the server goes on.
func TestPanic_InTheResultsEncoding(t *testing.T) {
	c := dial(t, profile(map[string]runtime.Handler{
		"bad": func(ctx context.Context, r *runtime.Request) (any, error) { return panickyResult{}, nil },
	}, false))
	c.send(req(1, "bad"))
	if m := c.next(); errCode(m) != jsonrpc.CodeInternalError || string(m["id"]) != "1" {
		t.Fatalf("got %s, want -32603 for id 1", mustJSON(m))
	}
	c.send(req(2, "now"))
	if m := c.next(); m["result"] == nil {
		t.Fatalf("the server did not go on: %s", mustJSON(m))
	}
}

func TestErrors_HandlerErrorsBecomeJSONRPCErrors(t *testing.T) {
	c := dial(t, profile(map[string]runtime.Handler{
		"rpcerr": func(ctx context.Context, r *runtime.Request) (any, error) {
			return nil, jsonrpc.Errorf(-32042, "custom")
		},
		"plainerr": func(ctx context.Context, r *runtime.Request) (any, error) { return nil, errors.New("secret detail") },
		"badjson":  func(ctx context.Context, r *runtime.Request) (any, error) { return func() {}, nil },
	}, false))
	c.send(req(1, "rpcerr"), req(2, "plainerr"), req(3, "badjson"), req(4, "fail-now"))
	want := map[string]int64{"1": -32042, "2": -32603, "3": -32603, "4": -32099}
	for range want {
		m := c.next()
		if code := errCode(m); code != want[string(m["id"])] {
			t.Errorf("id %s: code %d, want %d", m["id"], code, want[string(m["id"])])
		}
		if strings.Contains(string(m["error"]), "secret detail") {
			t.Errorf("a Go error's text leaked to the peer: %s", m["error"])
		}
	}
}

func TestMalformed_AnsweredPerJSONRPC(t *testing.T) {
	cases := []struct {
		rule, frame string
		wantID      string // "" means the id member is absent
		code        int64
	}{
		{"invalid JSON is a parse error without id", `{"jsonrpc":`, "", -32700},
		{"a JSON value that is not an object is an invalid request", `42`, "", -32600},
		{"the id of an invalid request is echoed when readable", `{"jsonrpc":"1.0","id":3,"method":"x"}`, "3", -32600},
		{"params that are not an object are invalid params", `{"jsonrpc":"2.0","id":4,"method":"now","params":[1]}`, "4", -32602},
		{"a batch is an invalid request when the profile has none", `[{"jsonrpc":"2.0","id":5,"method":"now"}]`, "", -32600},
		{"an unknown method is method-not-found", req(6, "nope"), "6", -32601},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			c := dial(t, profile(nil, false))
			c.send(tc.frame)
			m := c.next()
			if errCode(m) != tc.code || string(m["id"]) != tc.wantID {
				t.Fatalf("got %s; want code %d id %q", mustJSON(m), tc.code, tc.wantID)
			}
			c.send(req(99, "now"))
			if m := c.next(); string(m["id"]) != "99" {
				t.Fatalf("not serving after the bad frame: %s", mustJSON(m))
			}
		})
	}
}

func TestNotAnswered_NotificationsAndResponses(t *testing.T) {
	notes := make(chan string, 4)
	p := profile(nil, false)
	p.NewSession = func(*runtime.Peer) runtime.Session { return &testSession{notes: notes} }
	c := dial(t, p)
	c.send(
		`{"jsonrpc":"2.0","method":"hello"}`,                    // a notification goes to the session
		`{"method":"broken"}`,                                   // a malformed notification: logged only
		`{"jsonrpc":"2.0","id":77,"result":{}}`,                 // a response to nothing: logged only
		`{"jsonrpc":"2.0","method":"cancel","params":{"id":5}}`, // a cancel for nothing: ignored
		`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`,       // a malformed response: logged only
	)
	if got := <-notes; got != "hello" {
		t.Fatalf("session got %q", got)
	}
	c.closeInput()
	if rest := c.rest(); len(rest) != 0 {
		t.Fatalf("answered what must never be answered: %q", rest)
	}
}

func TestBatch_WhenTheProfileAllowsIt(t *testing.T) {
	c := dial(t, profile(map[string]runtime.Handler{
		"run": func(ctx context.Context, r *runtime.Request) (any, error) { return "ran", nil },
	}, true))
	c.send(`[` + req(1, "run") + `,{"jsonrpc":"2.0","method":"note"},` + req(2, "now") + `,5]`)
	var parts []map[string]json.RawMessage
	select {
	case f := <-c.out:
		if err := json.Unmarshal(f, &parts); err != nil {
			t.Fatalf("batch answer is not an array: %q", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no batch answer")
	}
	ids := map[string]bool{}
	for _, p := range parts {
		ids[string(p["id"])] = true
	}
	if len(parts) != 3 || !ids["1"] || !ids["2"] || !ids["null"] {
		t.Fatalf("want answers for 1, 2 and the bad member (id null); got %d: %v", len(parts), ids)
	}
	c.send(`[]`)
	if m := c.next(); errCode(m) != -32600 || string(m["id"]) != "null" {
		t.Fatalf("empty batch: %s", mustJSON(m))
	}
	c.send(`[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]`)
	c.send(req(3, "now"))
	if m := c.next(); string(m["id"]) != "3" {
		t.Fatalf("a batch of notifications produced output: %s", mustJSON(m))
	}
}

func TestCall_PeerAnswersRoutedToTheAsker(t *testing.T) {
	c := dial(t, profile(map[string]runtime.Handler{
		"ask": func(ctx context.Context, r *runtime.Request) (any, error) {
			res, err := r.Call(ctx, "sampling/createMessage", map[string]string{"q": "?"})
			if err != nil {
				return nil, err
			}
			return res, nil
		},
	}, false))
	c.send(req("q1", "ask"))
	call := c.next()
	if string(call["method"]) != `"sampling/createMessage"` || call["id"] == nil {
		t.Fatalf("want a request to the peer, got %s", mustJSON(call))
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"a":42}}`, call["id"]))
	m := c.next()
	if string(m["id"]) != `"q1"` || string(m["result"]) != `{"a":42}` {
		t.Fatalf("want the peer's answer as the result, got %s", mustJSON(m))
	}
}

// After EOF the peer can never answer: a handler waiting on a Call gets ErrConnectionClosed
// at once, not when the drain deadline (an hour here) abandons it.
func TestCall_EOFEndsTheWaitForTheAnswer(t *testing.T) {
	c := dial(t, profile(map[string]runtime.Handler{
		"ask": func(ctx context.Context, r *runtime.Request) (any, error) {
			_, err := r.Call(ctx, "elicitation/create", nil)
			if !errors.Is(err, runtime.ErrConnectionClosed) {
				return nil, fmt.Errorf("Call returned %v, want ErrConnectionClosed", err)
			}
			return "told", nil
		},
	}, false), runtime.WithDrainTimeout(time.Hour))
	c.send(req(1, "ask"))
	if m := c.next(); string(m["method"]) != `"elicitation/create"` {
		t.Fatalf("want the call to the peer, got %s", mustJSON(m))
	}
	c.closeInput()
	if m := c.next(); string(m["id"]) != "1" || string(m["result"]) != `"told"` {
		t.Fatalf("want the handler told at EOF, got %s", mustJSON(m))
	}
}

func TestDrain_EOFLetsInFlightFinish(t *testing.T) {
	release := make(chan struct{})
	c := dial(t, profile(map[string]runtime.Handler{
		"block": func(ctx context.Context, r *runtime.Request) (any, error) { <-release; return "finished", nil },
	}, false))
	for i := range 8 {
		c.send(req(i, "block"))
	}
	c.send(req(100, "listen"))
	c.closeInput() // EOF
	// The long-lived stream ends itself through Draining; the others finish when released.
	if m := c.next(); string(m["id"]) != "100" || string(m["result"]) != `"stream ended"` {
		t.Fatalf("want the listen stream answered at drain, got %s", mustJSON(m))
	}
	close(release)
	rest := c.rest()
	if len(rest) != 8 {
		t.Fatalf("want 8 answers after EOF, got %d", len(rest))
	}
}

func TestDrain_DeadlineCancelsAndAnswersPerProfile(t *testing.T) {
	c := dial(t, profile(map[string]runtime.Handler{
		"stuck": func(ctx context.Context, r *runtime.Request) (any, error) {
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), runtime.ErrAbandoned) {
				t.Errorf("cause %v, want ErrAbandoned", context.Cause(ctx))
			}
			return nil, ctx.Err()
		},
	}, false), runtime.WithDrainTimeout(10*time.Millisecond))
	c.send(req(1, "stuck"), req(2, "stuck"))
	c.closeInput()
	rest := c.rest()
	if len(rest) != 2 {
		t.Fatalf("want both requests answered with the shutdown error, got %q", rest)
	}
	for _, f := range rest {
		if !strings.Contains(string(f), "-32010") {
			t.Errorf("want the profile's abandoned error, got %s", f)
		}
	}
}

// A handler that ignores cancellation is left behind a second after the drain deadline; its
// request is still answered, once: with the profile's error for a cancelled request if the
// peer cancelled it, else with the abandoned one. The peer no longer waits for an answer
// that would never come, and the handler's own answer, when it comes, is dropped.
func TestDrain_HandlersLeftBehindAreStillAnsweredOnce(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	returned := make(chan struct{}, 2)
	c := dial(t, profile(map[string]runtime.Handler{
		"deaf": func(ctx context.Context, r *runtime.Request) (any, error) {
			defer func() { returned <- struct{}{} }()
			started <- struct{}{}
			<-release
			return "too late", nil
		},
	}, true), runtime.WithDrainTimeout(10*time.Millisecond))
	c.send(req(1, "deaf"), req(2, "deaf"))
	<-started
	<-started
	c.send(`{"jsonrpc":"2.0","method":"cancel","params":{"id":1}}`)
	c.closeInput()
	rest := c.rest()
	close(release)
	<-returned
	<-returned
	want := map[string]string{"1": "-32006", "2": "-32010"}
	if len(rest) != len(want) {
		t.Fatalf("want one answer for each request left behind, got %q", rest)
	}
	for _, f := range rest {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(f, &m); err != nil {
			t.Fatal(err)
		}
		if code := want[string(m["id"])]; code == "" || !strings.Contains(string(f), code) {
			t.Errorf("want request %s answered with %s, got %s", m["id"], code, f)
		}
	}
}

func TestShutdownRoute_NothingAfterItStarts(t *testing.T) {
	c := dial(t, profile(nil, true))
	c.send(req(1, "shutdown"), req(2, "now"))
	if m := c.next(); string(m["id"]) != "1" {
		t.Fatalf("want the shutdown answered, got %s", mustJSON(m))
	}
	select {
	case err := <-c.done:
		c.done <- err
	case <-time.After(5 * time.Second):
		t.Fatal("dispatcher did not stop after shutdown")
	}
	if rest := c.rest(); len(rest) != 0 {
		t.Fatalf("a request after shutdown was answered: %q", rest)
	}
}

func TestFrameTooLarge_AnsweredWithProfileError(t *testing.T) {
	c := dial(t, profile(nil, true))
	c.in <- runtime.Inbound{TooLarge: 1 << 20}
	if m := c.next(); errCode(m) != -32013 || string(m["id"]) != "null" {
		t.Fatalf("got %s", mustJSON(m))
	}
}

func TestServeContext_CancelDrains(t *testing.T) {
	release := make(chan struct{})
	c := dial(t, profile(map[string]runtime.Handler{
		"block": func(ctx context.Context, r *runtime.Request) (any, error) { <-release; return "ok", nil },
	}, false))
	c.send(req(1, "block"))
	time.Sleep(10 * time.Millisecond) // let the request start; correctness does not depend on it
	c.stop()                          // like SIGTERM: graceful, the request's own context lives on
	c.send(req(2, "now"))             // arrives while draining: refused with the shutdown error
	m := c.next()
	if string(m["id"]) != "2" || errCode(m) != -32010 {
		t.Fatalf("want the late request refused, got %s", mustJSON(m))
	}
	close(release)
	if m := c.next(); string(m["id"]) != "1" || m["result"] == nil {
		t.Fatalf("want the in-flight request finished, got %s", mustJSON(m))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Cancelling Serve's context while handlers flood the connection with notifications still
// drains it: the drain deadline cancels the handlers and the connection stops.
func TestDrain_DeadlineHoldsUnderAStreamOfNotifications(t *testing.T) {
	chatty := func(ctx context.Context, r *runtime.Request) (any, error) {
		for ctx.Err() == nil {
			r.Notify("progress", map[string]int{"n": 1})
		}
		return nil, ctx.Err()
	}
	c := dial(t, profile(map[string]runtime.Handler{"chatty": chatty}, false), runtime.WithDrainTimeout(50*time.Millisecond))
	for id := range 16 {
		c.send(req(id, "chatty"))
	}
	go func() { // the transport: reads the output until it closes
		for range c.out {
		}
	}()
	time.Sleep(20 * time.Millisecond) // let the stream run; the outcome does not depend on it
	c.stop()
	c.closeInput()
	select {
	case err := <-c.done:
		c.done <- err
	case <-time.After(5 * time.Second):
		t.Fatal("the drain deadline did not stop the connection while notifications kept coming")
	}
}
