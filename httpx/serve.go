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
	srv := &http.Server{Handler: h, ReadHeaderTimeout: o.ReadHeaderTimeout, IdleTimeout: o.IdleTimeout}
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
