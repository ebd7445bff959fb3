package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relayrt/relay/jsonrpc"
)

// Server serves one protocol profile on any number of connections.
type Server struct {
	profile Profile
	opts    options
}

// NewServer returns a server for the profile.
func NewServer(p Profile, opts ...Option) *Server {
	if p.NewSession == nil {
		panic("runtime: Profile.NewSession is required")
	}
	if p.Overloaded == nil {
		p.Overloaded = defaultOverloaded
	}
	jsonrpc.Intern(p.Methods...)
	o := defaultOptions()
	for _, opt := range opts {
		opt.apply(&o)
	}
	return &Server{profile: p, opts: o}
}

// defaultOverloaded is the overload error of profiles that do not choose their own: -32000,
// the first code JSON-RPC leaves to implementations, saying when to retry.
func defaultOverloaded(retryAfter time.Duration) *jsonrpc.Error {
	ms := retryAfter.Milliseconds()
	return &jsonrpc.Error{Code: -32000,
		Message: fmt.Sprintf("Server overloaded: this connection holds as much in flight as it may; retry after %d ms", ms),
		Data:    map[string]any{"retryAfterMs": ms, "retryable": true}}
}

// Inbound is one unit of input from a transport: a frame, or word that the transport
// discarded a frame longer than its limit.
type Inbound struct {
	Frame    []byte // one message (or batch), owned by the dispatcher from now on
	TooLarge int    // when nonzero: a frame over this many bytes was discarded
	// State says that Frame is not a message but the session's state, as another
	// connection of the session saved it (see SessionState): the protocol's Session takes it
	// (StateTaker) before the frames that follow.
	State bool
}

// Serve runs one connection's dispatcher until input ends (in is closed), ctx is cancelled,
// or a route asks for shutdown, and the requests in flight have been answered or abandoned.
// It is the only sender on out and closes it before returning. Cancelling ctx starts a
// graceful drain; the requests' own contexts are not children of ctx.
func (s *Server) Serve(ctx context.Context, in <-chan Inbound, out chan<- []byte) error {
	defer close(out)
	return newDispatcher(ctx, s, in, func(o Outbound) { out <- o.Frame }, connEvents).run(ctx)
}

// Outbound is a frame with what a transport that routes frames per request (HTTP) needs to
// know: which request it belongs to, and whether it is that request's last.
type Outbound struct {
	Frame []byte
	// Request is the id of the request the frame belongs to (its answer, a progress or log
	// notification, a question to the peer), or nil for a frame of the connection's own:
	// a notification of the session's, an answer to an unreadable request, a batch's answer.
	Request jsonrpc.ID
	// Final marks a request's answer: nothing more for it follows.
	Final bool
	// Event is the frame's id on a resumable stream of a transport's (httpx numbers the events
	// of an HTTP session's SSE streams); the dispatcher leaves it empty.
	Event string
}

// ServeOutbound is Serve for transports that route frames per request.
func (s *Server) ServeOutbound(ctx context.Context, in <-chan Inbound, out chan<- Outbound) error {
	defer close(out)
	return newDispatcher(ctx, s, in, func(o Outbound) { out <- o }, connEvents).run(ctx)
}

// ServeRequest is ServeOutbound for an input that carries one message, and perhaps the
// notification that cancels it: an HTTP POST of MCP 2026-07-28, or of stateless RCP. It
// behaves as ServeOutbound does, for any input; only its queue of the handlers' completions
// and notifications is sized for one request rather than for a connection's many, which
// spares each such request the allocation of a connection's queue. A handler that has more
// to say than that queue holds waits for the dispatcher to take it, as every handler waits
// while the transport is behind.
func (s *Server) ServeRequest(ctx context.Context, in <-chan Inbound, out chan<- Outbound) error {
	defer close(out)
	return newDispatcher(ctx, s, in, func(o Outbound) { out <- o }, requestEvents).run(ctx)
}

// Sentinel causes seen by handlers through context.Cause.
var (
	// ErrCancelled is the cause of a request context the peer cancelled.
	ErrCancelled = errors.New("runtime: the peer cancelled the request")
	// ErrAbandoned is the cause of a request context still running at the drain deadline.
	ErrAbandoned = errors.New("runtime: the server is shutting down and the drain deadline passed")
)
