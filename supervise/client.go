package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
)

// Client is a JSON-RPC client over a supervised child, for many callers at once: every call
// gets an id and a progress token of its own, and crashes are handled beneath it by the
// proxy's core, fed with frames directly (requests safe to repeat are replayed on the new
// child, the others fail with the restart error). A bridge from HTTP uses one Client per
// child.
type Client struct {
	in      chan []byte  // the proxy core's host frames; closed by Close
	inMu    sync.RWMutex // held to send on in, and taken alone to close it
	inShut  bool         // in is closed
	mailbox chan clientMsg
	done    chan struct{}
	proxied chan error
	nextID  atomic.Int64
	load    atomic.Int64
	proto   *Protocol
	log     *zap.Logger
}

type clientMsg struct {
	id     string
	call   *clientCall // nil: forget id
	answer chan struct{}
}

type clientCall struct {
	reply  chan clientReply // buffered: the router never waits on it
	notify func(method string, params json.RawMessage)
}

type clientReply struct {
	result json.RawMessage
	err    *jsonrpc.Error
}

// ErrClientClosed is returned by calls on a Client whose child is gone for good.
var ErrClientClosed = errors.New("supervise: the client is closed")

// NewClient starts sup's child behind a proxy and returns a client for it. Close stops it.
func NewClient(ctx context.Context, sup *Supervisor, opts *ProxyOptions) *Client {
	o := opts.withDefaults()
	c := &Client{in: make(chan []byte, 64), mailbox: make(chan clientMsg), done: make(chan struct{}),
		proxied: make(chan error, 1), proto: o.Protocol, log: o.Logger}
	out := make(chan []byte, 256)
	go func() { // the proxy's core; its output ends when it returns
		err := serveFrames(ctx, sup, c.in, out, o)
		close(out)
		c.proxied <- err
	}()
	go c.route(out)
	return c
}

// send hands one frame to the proxy's core; it fails once the Client is closed or its child
// is gone for good.
func (c *Client) send(frame []byte) error {
	c.inMu.RLock()
	defer c.inMu.RUnlock()
	if c.inShut {
		return ErrClientClosed
	}
	select {
	case c.in <- frame:
		return nil
	case <-c.done:
		return ErrClientClosed
	}
}

// Load reports how many calls are in flight, for least-loaded routing.
func (c *Client) Load() int64 { return c.load.Load() }

// Done is closed when the client can take no more calls (its supervisor gave up or it was
// closed).
func (c *Client) Done() <-chan struct{} { return c.done }

// Call sends a request and waits for its answer. notify, when not nil, receives the
// notifications tied to the request (progress, logs) in order. A JSON-RPC error answer is
// returned as rpcErr; err is for failures of the call itself (ctx ended: the child is sent
// notifications/cancelled).
func (c *Client) Call(ctx context.Context, method string, params json.RawMessage,
	notify func(method string, params json.RawMessage)) (result json.RawMessage, rpcErr *jsonrpc.Error, err error) {
	c.load.Add(1)
	defer c.load.Add(-1)
	id := "c" + strconv.FormatInt(c.nextID.Add(1), 10)
	idJSON := jsonrpc.StringID(id)
	if c.proto.progressToken(params) != nil {
		params = setMeta(params, c.proto.rules.ProgressKey, json.RawMessage(idJSON)) // unique per call
	}
	call := &clientCall{reply: make(chan clientReply, 1), notify: notify}
	if err := c.tell(clientMsg{id: string(idJSON), call: call}); err != nil {
		return nil, nil, err
	}
	if err := c.send(jsonrpc.AppendRequest(nil, idJSON, method, params)); err != nil {
		c.tell(clientMsg{id: string(idJSON)})
		return nil, nil, err
	}
	select {
	case r := <-call.reply:
		return r.result, r.err, nil
	case <-ctx.Done():
		c.tell(clientMsg{id: string(idJSON)})
		c.send(c.proto.cancelFrame(json.RawMessage(idJSON), "the caller went away"))
		return nil, nil, ctx.Err()
	case <-c.done:
		return nil, nil, ErrClientClosed
	}
}

// Notify sends a notification to the child.
func (c *Client) Notify(method string, params json.RawMessage) error {
	return c.send(jsonrpc.AppendNotification(nil, method, params))
}

func (c *Client) tell(m clientMsg) error {
	m.answer = make(chan struct{})
	select {
	case c.mailbox <- m:
		<-m.answer
		return nil
	case <-c.done:
		return ErrClientClosed
	}
}

// Close ends the child's input; the proxy finishes what is in flight and stops the child
// with the full sequence. It returns the proxy's error (ErrGaveUp if it had given up).
func (c *Client) Close() error {
	c.inMu.Lock()
	if !c.inShut {
		c.inShut = true
		close(c.in)
	}
	c.inMu.Unlock()
	<-c.done
	return <-c.proxied
}

// route is the client's actor: it owns the table of calls and takes what the proxy's core
// sends, until the core returns and closes frames.
func (c *Client) route(frames <-chan []byte) {
	calls := map[string]*clientCall{}
	defer close(c.done)
	for {
		select {
		case m := <-c.mailbox:
			if m.call != nil {
				calls[m.id] = m.call
			} else {
				delete(calls, m.id)
			}
			close(m.answer)
		case f, ok := <-frames:
			if !ok {
				for _, call := range calls {
					call.reply <- clientReply{err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
						Message: "Internal error: the server is gone", Data: map[string]any{"retryable": false}}}
				}
				return
			}
			c.frame(f, calls)
		}
	}
}

func (c *Client) frame(f []byte, calls map[string]*clientCall) {
	m, err := jsonrpc.Decode(f)
	if err != nil && m.Kind != jsonrpc.KindResponse {
		return
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		call := calls[string(m.ID)]
		if call == nil {
			return
		}
		delete(calls, string(m.ID))
		if m.Error != nil {
			var e jsonrpc.Error
			json.Unmarshal(m.Error, &e)
			call.reply <- clientReply{err: &e}
			return
		}
		call.reply <- clientReply{result: m.Result}
	case jsonrpc.KindNotification:
		var key []byte
		if rules := &c.proto.rules; is(m.Method, rules.Progress) {
			key = jsonrpc.Field(m.Params, rules.ProgressKey)
		} else if rules.StreamKey != "" {
			key = jsonrpc.Field(jsonrpc.Field(m.Params, "_meta"), rules.StreamKey)
		}
		call := calls[string(key)]
		if key == nil && len(calls) == 1 {
			// A log message names no request: over stdio it is attributed to the one call in
			// flight, when there is exactly one; otherwise nobody can tell, and it is dropped.
			for _, only := range calls {
				call = only
			}
		}
		if call != nil && call.notify != nil {
			call.notify(m.Method, m.Params)
		}
	case jsonrpc.KindRequest: // the child asks its client something: a Client cannot answer
		c.log.Warn("the child asked its client something a supervise.Client cannot answer", zap.String("method", m.Method))
		// Never a blocking send from here: the core may be waiting for this actor to take
		// its output. A full input drops the answer, and the child's request times out.
		answer := jsonrpc.AppendError(nil, m.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: "Method not found: this client does not serve " + m.Method})
		c.inMu.RLock()
		if !c.inShut {
			select {
			case c.in <- answer:
			default:
			}
		}
		c.inMu.RUnlock()
	}
}
