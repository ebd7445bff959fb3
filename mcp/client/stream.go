package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/relayrt/relay/jsonrpc"
)

// stream is a conn over a bidirectional stream of frames (a child's stdio, an in-memory
// connection). Three actors: the reader, which gives each frame to the router; the router,
// which owns the table of calls in flight and of the server's requests being answered; the
// writer, which takes frames from out. Callers only send messages to them. Each request of
// the server is answered by a goroutine of its own, which the router starts and close
// waits for.
type stream struct {
	out     chan []byte   // to the writer actor; closed by close
	outMu   sync.RWMutex  // held to send on out, and taken alone to close it
	outShut bool          // out is closed
	closing chan struct{} // closed first by close: senders waiting for room give up, so close can take outMu
	mailbox chan routeMsg
	gone    chan struct{} // closed by the router when the reader has ended
	once    sync.Once
	stop    func() error  // after out is closed: ends the peer, waits for the reader and writer
	done    chan struct{} // closed when the router returned
	// cause is why the reader ended, when the peer did not simply go away: the reader sets
	// it before it closes frames, the router reads it after.
	cause error

	in        *inbox
	forgot    time.Time          // when a call that may be asked for was last given up (the router's)
	serving   sync.WaitGroup     // the goroutines answering the server's requests
	serveCtx  context.Context    // their context: ends when the stream closes
	endServes context.CancelFunc // ends serveCtx
}

// maxServing bounds the server's requests answered at once; more are refused.
const maxServing = 64

type routeMsg struct {
	id     string
	call   *streamCall // nil: forget id
	served bool        // the server's request id has been answered: forget it
	failed error       // our request id could not be sent: its call fails with this
}

type streamCall struct {
	ctx   context.Context  // the caller's: a question of the server's asked for it gets it
	reply chan streamReply // buffered: the router never waits on it
	note  func(method string, params json.RawMessage)
	// asks: a call during which the server may ask its client and log for it (tools/call,
	// prompts/get, resources/read); others (a listen stream, a ping, a list) never get a
	// request's messages or questions that name no request
	asks  bool
	since time.Time // when the router learnt of it
}

type streamReply struct {
	result json.RawMessage
	err    error
}

// newStream returns a stream whose writer actor must take s.out until it is closed, and
// starts its router over frames, which the reader actor closes when it ends. The transport
// sets stop before the stream is used.
func newStream(frames <-chan []byte, in *inbox) *stream {
	s := &stream{out: make(chan []byte, 64), mailbox: make(chan routeMsg),
		closing: make(chan struct{}), gone: make(chan struct{}), done: make(chan struct{}), in: in}
	s.serveCtx, s.endServes = context.WithCancel(context.Background())
	go s.route(frames)
	return s
}

func (s *stream) send(ctx context.Context, frame []byte) error {
	s.outMu.RLock()
	defer s.outMu.RUnlock()
	if s.outShut {
		return ErrClosed
	}
	select {
	case s.out <- frame:
		return nil
	case <-s.closing:
		return ErrClosed
	case <-s.gone:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *stream) tell(m routeMsg) error {
	select {
	case s.mailbox <- m:
		return nil
	case <-s.gone:
		return ErrClosed
	}
}

func (s *stream) call(ctx context.Context, r *outgoing) (json.RawMessage, error) {
	c := &streamCall{ctx: ctx, reply: make(chan streamReply, 1), note: r.note, asks: asksFor[r.method]}
	if err := s.tell(routeMsg{id: string(r.id), call: c}); err != nil {
		return nil, err
	}
	if err := s.send(ctx, jsonrpc.AppendRequest(nil, r.id, r.method, r.params)); err != nil {
		s.tell(routeMsg{id: string(r.id)})
		return nil, err
	}
	select {
	case rep := <-c.reply:
		return rep.result, rep.err
	case <-ctx.Done():
		// MCP 2026-07-28, Transports › stdio › Cancellation (and the initialize generation's
		// notifications/cancelled): tell the server, and ignore a late answer.
		s.tell(routeMsg{id: string(r.id)})
		// Bounded: a peer that stopped reading its input must not hold the caller.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		s.send(cctx, jsonrpc.AppendNotification(nil, "notifications/cancelled",
			cancelParams(r.id, "the caller went away")))
		cancel()
		return nil, ctx.Err()
	}
}

func (s *stream) notify(ctx context.Context, r *outgoing) error {
	return s.send(ctx, jsonrpc.AppendNotification(nil, r.method, r.params))
}

func (s *stream) close() error {
	var err error
	s.once.Do(func() {
		close(s.closing) // a sender blocked on a full out (a peer that stopped reading) lets go of outMu
		s.endServes()    // the handlers answering the server's requests give up
		s.outMu.Lock()
		s.outShut = true
		close(s.out)
		s.outMu.Unlock()
		err = s.stop()
		<-s.done
		s.serving.Wait() // the router is gone: nobody starts another
	})
	return err
}

// route is the router actor: it owns the calls in flight, until the reader ends.
func (s *stream) route(frames <-chan []byte) {
	defer close(s.done)
	calls := map[string]*streamCall{}
	serving := map[string]context.CancelFunc{} // the server's requests being answered, by id
	for {
		select {
		case m := <-s.mailbox:
			switch {
			case m.served:
				if end := serving[m.id]; end != nil {
					end()
					delete(serving, m.id)
				}
			case m.failed != nil:
				if c := calls[m.id]; c != nil {
					delete(calls, m.id)
					c.reply <- streamReply{err: m.failed}
				}
			case m.call != nil:
				m.call.since = time.Now()
				calls[m.id] = m.call
			default:
				if c := calls[m.id]; c != nil && c.asks {
					s.forgot = time.Now()
				}
				delete(calls, m.id)
			}
		case f, ok := <-frames:
			if !ok {
				close(s.gone)
				err := ErrClosed
				if s.cause != nil {
					err = fmt.Errorf("%w: %w", ErrClosed, s.cause)
				}
				for _, c := range calls {
					c.reply <- streamReply{err: err}
				}
				for _, end := range serving {
					end()
				}
				return
			}
			s.frame(f, calls, serving)
		}
	}
}

func (s *stream) frame(f []byte, calls map[string]*streamCall, serving map[string]context.CancelFunc) {
	m, err := jsonrpc.Decode(f)
	if err != nil && m.Kind != jsonrpc.KindResponse {
		return
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		c := calls[string(m.ID)]
		if c == nil {
			return // answered after a cancel, or never asked: ignored
		}
		delete(calls, string(m.ID))
		if m.Error != nil {
			c.reply <- streamReply{err: decodeError(m.Error)}
			return
		}
		c.reply <- streamReply{result: append(json.RawMessage(nil), m.Result...)}
	case jsonrpc.KindNotification:
		if m.Method == "notifications/cancelled" {
			// The server gave up a request it made of us (MCP 2025-11-25, Utilities ›
			// Cancellation): its handler's context ends, its answer is not sent.
			if end := serving[string(jsonrpc.Field(m.Params, "requestId"))]; end != nil {
				end()
			}
			return
		}
		if s.in.elicitationComplete(m.Method, m.Params) {
			return
		}
		key := progressTokenOf(m.Method, m.Params)
		if key == nil {
			key = subscriptionOf(m.Params) // a change a subscriptions/listen call asked for
		}
		c := calls[string(key)]
		if c == nil && unasked(m.Method) {
			s.in.notified(m.Method, append(json.RawMessage(nil), m.Params...))
			return
		}
		if c == nil {
			// A log message names no request: it is the one call's in flight, when there
			// is exactly one; otherwise nobody can tell, and it is dropped. Listen streams
			// do not count: a request's messages never go to one (MCP 2026-07-28, Basic ›
			// Patterns › Subscriptions).
			c = s.onlyCall(calls)
		}
		if c != nil && c.note != nil {
			c.note(m.Method, append(json.RawMessage(nil), m.Params...))
		}
	case jsonrpc.KindRequest:
		id := string(m.ID)
		if serving[id] != nil || len(serving) >= maxServing || s.serveCtx.Err() != nil {
			s.trySend(jsonrpc.AppendError(nil, m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "the client is answering too many requests at once (or closing): ask again later"}))
			return
		}
		var ctx context.Context
		var end context.CancelFunc
		if c := s.onlyCall(calls); c != nil && m.Method != "ping" {
			// A request of the server's names no call of ours, over stdio: it is the one
			// call's in flight, when there is exactly one, as a log message is (above). The
			// handler gets that call's context, so that it can tell whose question it
			// answers (a gateway passes it on to its own caller), and it ends with the
			// caller's context, or with the stream. A ping is nobody's: it is answered.
			cctx, cancel := context.WithCancel(c.ctx)
			stop := context.AfterFunc(s.serveCtx, cancel)
			ctx, end = cctx, func() { stop(); cancel() }
		} else {
			ctx, end = context.WithCancel(s.serveCtx)
		}
		serving[id] = end
		s.serving.Add(1)
		go s.answer(ctx, m.ID, m.Method, append(json.RawMessage(nil), m.Params...))
	}
}

// answer answers one request of the server through the client's handlers, unless the server
// cancelled it meanwhile, then tells the router it is done.
func (s *stream) answer(ctx context.Context, id jsonrpc.ID, method string, params json.RawMessage) {
	defer s.serving.Done()
	res, err := s.in.serve(ctx, method, params)
	if ctx.Err() == nil {
		s.send(ctx, reply(id, res, err))
	}
	s.tell(routeMsg{id: string(id), served: true})
}

// trySend queues frame unless the writer's queue is full. The router never blocks on a
// send: the writer may be stuck on a peer that waits for us to read. A full queue drops
// the frame; the server's request times out.
func (s *stream) trySend(frame []byte) {
	s.outMu.RLock()
	defer s.outMu.RUnlock()
	if !s.outShut {
		select {
		case s.out <- frame:
		default:
		}
	}
}

// progressTokenOf returns the token of a progress notification: the client makes it the
// request's own id, so it names the call.
func progressTokenOf(method string, params json.RawMessage) []byte {
	if method != "notifications/progress" {
		return nil
	}
	return jsonrpc.Field(params, "progressToken")
}

// reply is the answer to the server's request id: res, or err as a JSON-RPC error.
func reply(id jsonrpc.ID, res json.RawMessage, err error) []byte {
	if err != nil {
		rpc, ok := err.(*jsonrpc.Error)
		if !ok {
			rpc = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return jsonrpc.AppendError(nil, id, rpc)
	}
	return jsonrpc.AppendResult(nil, id, res)
}

// asksFor are the methods during which a server may ask its client, and log for the call.
var asksFor = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// forgetGrace is how long after a call was given up a message that names no request is
// nobody's, if the one call left was in flight beside it: the server may not have read the
// cancellation yet, and what it sends for the call given up must not go to the other.
const forgetGrace = 2 * time.Second

// onlyCall returns the one call in flight that may be asked for (see asksFor), or nil when
// there are none or several, or when it was in flight beside one given up a moment ago
// (forgetGrace).
func (s *stream) onlyCall(calls map[string]*streamCall) *streamCall {
	only := soleAsker(calls)
	if only != nil && only.since.Before(s.forgot) && time.Since(s.forgot) < forgetGrace {
		return nil
	}
	return only
}

// soleAsker returns the one call in calls that may be asked for, or nil.
func soleAsker(calls map[string]*streamCall) *streamCall {
	var only *streamCall
	for _, c := range calls {
		if !c.asks {
			continue
		}
		if only != nil {
			return nil
		}
		only = c
	}
	return only
}
