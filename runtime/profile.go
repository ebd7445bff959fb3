package runtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/relayrt/relay/jsonrpc"
)

// Profile declares what a protocol on JSON-RPC decides that the dispatcher does not.
type Profile struct {
	// NullID answers a request whose id could not be read with "id": null; otherwise the id
	// member is left out.
	NullID bool

	// Batches accepts a JSON array of messages and answers with an array; otherwise an array
	// is answered with InvalidRequest.
	Batches bool

	// CancelMethod names the notification that cancels a request in flight, and CancelTarget
	// reads the id of the request to cancel from its params (false when malformed).
	CancelMethod string
	CancelTarget func(params json.RawMessage) (jsonrpc.ID, bool)

	// Cancelled is the error owed to a request the peer cancelled whose handler did not
	// produce a result. Nil means a cancelled request is never answered, not even with a
	// result that was already on its way.
	Cancelled *jsonrpc.Error

	// Abandoned answers requests still running (or queued) at the drain deadline. Nil means
	// they are not answered.
	Abandoned *jsonrpc.Error

	// FrameTooLarge answers a frame the transport discarded for exceeding its size limit.
	FrameTooLarge func(limit int) *jsonrpc.Error

	// Overloaded answers a request that would exceed the connection's budget for requests in
	// flight (see WithBudget), at once.
	Overloaded func(retryAfter time.Duration) *jsonrpc.Error

	// InvalidParams answers a request whose params are present but not a JSON object.
	// Nil means the standard -32602.
	InvalidParams *jsonrpc.Error

	// NewSession returns the protocol state of one connection. The Peer lets the session
	// send notifications that belong to no request (list changes, resource updates).
	NewSession func(peer *Peer) Session

	// Proxy, when not nil, is what a proxy that restarts servers of this protocol must know
	// of it (package supervise reads it).
	Proxy *ProxyRules

	// Methods are the protocol's own method and notification names, in both directions: the
	// one list of them. NewServer interns them (jsonrpc.Intern), so that decoding them
	// allocates nothing and httpx's metrics label requests by them (any other name is
	// "other").
	Methods []string
}

// Session is a protocol's state for one connection. The dispatcher calls its methods on its
// own goroutine, one at a time, so a Session needs no locks; for the same reason its methods
// must return quickly and never block.
type Session interface {
	// Route decides what to do with a request: answer it at once or run a handler.
	Route(req *Request) Route
	// Notification receives every notification except cancels.
	Notification(method string, params json.RawMessage)
}

// SessionCloser is implemented by a Session that holds resources beyond its connection's
// life, such as a subscription to server-wide events; Close is called once, on the
// dispatcher's goroutine, when the connection stops.
type SessionCloser interface {
	Close()
}

// Route is a Session's decision about one request. Exactly one of Handler, Result and Err is
// set; a Route with none of them is answered with a null result.
type Route struct {
	// Handler runs in its own request actor.
	Handler Handler
	// Result answers the request at once: json.RawMessage is sent as it is, an Appender
	// encodes itself, anything else is encoded with encoding/json.
	Result any
	// Err answers the request at once with an error (see ErrorOf).
	Err error
	// Shutdown stops reading after this request is answered: requests that arrive later are
	// never started, and the connection drains.
	Shutdown bool
}

// Handler serves one request, on a worker goroutine of the server's (workers are reused: a
// handler must not keep anything of its goroutine's after it returns). Its context is
// cancelled when the peer cancels the request or the drain deadline passes. The result is
// encoded as Route.Result is; an error is sent as ErrorOf says. A handler that may wait a long
// time returns a Continuation, the rest of it, which runs on a goroutine of its own while the
// worker goes back to its pool.
type Handler func(ctx context.Context, req *Request) (result any, err error)

// Appender is a result that encodes itself straight into the response frame, so that a
// large result is not first encoded into a buffer of its own and then copied.
type Appender interface {
	// AppendJSON appends the result's JSON encoding, a complete JSON value, to dst.
	AppendJSON(dst []byte) []byte
	// SizeHint estimates the length of the encoding, to size the frame at once.
	SizeHint() int
}

// ErrorOf returns the JSON-RPC error that answers err: the *jsonrpc.Error itself when err is
// or wraps one, otherwise an internal error whose message does not leak err's text.
func ErrorOf(err error) *jsonrpc.Error {
	var e *jsonrpc.Error
	if asError(err, &e) {
		return e
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the handler failed; see the server's log"}
}
