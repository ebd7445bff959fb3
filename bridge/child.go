package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/supervise"
	"github.com/relayrt/relay/telemetry"
)

// childConn is the bridge's client of one supervised child: the supervisor's proxy core
// (supervise.ServeFrames: replay, poison detection, a legacy initialize replayed on a
// restart, the stop sequence) with an actor in front that hands on everything the child says:
//
//   - a response goes to the call that waits for it;
//   - progress goes to the call whose token it names, a listen's notifications to the listen
//     they name; a log message goes to the one call in flight that is not a listen, when
//     there is exactly one (over stdio a log message names no request; MCP 2026-07-28 never
//     sends one on a listen stream, Basic › Patterns › Subscriptions);
//   - every other notification (resource updates, list changes, log messages between calls)
//     goes to the session the child is attached to, if any: a child of a session's own is
//     the session's alone, so all it says is the session's (MCP 2025-11-25, Transports ›
//     Session Management);
//   - a request of the child's to its client (sampling, elicitation, roots) is asked of the
//     client on the stream of a call in flight that can carry it (a call given its HTTP
//     request), and the answer goes back to the child; with none, the child is answered with
//     an error.
//
// The pool's children are childConns shared by every request; a session's own child is
// spawned ahead as a spare, and initialized only when a session claims it, with that
// client's own initialize: the client's capabilities are what the child sees.
type childConn struct {
	name    string
	in      chan []byte  // frames to the proxy core; closed by close
	inMu    sync.RWMutex // held to send on in, and taken alone to close it
	inShut  bool
	mailbox chan childMsg
	done    chan struct{}  // the actor has stopped: the core has returned
	proxied chan error     // the core's result, once
	asks    sync.WaitGroup // the asks of the client, and notifications waiting for room
	nextID  atomic.Int64
	load    atomic.Int64 // calls in flight, listens apart, for least-loaded routing
	log     *zap.Logger
	sup     *supervise.Supervisor

	closeOnce sync.Once
	closeErr  error
}

// childMsg is a message to a childConn's actor: a call to register (or, call nil, to
// forget), or the session's Peer to hand notifications to.
type childMsg struct {
	id     string
	call   *childCall
	sink   func(method string, params json.RawMessage)
	answer chan struct{}
}

type childCall struct {
	listen bool            // a subscriptions/listen stream
	ctx    context.Context // the call's; ended when it returns, which ends its asks
	ask    asker           // puts the child's requests to the client, if the call can
	reply  chan childReply // buffered: the actor never waits on it
	notify func(method string, params json.RawMessage)
}

type childReply struct {
	result json.RawMessage
	err    *jsonrpc.Error
}

// errChildGone answers what a session's child can no longer take: it was stopped (the session
// ended) or its supervisor gave up.
var errChildGone = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the session's server is gone; initialize again",
	Data: map[string]any{"retryable": false}}

// startChild spawns a child behind the proxy core under ctx (the bridge's); rec, when not
// nil, records its frames; tel, when not nil, gets its restarts and upgrades as spans.
func startChild(ctx context.Context, name string, spec supervise.Spec, opts supervise.ProxyOptions, log *zap.Logger, rec FrameRecorder, tel *telemetry.Telemetry) *childConn {
	spec.Command.Name = name
	if opts.Observer == nil {
		opts.Observer = tel.Children(name)
	}
	c := &childConn{name: name, in: make(chan []byte, 64), mailbox: make(chan childMsg), done: make(chan struct{}),
		proxied: make(chan error, 1), log: log.With(zap.String("child", name))}
	opts.Logger = c.log
	out := make(chan []byte, 256)
	sup := supervise.New(spec)
	c.sup = sup
	var coreIn <-chan []byte = c.in
	var coreOut chan<- []byte = out
	if rec != nil { // recorded (relay bridge --record): see tap
		coreIn, coreOut = tap(rec, c.in, out, c.done)
	}
	go func() { // the core; its output ends when it returns
		err := supervise.ServeFrames(ctx, sup, coreIn, coreOut, &opts)
		close(coreOut)
		c.proxied <- err
	}()
	go c.route(out)
	return c
}

// attach makes sink the receiver of what the child says outside calls (on the child's actor:
// it must not wait long).
func (c *childConn) attach(sink func(method string, params json.RawMessage)) error {
	return c.tell(childMsg{sink: sink})
}

// toPeer is the sink of a session's own child: the session's GET stream.
func toPeer(peer *runtime.Peer) func(string, json.RawMessage) {
	return func(method string, params json.RawMessage) {
		peer.Notify(method, params) // fails only once the session has ended
	}
}

func (c *childConn) tell(m childMsg) error {
	m.answer = make(chan struct{})
	select {
	case c.mailbox <- m:
		<-m.answer
		return nil
	case <-c.done:
		return errChildGone
	}
}

// send hands a frame to the core, waiting for room; it fails once the child is closed or gone.
func (c *childConn) send(frame []byte) error {
	c.inMu.RLock()
	defer c.inMu.RUnlock()
	if c.inShut {
		return errChildGone
	}
	select {
	case c.in <- frame:
		return nil
	case <-c.done:
		return errChildGone
	}
}

// trySend hands a frame to the core if there is room at once.
func (c *childConn) trySend(frame []byte) bool {
	c.inMu.RLock()
	defer c.inMu.RUnlock()
	if c.inShut {
		return false
	}
	select {
	case c.in <- frame:
		return true
	default:
		return false
	}
}

// notify passes a notification of the client's on to the child without waiting: it is called
// on the session's dispatcher, which must never block. When the core's input is full (it is
// itself waiting for the session to take the child's output), the send goes on in a goroutine
// of the child's, which close waits for.
func (c *childConn) notify(method string, params json.RawMessage) {
	frame := jsonrpc.AppendNotification(nil, method, params)
	c.inMu.RLock()
	defer c.inMu.RUnlock()
	if c.inShut {
		return
	}
	select {
	case c.in <- frame:
	default: // Go before close's Wait: close takes inMu alone first
		c.asks.Go(func() { c.send(frame) })
	}
}

// call sends a request to the child and waits for its answer (an id and a progress token of
// its own, the child cancelled when ctx ends); ask, when not nil, puts the child's own requests to the client while the call is in flight.
func (c *childConn) call(ctx context.Context, ask asker, method string, params json.RawMessage,
	notify func(method string, params json.RawMessage)) (json.RawMessage, *jsonrpc.Error, error) {
	if method != "subscriptions/listen" { // a stream held open is no work in progress
		c.load.Add(1)
		defer c.load.Add(-1)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	id := "s" + strconv.FormatInt(c.nextID.Add(1), 10)
	idJSON := jsonrpc.StringID(id)
	if tok := jsonrpc.Field(jsonrpc.Field(params, "_meta"), "progressToken"); tok != nil {
		// Unique per call: the child's progress is routed by it.
		params = jsonrpc.SetMember(params, "_meta", jsonrpc.SetMember(jsonrpc.Field(params, "_meta"), "progressToken", json.RawMessage(idJSON)))
	}
	cl := &childCall{listen: method == "subscriptions/listen", ctx: ctx, ask: ask, reply: make(chan childReply, 1), notify: notify}
	if err := c.tell(childMsg{id: string(idJSON), call: cl}); err != nil {
		return nil, nil, err
	}
	if err := c.send(jsonrpc.AppendRequest(nil, idJSON, method, params)); err != nil {
		c.tell(childMsg{id: string(idJSON)})
		return nil, nil, err
	}
	select {
	case r := <-cl.reply:
		return r.result, r.err, nil
	case <-ctx.Done():
		c.tell(childMsg{id: string(idJSON)})
		cancelled, _ := json.Marshal(map[string]any{"requestId": id, "reason": "the client cancelled the request"})
		c.send(jsonrpc.AppendNotification(nil, "notifications/cancelled", cancelled))
		return nil, nil, ctx.Err()
	case <-c.done:
		return nil, nil, errChildGone
	}
}

// upgrade replaces the child with a new one without dropping its client (see
// supervise.Supervisor.Upgrade); a child whose core has returned has nothing to upgrade.
func (c *childConn) upgrade(ctx context.Context, reason string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // ends with upgrade, at the latest
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := c.sup.Upgrade(ctx, reason)
	select {
	case <-c.done:
		return nil
	default:
		return err
	}
}

// close ends the child's input: the core answers what is in flight within its drain and stops
// the child with the full sequence. It returns the core's error (supervise.ErrGaveUp if the
// supervisor had given up). Safe to call more than once, from any goroutine.
func (c *childConn) close() error {
	c.closeOnce.Do(func() {
		c.inMu.Lock()
		c.inShut = true
		close(c.in)
		c.inMu.Unlock()
		<-c.done
		c.asks.Wait()
		c.closeErr = <-c.proxied
	})
	return c.closeErr
}

// route is the child's actor: it owns the table of calls and the session's Peer, and takes
// what the core sends until the core returns and closes frames.
func (c *childConn) route(frames <-chan []byte) {
	calls := map[string]*childCall{}
	var sink func(method string, params json.RawMessage)
	defer close(c.done)
	for {
		select {
		case m := <-c.mailbox:
			switch {
			case m.sink != nil:
				sink = m.sink
			case m.call != nil:
				calls[m.id] = m.call
			default:
				delete(calls, m.id)
			}
			close(m.answer)
		case f, ok := <-frames:
			if !ok {
				for _, cl := range calls {
					cl.reply <- childReply{err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
						Message: "Internal error: the server is gone", Data: map[string]any{"retryable": false}}}
				}
				return
			}
			c.frame(f, calls, sink)
		}
	}
}

func (c *childConn) frame(f []byte, calls map[string]*childCall, sink func(string, json.RawMessage)) {
	m, err := jsonrpc.Decode(f)
	if err != nil && m.Kind != jsonrpc.KindResponse {
		return
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		cl := calls[string(m.ID)]
		if cl == nil {
			return
		}
		delete(calls, string(m.ID))
		if m.Error != nil {
			var e jsonrpc.Error
			json.Unmarshal(m.Error, &e)
			cl.reply <- childReply{err: &e}
			return
		}
		cl.reply <- childReply{result: m.Result}
	case jsonrpc.KindNotification:
		var cl *childCall
		if tok := jsonrpc.Field(m.Params, "progressToken"); tok != nil {
			cl = calls[string(tok)]
		} else if sub := jsonrpc.Field(jsonrpc.Field(m.Params, "_meta"), mcp.MetaSubscriptionID); sub != nil {
			cl = calls[string(sub)]
		} else if m.Method == "notifications/message" {
			cl = onlyCall(calls)
		}
		switch {
		case cl != nil && cl.notify != nil:
			cl.notify(m.Method, m.Params)
		case cl == nil && sink != nil && m.Method != "notifications/progress" && m.Method != "notifications/subscriptions/acknowledged":
			sink(m.Method, m.Params)
		}
	case jsonrpc.KindRequest:
		c.ask(m, calls)
	}
}

// asker puts a request of the child's to the client and returns the client's answer.
type asker func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// askOn asks on the stream of an initialize-generation client's request in flight.
func askOn(rt *runtime.Request) asker {
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return rt.Call(ctx, method, params)
	}
}

// onlyCall returns the one call in flight that is not a listen, if there is exactly one.
func onlyCall(calls map[string]*childCall) *childCall {
	var only *childCall
	for _, cl := range calls {
		if cl.listen {
			continue
		}
		if only != nil {
			return nil
		}
		only = cl
	}
	return only
}

// Load reports how many calls are in flight, for least-loaded routing.
func (c *childConn) Load() int64 { return c.load.Load() }

// Done is closed once the child can take no more calls: its supervisor gave up, or it was
// closed.
func (c *childConn) Done() <-chan struct{} { return c.done }

// ask puts the child's request to the client on the stream of a call in flight (any: they
// all reach the same client), in a goroutine of the child's that answers the child when the
// client does.
func (c *childConn) ask(m jsonrpc.Message, calls map[string]*childCall) {
	var on *childCall
	for _, cl := range calls {
		if cl.ask != nil && !cl.listen {
			on = cl
			break
		}
	}
	id := append(jsonrpc.ID(nil), m.ID...)
	if on == nil {
		c.log.Info("the child asked its client something while no request of the client's was open to carry it; answered with an error",
			zap.String("method", m.Method))
		// Never a blocking send from here: the core may be waiting for this actor.
		c.trySend(jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "Internal error: the bridge can ask the client only while one of its requests is in flight, and none is"}))
		return
	}
	method, params := m.Method, append(json.RawMessage(nil), m.Params...)
	c.asks.Go(func() {
		res, err := on.ask(on.ctx, method, params)
		var frame []byte
		var rpcErr *jsonrpc.Error
		switch {
		case errors.As(err, &rpcErr):
			frame = jsonrpc.AppendError(nil, id, rpcErr)
		case err != nil:
			frame = jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "Internal error: the client did not answer (" + err.Error() + ")"})
		default:
			frame = jsonrpc.AppendResult(nil, id, res)
		}
		c.send(frame)
	})
}
