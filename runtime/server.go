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
	o := defaultOptions()
	for _, opt := range opts {
		opt.apply(&o)
	}
	return &Server{profile: p, opts: o}
}

func defaultOverloaded(retryAfter time.Duration) *jsonrpc.Error {
	return &jsonrpc.Error{Code: -32000,
		Message: fmt.Sprintf("Server overloaded: too many requests in flight; retry after %d ms", retryAfter.Milliseconds())}
}

// Inbound is one unit of input from a transport: a frame, or word that the transport
// discarded a frame longer than its limit.
type Inbound struct {
	Frame    []byte // one message (or batch), owned by the dispatcher from now on
	TooLarge int    // when nonzero: a frame over this many bytes was discarded
}

// Serve runs one connection's dispatcher until input ends (in is closed), ctx is cancelled,
// or a route asks for shutdown, and the requests in flight have been answered or abandoned.
// It is the only sender on out and closes it before returning. Cancelling ctx starts a
// graceful drain; the requests' own contexts are not children of ctx.
func (s *Server) Serve(ctx context.Context, in <-chan Inbound, out chan<- []byte) error {
	d := newDispatcher(ctx, s, in, out)
	defer close(out)
	return d.run(ctx)
}

// Sentinel causes seen by handlers through context.Cause.
var (
	// ErrCancelled is the cause of a request context the peer cancelled.
	ErrCancelled = errors.New("runtime: the peer cancelled the request")
	// ErrAbandoned is the cause of a request context still running at the drain deadline.
	ErrAbandoned = errors.New("runtime: the server is shutting down and the drain deadline passed")
)
