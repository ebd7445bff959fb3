package httpx

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// ServerOptions bounds an HTTP server's connections. The zero value gives the defaults.
type ServerOptions struct {
	ReadHeaderTimeout time.Duration // default 10 s: a client that trickles headers is cut off
	IdleTimeout       time.Duration // default 2 minutes
	ShutdownTimeout   time.Duration // default 10 s: how long in-flight requests may finish
	// MaxConns bounds the connections open at once (default 16,384, well above the
	// handlers' in-flight slots). At the limit the server accepts no more until one closes:
	// new clients wait in the listen backlog, and clients cannot exhaust the process's file
	// descriptors or the memory each connection costs. Idle keep-alive connections count, and
	// are closed after IdleTimeout; a connection that has not sent its headers within
	// ReadHeaderTimeout is closed, so the limit cannot be held by silence for long.
	MaxConns int
	// Ops, when set, is marked not ready (/readyz answers 503) as soon as shutdown begins.
	Ops *Ops
	// Drain lists handlers (an MCPHandler, an RCPHandler) that are closed as soon as shutdown
	// begins, so that their long-lived streams (subscriptions/listen, a legacy session's GET
	// stream) end with their final answers instead of holding the shutdown until
	// ShutdownTimeout. Serve does this for h itself when h has a Close method.
	Drain []io.Closer
}

// Serve serves h on ln until ctx is cancelled, then stops accepting, closes the handlers to
// drain (see ServerOptions.Drain), lets in-flight requests finish within the shutdown timeout,
// and returns. Streams still open then are closed.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opts *ServerOptions) error {
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 16384
	}
	lim := newConnLimit(ln, o.MaxConns)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: o.ReadHeaderTimeout, IdleTimeout: o.IdleTimeout, ConnState: lim.track}
	ln = lim
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	if o.Ops != nil {
		o.Ops.SetReady(false)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	drain := o.Drain
	if c, ok := h.(io.Closer); ok {
		drain = append(drain, c)
	}
	var closing sync.WaitGroup
	for _, c := range drain { // while Shutdown waits for the requests these end
		closing.Go(func() { c.Close() })
	}
	defer closing.Wait()
	err := srv.Shutdown(shutdown)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// ListenAndServe listens on addr (default 127.0.0.1:8080; a loopback address keeps the
// server off the network unless you choose otherwise) and serves h as Serve does.
func ListenAndServe(ctx context.Context, addr string, h http.Handler, opts *ServerOptions) error {
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return Serve(ctx, ln, h, opts)
}

// connLimit is a listener that accepts at most max connections open at once: Accept waits
// for a slot before it accepts. The server gives a slot back through track, its ConnState
// hook, when a connection closes (or is hijacked); the connections themselves are the
// listener's own, unwrapped, so that TLS and HTTP/2 see what they expect.
type connLimit struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func newConnLimit(ln net.Listener, max int) *connLimit {
	return &connLimit{Listener: ln, slots: make(chan struct{}, max), closed: make(chan struct{})}
}

func (l *connLimit) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return c, nil
}

func (l *connLimit) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// track gives a connection's slot back when it ends. net/http reports StateNew for every
// connection Accept returned, then exactly one of StateClosed and StateHijacked.
func (l *connLimit) track(_ net.Conn, state http.ConnState) {
	if state == http.StateClosed || state == http.StateHijacked {
		<-l.slots
	}
}
