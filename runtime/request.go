package runtime

import (
	"context"
	"encoding/json"
	"errors"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
)

// ErrConnectionClosed is returned by Request.Notify and Request.Call once the connection the
// request arrived on has stopped.
var ErrConnectionClosed = errors.New("runtime: the connection has closed; the peer will not see this message")

// ErrNotRunning is returned by Request.Notify and Request.Call on a request that is being
// answered at once by a Route rather than run by a handler.
var ErrNotRunning = errors.New("runtime: only a request run by a Handler can send messages to the peer")

// Request is one JSON-RPC request as its handler sees it. ID and Params are the raw bytes from
// the wire; they stay valid for as long as the handler keeps them.
type Request struct {
	ID     jsonrpc.ID
	Method string
	Params json.RawMessage

	d *dispatcher
	e *entry
}

// Notify sends a notification tied to this request, such as progress or a log message. It is
// dropped if the request has already been answered or was cancelled by a peer whose protocol
// forbids further messages for it.
func (r *Request) Notify(method string, params any) error {
	if r.e == nil {
		return ErrNotRunning
	}
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	return r.d.send(event{kind: evNotify, e: r.e, frame: jsonrpc.AppendNotification(nil, method, raw)})
}

// Call sends a request to the peer (a server asking its client, in protocols that allow it)
// and waits for the answer until ctx is done. A JSON-RPC error answer is returned as a
// *jsonrpc.Error.
func (r *Request) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if r.e == nil {
		return nil, ErrNotRunning
	}
	raw, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	c := &call{method: method, params: raw, reply: make(chan callReply, 1)}
	if err := r.d.send(event{kind: evCall, e: r.e, call: c}); err != nil {
		return nil, err
	}
	select {
	case rep := <-c.reply:
		return rep.result, rep.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-r.d.stopped:
		return nil, ErrConnectionClosed
	}
}

// Draining is closed when the connection starts to shut down. A long-lived handler (a
// subscription stream) returns when it is closed, so that the peer is answered before the
// connection ends.
func (r *Request) Draining() <-chan struct{} { return r.d.drainCh }

func marshalParams(params any) (json.RawMessage, error) {
	switch p := params.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	}
	return json.Marshal(params)
}

func asError(err error, target **jsonrpc.Error) bool { return errors.As(err, target) }

type call struct {
	method string
	params json.RawMessage
	reply  chan callReply // buffered: the dispatcher never waits on it
}

type callReply struct {
	result json.RawMessage
	err    error
}

// Peer is a Session's handle on its connection, for messages that belong to no request.
type Peer struct{ d *dispatcher }

// Notify sends a notification to the peer. It may be called from any goroutine, and fails
// with ErrConnectionClosed once the connection has stopped.
func (p *Peer) Notify(method string, params any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	return p.d.send(event{kind: evPeer, frame: jsonrpc.AppendNotification(nil, method, raw)})
}

// Run runs fn on the connection's dispatcher goroutine, where the Session's methods run, so
// that a goroutine of the session's (one that forwards server-wide changes, say) can read and
// change the session's state without a lock. notify, valid only while fn runs, sends a
// notification tied to no request. fn must return quickly and must not call the Peer's other
// methods; a panic in it is logged and the connection goes on. Run returns once fn is queued,
// or ErrConnectionClosed; fn does not run if the connection stops before its turn.
func (p *Peer) Run(fn func(notify func(method string, params any) error)) error {
	return p.d.send(event{kind: evRun, run: fn})
}

// Done is closed when the connection has stopped.
func (p *Peer) Done() <-chan struct{} { return p.d.stopped }

// Logger is the connection's logger (stderr by default), for what a Session cannot answer.
func (p *Peer) Logger() *zap.Logger { return p.d.log }
