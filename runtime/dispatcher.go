package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"go.uber.org/zap"

	"github.com/relayrt/relay/actors"
	"github.com/relayrt/relay/internal/ratelog"
	"github.com/relayrt/relay/jsonrpc"
)

// stopGrace is how long the dispatcher still waits for request actors after cancelling them at
// the drain deadline; handlers that ignore their context are then left behind (and logged).
const stopGrace = time.Second

type evKind uint8

const (
	evDone evKind = iota
	evNotify
	evCall
	evPeer     // a notification of the session's, tied to no request
	evDetached // the handler returned a Continuation: its worker is free
	evRun      // work of the session's, to run on the dispatcher's goroutine (Peer.Run)
)

// event is a message from a request actor (or a session's goroutine) to its dispatcher.
type event struct {
	kind   evKind
	ctxErr bool // evDone: the handler failed after its context ended
	e      *entry
	frame  []byte // evDone: the response (nil if none); evNotify: the notification
	call   *call
	run    func(notify func(method string, params any) error) // evRun
}

// entry is the dispatcher's record of one request in flight, the request's context (see
// context.go), and, once its handler has returned a Continuation, the record of the goroutine
// that runs it. A request parked in its handler keeps it, so it fits the allocator's
// 144-byte size class: the key is a pointer and a length, size is an int32, and what few
// requests need is in more.
type entry struct {
	req       Request // one allocation for both
	keyPtr    *byte   // the id, copied (key): nothing a handler does to req.ID can lose the entry
	keyLen    int32
	size      int32         // bytes of the frame it holds, counted against the budget
	state     atomic.Uint32 // of the context: ctxRunning, or why it ended
	cancelled bool          // by the peer
	abandoned bool          // at the drain deadline
	requestCtx
	more atomic.Pointer[entryMore] // made by whichever goroutine needs it first (moreOf)
	w    *worker                   // the worker running it; nil once it is detached
	next Continuation              // detached: the rest of the handler, until it returns
}

// key returns the entry's key in the table: the request's id, as it came.
func (e *entry) key() string { return unsafe.String(e.keyPtr, e.keyLen) }

// entryMore is what only some requests need: members of a batch, requests that call the
// peer, requests run under an Observer, and contexts that others are derived from. The
// dispatcher makes it with the entry if the request is in a batch or observed; otherwise it is
// made at the first call to the peer (on the dispatcher's goroutine) or the first AfterFunc
// (on any), by moreOf.
type entryMore struct {
	batch  *batch
	calls  []string        // our requests to the peer on its behalf; the dispatcher's
	end    func(error)     // observed and detached: the Observer's end
	ctx    context.Context // observed and detached: the context the Observer gave the handler
	afters []*afterFunc    // under the entry's mu: what the context package asked to run at its end
}

// moreOf returns e's entryMore, made if need be.
func (e *entry) moreOf() *entryMore {
	if m := e.more.Load(); m != nil {
		return m
	}
	m := new(entryMore)
	if e.more.CompareAndSwap(nil, m) {
		return m
	}
	return e.more.Load()
}

// batch returns the request's batch, or nil.
func (e *entry) batch() *batch {
	m := e.more.Load()
	if m == nil {
		return nil
	}
	return m.batch
}

// batch collects the answers to the members of one JSON-RPC batch.
type batch struct {
	pending int
	sealed  bool
	parts   [][]byte
}

type dispatcher struct {
	s       *Server
	p       *Profile
	log     *zap.Logger
	badPeer *ratelog.Limiter // see peerLog
	session Session
	base    context.Context

	in      <-chan Inbound
	emit    func(Outbound) // the only way out: blocks while the transport is behind
	events  chan event
	stopped chan struct{}
	drainCh chan struct{}

	table    table // the requests in flight
	bytes    int   // frame bytes held by the requests in the table
	actors   int   // request actors alive (some may have left the table at the drain deadline)
	pending  map[string]*call
	nextCall int64

	idle    []*worker // most recently idle last; see worker.go
	reapGen uint32
	reap    *time.Timer
	reapC   <-chan time.Time // reap.C while idle workers wait to be reaped

	draining    bool
	stopReading bool
	deadline    <-chan time.Time
}

// The capacity of a dispatcher's events: a connection's many requests report into a queue
// that lets their actors finish without waiting on the dispatcher; a dispatcher of one request
// (ServeRequest) needs room for little more than its completion.
const (
	connEvents    = 256
	requestEvents = 4
)

func newDispatcher(ctx context.Context, s *Server, in <-chan Inbound, emit func(Outbound), events int) *dispatcher {
	d := &dispatcher{
		s:       s,
		p:       &s.profile,
		log:     s.opts.logger,
		base:    context.WithoutCancel(ctx),
		in:      in,
		emit:    emit,
		events:  make(chan event, events),
		stopped: make(chan struct{}),
		drainCh: make(chan struct{}),
		table:   newTable(),
		pending: make(map[string]*call),
	}
	d.session = s.profile.NewSession(&Peer{d: d})
	return d
}

// send delivers an event from a request actor; it fails only once the dispatcher has stopped.
func (d *dispatcher) send(ev event) error {
	select {
	case d.events <- ev:
		return nil
	case <-d.stopped:
		return ErrConnectionClosed
	}
}

func (d *dispatcher) run(ctx context.Context) error {
	defer func() {
		d.stopWorkers()
		close(d.stopped) // before Close, so that a session's goroutines blocked on Peer.Notify return
		if c, ok := d.session.(SessionCloser); ok {
			c.Close()
		}
		if d.badPeer != nil {
			d.badPeer.Flush()
		}
	}()
	done := ctx.Done()
	var grace <-chan time.Time
	for fast := 0; ; fast++ {
		if d.draining && d.in == nil && d.table.len() == 0 && d.actors == 0 {
			return nil
		}
		// Under load there is nearly always an event or a frame waiting: take it with a
		// single-channel receive, cheaper than the select below, which locks every channel it
		// waits on. Completions come first, so that requests leave before new ones come in.
		// Every so often the full select runs anyway, so that a stream of work never delays a
		// shutdown or a deadline.
		if fast%64 != 63 {
			select {
			case ev := <-d.events:
				d.event(ev)
				continue
			default:
			}
			if d.in != nil {
				select {
				case in, ok := <-d.in:
					if ok {
						d.inbound(in)
						continue
					}
					d.inputEnded()
					continue
				default:
				}
			}
		}
		select {
		case in, ok := <-d.in:
			if !ok {
				d.inputEnded()
				continue
			}
			d.inbound(in)
		case ev := <-d.events:
			d.event(ev)
		case <-done:
			done = nil
			d.beginDrain()
		case <-d.deadline:
			d.deadline = nil
			d.abandon()
			grace = time.After(stopGrace)
		case <-d.reapC:
			d.reapC = nil
			d.reapIdle()
		case <-grace:
			d.log.Error("request handlers ignored cancellation at shutdown; leaving them behind, their requests answered for them",
				zap.Int("handlers", d.actors))
			d.answerLeftBehind()
			return nil
		}
	}
}

func (d *dispatcher) inbound(in Inbound) {
	if in.TooLarge > 0 {
		d.tooLarge(in.TooLarge)
		return
	}
	if in.State {
		if t, ok := d.session.(StateTaker); ok {
			if err := actors.Recover(func() error { t.TakeState(in.Frame); return nil }); err != nil {
				d.log.Error("a session panicked taking its state (StateTaker); the connection goes on", zap.Error(err))
			}
		}
		return
	}
	d.frame(in.Frame)
}

// inputEnded starts the drain at the end of input. The peer's answers come in on that
// input, so the handlers waiting on calls to the peer are told now rather than left to the
// drain deadline.
func (d *dispatcher) inputEnded() {
	d.in = nil
	for id, c := range d.pending {
		c.reply <- callReply{err: ErrConnectionClosed}
		delete(d.pending, id)
	}
	d.beginDrain()
}

// beginDrain stops taking new work. Frames still arriving are read to the end (a transport
// stops its reader when the Serve context ends) and their requests refused.
func (d *dispatcher) beginDrain() {
	if d.draining {
		return
	}
	d.draining = true
	close(d.drainCh)
	d.deadline = time.After(d.s.opts.drainTimeout)
}

// answerLeftBehind answers the requests whose handlers ignored cancellation and are left
// running: the peer is owed one answer for each, as if the handler had returned its
// context's error, and the handler's own answer would come after the dispatcher has gone.
// Completions already queued are taken first: those handlers did answer. The entries stay
// in the table: stopWorkers ends their workers. Like every answer it waits for the
// transport, so a peer that stopped reading holds the dispatcher here too.
func (d *dispatcher) answerLeftBehind() {
	for queued := true; queued; {
		select {
		case ev := <-d.events:
			d.event(ev)
		default:
			queued = false
		}
	}
	d.table.each(func(e *entry) {
		id := jsonrpc.ID(e.key()) // req.ID is the running handler's
		d.finish(e.batch(), id, d.endedAnswer(e, id))
	})
}

// endedAnswer is the answer to request id (e's) whose handler ended with its context's
// error, or was left behind: the profile's error for a request the peer cancelled, or else
// for one abandoned at the drain deadline; nil when the profile has none.
func (d *dispatcher) endedAnswer(e *entry, id jsonrpc.ID) []byte {
	switch {
	case e.cancelled && d.p.Cancelled != nil:
		return jsonrpc.AppendError(nil, id, d.p.Cancelled)
	case !e.cancelled && d.p.Abandoned != nil:
		return jsonrpc.AppendError(nil, id, d.p.Abandoned)
	}
	return nil
}

// abandon cancels everything still in flight at the drain deadline.
func (d *dispatcher) abandon() {
	d.table.each(func(e *entry) {
		e.abandoned = true
		e.endCtx(ctxAbandoned)
	})
}

func (d *dispatcher) tooLarge(limit int) {
	d.peerLog().Warn("discarded a frame over the size limit", nil, zap.Int("limit", limit))
	if d.p.FrameTooLarge != nil {
		d.write(jsonrpc.AppendError(nil, d.unreadableID(), d.p.FrameTooLarge(limit)))
	}
}

// peerLog logs what the peer's frames cause (malformed frames, refusals), at most 10 entries
// of a kind a second however fast it writes; made at the first such entry, so a connection that
// never needs it does not allocate it.
func (d *dispatcher) peerLog() *ratelog.Limiter {
	if d.badPeer == nil {
		d.badPeer = ratelog.New(d.log, nil)
	}
	return d.badPeer
}

func (d *dispatcher) unreadableID() jsonrpc.ID {
	if d.p.NullID {
		return jsonrpc.Null
	}
	return nil
}

// frame handles one frame: a message or a batch.
func (d *dispatcher) frame(f []byte) {
	if !jsonrpc.IsBatch(f) {
		d.message(f, nil)
		return
	}
	if !d.p.Batches {
		if jsonrpc.Valid(f) {
			d.write(jsonrpc.AppendError(nil, d.unreadableID(), jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
				"Invalid request: batches are not supported by this protocol; send one message per line")))
		} else {
			d.write(jsonrpc.AppendError(nil, d.unreadableID(), jsonrpc.Errorf(jsonrpc.CodeParseError,
				"Parse error: the message is not valid JSON")))
		}
		return
	}
	members, err := jsonrpc.SplitBatch(f)
	if err != nil {
		var de *jsonrpc.DecodeError
		errors.As(err, &de)
		d.write(jsonrpc.AppendError(nil, d.unreadableID(), de.AsError()))
		return
	}
	if len(members) == 0 {
		d.write(jsonrpc.AppendError(nil, d.unreadableID(), jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"Invalid request: an empty batch")))
		return
	}
	b := &batch{}
	for _, m := range members {
		if d.stopReading {
			break
		}
		if jsonrpc.IsBatch(m) {
			d.answer(b, nil, jsonrpc.AppendError(nil, d.unreadableID(), jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
				"Invalid request: a batch member must be an object")))
			continue
		}
		// A member that becomes a request in flight holds its own copy, so that what it is
		// counted for is what it holds, and the batch's frame is not kept alive by one member.
		d.message(bytes.Clone(m), b)
	}
	b.sealed = true
	d.flushBatch(b)
}

// message handles one message; b is its batch, or nil.
func (d *dispatcher) message(f []byte, b *batch) {
	m, err := jsonrpc.Decode(f)
	if err != nil {
		var de *jsonrpc.DecodeError
		errors.As(err, &de)
		switch m.Kind {
		case jsonrpc.KindNotification:
			d.peerLog().Warn("dropped a malformed notification; it cannot be answered", f, zap.Error(err))
			return
		case jsonrpc.KindResponse:
			d.peerLog().Warn("dropped a malformed response; it cannot be answered", f, zap.Error(err))
			return
		}
		id := m.ID
		if id == nil {
			id = d.unreadableID()
		}
		d.answer(b, m.ID, jsonrpc.AppendError(nil, id, de.AsError()))
		return
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		d.response(m)
	case jsonrpc.KindNotification:
		d.notification(m, f)
	case jsonrpc.KindRequest:
		d.request(m, b, len(f))
	}
}

// notification handles a notification from the peer; f is its frame.
func (d *dispatcher) notification(m jsonrpc.Message, f []byte) {
	if m.Params != nil && !jsonrpc.IsObject(m.Params) {
		d.peerLog().Warn("dropped a notification whose params are not an object", f)
		return
	}
	if m.Method == d.p.CancelMethod && d.p.CancelMethod != "" {
		id, ok := d.p.CancelTarget(m.Params)
		if !ok {
			d.peerLog().Warn("dropped a malformed cancel notification", f)
			return
		}
		d.cancel(id)
		return
	}
	d.session.Notification(m.Method, m.Params)
}

// cancel handles the peer's cancel of the request with the given id.
func (d *dispatcher) cancel(id jsonrpc.ID) {
	e := d.table.getID(id)
	if e == nil || e.cancelled {
		return // unknown or finished: ignored, as every profile allows
	}
	e.cancelled = true
	e.endCtx(ctxCancelled)
}

func (d *dispatcher) response(m jsonrpc.Message) {
	c, ok := d.pending[string(m.ID)]
	if !ok {
		d.peerLog().Warn("dropped a response to no request of ours", nil,
			zap.ByteString("id", ratelog.Cut(m.ID, ratelog.DefaultMaxBytes)))
		return
	}
	delete(d.pending, string(m.ID))
	if m.Error != nil {
		var e jsonrpc.Error
		if err := json.Unmarshal(m.Error, &e); err != nil {
			c.reply <- callReply{err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the peer sent a malformed error object"}}
			return
		}
		c.reply <- callReply{err: &e}
		return
	}
	c.reply <- callReply{result: m.Result}
}

// request handles a request from the peer; b is its batch, or nil; size is the length of the
// frame it came in, which its ID and Params keep alive.
func (d *dispatcher) request(m jsonrpc.Message, b *batch, size int) {
	if d.stopReading {
		return // arrived after a shutdown route: never started
	}
	if d.draining {
		d.peerLog().Warn("refused a request that arrived while shutting down", nil,
			zap.String("method", ratelog.Cut(m.Method, ratelog.DefaultMaxBytes)))
		if d.p.Abandoned != nil {
			d.answer(b, m.ID, jsonrpc.AppendError(nil, m.ID, d.p.Abandoned))
		}
		return
	}
	if m.Params != nil && !jsonrpc.IsObject(m.Params) {
		e := d.p.InvalidParams
		if e == nil {
			e = jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: params must be a JSON object")
		}
		d.answer(b, m.ID, jsonrpc.AppendError(nil, m.ID, e))
		return
	}
	if d.table.getID(m.ID) != nil {
		d.answer(b, m.ID, jsonrpc.AppendError(nil, m.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"Invalid request: this id is already in flight; use a new id for each request")))
		return
	}
	e := &entry{req: Request{ID: m.ID, Method: m.Method, Params: m.Params, d: d}}
	if b != nil || d.s.opts.observer != nil {
		e.more.Store(&entryMore{batch: b})
	}
	r := d.session.Route(&e.req)
	if r.Handler == nil {
		var frame []byte
		if r.Err != nil {
			frame = jsonrpc.AppendError(nil, m.ID, ErrorOf(r.Err))
		} else {
			frame = d.encodeResult(m.ID, r.Result)
		}
		d.answer(b, m.ID, frame)
		if r.Shutdown {
			d.shutdown()
		}
		return
	}
	if d.table.len() >= d.s.opts.maxRequests || d.bytes+size > d.s.opts.maxBytes || size > math.MaxInt32 {
		d.peerLog().Warn("refused a request: the connection's budget for requests in flight is spent", nil,
			zap.Int("inFlight", d.table.len()), zap.Int("inFlightBytes", d.bytes), zap.Int("frameBytes", size))
		d.answer(b, m.ID, jsonrpc.AppendError(nil, m.ID, d.p.Overloaded(d.s.opts.retryAfter)))
	} else {
		key := string(m.ID)
		e.keyPtr, e.keyLen, e.size, e.req.e = unsafe.StringData(key), int32(len(key)), int32(size), e
		d.table.put(e)
		d.bytes += size
		if b != nil {
			b.pending++
		}
		d.start(e, r.Handler)
	}
	if r.Shutdown {
		d.shutdown()
	}
}

// shutdown is a route's request to stop: nothing more is read, so nothing that arrives later
// is started or answered.
func (d *dispatcher) shutdown() {
	d.in = nil
	d.stopReading = true
	d.beginDrain()
}

func (d *dispatcher) start(e *entry, h Handler) {
	d.actors++
	d.runWorker(job{e: e, h: h})
}

// runActor is the body of a request actor. Its frame sits under every handler's, and a few
// hundred bytes here decide whether a request that waits in its handler keeps its worker's
// initial 2 KiB stack or needs 4 KiB. So it recovers a panic itself, with no helper between,
// and all that comes after the handler is in handled, which it defers.
func (d *dispatcher) runActor(ctx context.Context, e *entry, h Handler) {
	if d.s.opts.observer != nil {
		d.runObserved(ctx, e, h)
		return
	}
	var result any
	var err error
	defer d.handled(ctx, e, &result, &err)
	result, err = h(ctx, &e.req)
}

// handled is runActor's deferred end: a panic of the handler's is its error; a Continuation
// goes on on a goroutine of its own; any other result is encoded (a panic there, of an
// Appender's or a MarshalJSON's, is the error too) and reported.
func (d *dispatcher) handled(ctx context.Context, e *entry, result *any, err *error) {
	if p := recover(); p != nil {
		*result, *err = nil, &actors.PanicError{Value: p, Stack: debug.Stack()}
	}
	d.report(ctx, e, *result, *err)
}

// report is handled's body, out of line so that runActor's frame stays small.
//
//go:noinline
func (d *dispatcher) report(ctx context.Context, e *entry, result any, err error) {
	if err == nil {
		if next, ok := result.(Continuation); ok {
			d.detach(e, next) // ctx is e: not observed
			return
		}
	}
	var frame []byte
	if err == nil {
		err = actors.Recover(func() error {
			frame = d.encodeResult(e.req.ID, result)
			return nil
		})
	}
	d.done(ctx, e, frame, err)
}

// handle is runActor's work for runObserved: it runs e's handler and encodes its result,
// unless it is a Continuation, which it returns; a panic of either (an Appender or a
// MarshalJSON may panic too) is its error.
func (d *dispatcher) handle(ctx context.Context, e *entry, h Handler) (frame []byte, next Continuation, err error) {
	err = actors.Recover(func() error {
		result, herr := h(ctx, &e.req)
		if herr == nil {
			if c, ok := result.(Continuation); ok {
				next = c
				return nil
			}
			frame = d.encodeResult(e.req.ID, result)
		}
		return herr
	})
	return frame, next, err
}

// detach runs the rest of e's handler on a goroutine of its own (see Continuation). The
// dispatcher learns first that the worker is free, so that the request's completion, which
// the new goroutine sends, always comes after it. The goroutine is the request's actor from
// then on: it holds the request's place in the table until it reports, as a worker does.
//
//go:noinline
func (d *dispatcher) detach(e *entry, next Continuation) {
	d.send(event{kind: evDetached, e: e})
	e.next = next
	// The goroutine starts in this literal, which is runDetached's body: started as
	// e.runDetached(), it would start in a wrapper's frame, 24 bytes more under the
	// continuation.
	go func() {
		defer e.detachedPanic()
		e.returned(e.next())
	}()
}

// runDetached runs e.next and reports its end. Its frame is all that sits between the
// goroutine's start and the continuation (it recovers a panic itself, with no helper
// between, and hands the continuation's results straight to returned, keeping only e across
// the call), so that a continuation that only waits stays within the initial stack; the
// result is encoded after it has returned. e.next is nil once the continuation has returned.
func (e *entry) runDetached() {
	defer e.detachedPanic()
	e.returned(e.next())
}

// returned reports that e.next returned.
func (e *entry) returned(result any, err error) {
	e.next = nil
	e.req.d.continued(e, result, err)
}

// detachedPanic is runDetached's deferred end: a panic of the continuation's is the request's
// error.
func (e *entry) detachedPanic() {
	if e.next == nil {
		return // returned, and reported
	}
	p := recover()
	e.next = nil
	e.req.d.continued(e, nil, &actors.PanicError{Value: p, Stack: debug.Stack()})
}

// continued reports a continuation's end as runActor reports a handler's; a Continuation that
// it returned is called in turn, on the same goroutine.
//
//go:noinline
func (d *dispatcher) continued(e *entry, result any, err error) {
	var ctx context.Context = e
	var end func(error)
	if m := e.more.Load(); m != nil && m.ctx != nil {
		ctx, end = m.ctx, m.end
	}
	if next, ok := result.(Continuation); ok && err == nil {
		e.next = next
		e.runDetached()
		return
	}
	var frame []byte
	if err == nil {
		err = actors.Recover(func() error {
			frame = d.encodeResult(e.req.ID, result)
			return nil
		})
	}
	frame, err = ended(end, frame, err)
	d.done(ctx, e, frame, err)
}

// runObserved is runActor under the Server's Observer (WithObserver). A panic of the
// observer's is the request's error, as a handler's is.
//
//go:noinline
func (d *dispatcher) runObserved(ctx context.Context, e *entry, h Handler) {
	var frame []byte
	var next Continuation
	var end func(error)
	err := actors.Recover(func() error {
		var err error
		failed := &ResultFailure{} // where the handler's ReportFailure lands
		var observed func(error)
		ctx, observed = d.s.opts.observer.Start(context.WithValue(ctx, failureKey{}, failed), &e.req)
		end = func(err error) {
			if err == nil && failed.Type != "" {
				err = failed
			}
			observed(err)
		}
		frame, next, err = d.handle(ctx, e, h)
		return err
	})
	if next != nil {
		m := e.more.Load()
		m.ctx, m.end = ctx, end // for the continuation's goroutine, which starts after this
		d.detach(e, next)
		return
	}
	frame, err = ended(end, frame, err)
	d.done(ctx, e, frame, err)
}

// ended calls an Observer's end (if any) with the handler's error; a panic of end's is the
// request's error, unless it already has one.
func ended(end func(error), frame []byte, err error) ([]byte, error) {
	if end != nil {
		if perr := actors.Recover(func() error { end(err); return nil }); perr != nil && err == nil {
			frame, err = nil, perr
		}
	}
	return frame, err
}

// done reports a finished handler to the dispatcher.
//
//go:noinline
func (d *dispatcher) done(ctx context.Context, e *entry, frame []byte, err error) {
	ev := event{kind: evDone, e: e, frame: frame}
	if err != nil {
		ev = d.failed(ctx, e, err)
	}
	e.endCtx(ctxFinished)
	d.send(ev)
}

// failed is the completion event of a handler that returned an error or panicked.
//
//go:noinline
func (d *dispatcher) failed(ctx context.Context, e *entry, err error) event {
	ev := event{kind: evDone, e: e}
	var pe *actors.PanicError
	if errors.As(err, &pe) {
		d.log.Error("request handler panicked", zap.String("method", e.req.Method),
			zap.Any("panic", pe.Value), zap.ByteString("stack", pe.Stack))
		ev.frame = jsonrpc.AppendError(nil, e.req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "Internal error: the handler panicked; see the server's log"})
		return ev
	}
	ev.ctxErr = ctx.Err() != nil
	var je *jsonrpc.Error
	if !errors.As(err, &je) && !ev.ctxErr {
		fields := []zap.Field{zap.String("method", e.req.Method), zap.Error(err)}
		if t, ok := TraceFrom(ctx); ok {
			fields = append(fields, zap.String("traceId", t.TraceID()))
		}
		d.log.Warn("request handler failed", fields...)
	}
	ev.frame = jsonrpc.AppendError(nil, e.req.ID, ErrorOf(err))
	return ev
}

func (d *dispatcher) encodeResult(id jsonrpc.ID, result any) []byte {
	switch r := result.(type) {
	case json.RawMessage:
		if r == nil {
			r = json.RawMessage("null")
		}
		return jsonrpc.AppendResult(nil, id, r)
	case nil:
		return jsonrpc.AppendResult(nil, id, []byte("null"))
	case Appender:
		out := jsonrpc.AppendResultPrefix(newFrame(40+len(id)+r.SizeHint()), id)
		return append(r.AppendJSON(out), '}')
	}
	raw, err := json.Marshal(result)
	if err != nil {
		d.log.Error("cannot encode a handler's result", zap.Error(err))
		return jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "Internal error: the result could not be encoded as JSON"})
	}
	return jsonrpc.AppendResult(nil, id, raw)
}

func (d *dispatcher) event(ev event) {
	e := ev.e
	switch ev.kind {
	case evPeer:
		d.write(ev.frame)
	case evRun:
		notify := func(method string, params any) error {
			raw, err := marshalParams(params)
			if err != nil {
				return err
			}
			d.write(jsonrpc.AppendNotification(nil, method, raw))
			return nil
		}
		if err := actors.Recover(func() error { ev.run(notify); return nil }); err != nil {
			d.log.Error("a session's work run on the dispatcher (Peer.Run) panicked; the connection goes on", zap.Error(err))
		}
	case evNotify:
		if d.table.get(e.key()) != e || (e.cancelled && d.p.Cancelled == nil) {
			return // answered already, or cancelled and owed nothing more
		}
		d.emit(Outbound{Frame: ev.frame, Request: e.req.ID})
	case evCall:
		if d.table.get(e.key()) != e {
			ev.call.reply <- callReply{err: ErrConnectionClosed}
			return
		}
		d.nextCall++
		id := jsonrpc.ID(strconv.AppendInt(nil, d.nextCall, 10))
		d.pending[string(id)] = ev.call
		m := e.moreOf()
		m.calls = append(m.calls, string(id))
		d.emit(Outbound{Frame: jsonrpc.AppendRequest(nil, id, ev.call.method, ev.call.params), Request: e.req.ID})
	case evDetached:
		d.becameIdle(e.w)
		e.w = nil
	case evDone:
		if e.w != nil {
			d.becameIdle(e.w)
		}
		d.actors--
		d.forget(e)
		frame := ev.frame
		switch {
		case e.cancelled && d.p.Cancelled == nil:
			frame = nil
		case (e.cancelled || e.abandoned) && ev.ctxErr:
			frame = d.endedAnswer(e, e.req.ID)
		}
		d.finish(e.batch(), e.req.ID, frame)
	}
}

// forget removes an entry from the table, gives back what it held of the budget, and drops
// its calls to the peer.
func (d *dispatcher) forget(e *entry) {
	if d.table.remove(e) {
		d.bytes -= int(e.size)
	}
	if m := e.more.Load(); m != nil {
		for _, id := range m.calls {
			delete(d.pending, id)
		}
	}
}

// answer sends the final frame of the request with the given id (nil: none), or keeps it for
// its batch.
func (d *dispatcher) answer(b *batch, id jsonrpc.ID, frame []byte) {
	if b == nil {
		if frame != nil {
			d.emit(Outbound{Frame: frame, Request: id, Final: true})
		}
		return
	}
	if frame != nil {
		b.parts = append(b.parts, frame)
	}
	d.flushBatch(b)
}

// finish is answer for a request that had an entry: in a batch it no longer counts as pending.
func (d *dispatcher) finish(b *batch, id jsonrpc.ID, frame []byte) {
	if b != nil {
		b.pending--
	}
	d.answer(b, id, frame)
}

func (d *dispatcher) flushBatch(b *batch) {
	if !b.sealed || b.pending > 0 || b.parts == nil {
		return
	}
	size := 1
	for _, p := range b.parts {
		size += len(p) + 1
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i, p := range b.parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p...)
	}
	out = append(out, ']')
	b.parts = nil
	d.write(out)
}

// write sends a frame that belongs to no request.
func (d *dispatcher) write(frame []byte) { d.emit(Outbound{Frame: frame, Final: true}) }
