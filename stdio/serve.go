package stdio

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/relayrt/relay/actors"
	"github.com/relayrt/relay/runtime"
)

// Option configures a stdio transport.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	maxFrame int
	logger   *zap.Logger
}

// WithMaxFrame sets the longest line accepted (default 16 MiB); longer lines are discarded and
// answered with the profile's frame-too-large error.
func WithMaxFrame(n int) Option { return optionFunc(func(o *options) { o.maxFrame = n }) }

// WithLogger sets the transport's logger (default: runtime.DefaultLogger, on stderr).
func WithLogger(l *zap.Logger) Option { return optionFunc(func(o *options) { o.logger = l }) }

func buildOptions(opts []Option) options {
	o := options{maxFrame: DefaultMaxFrame}
	for _, opt := range opts {
		opt.apply(&o)
	}
	if o.logger == nil {
		o.logger = runtime.DefaultLogger()
	}
	return o
}

// Serve serves one connection of srv: frames are read from r and written to w. It returns
// after input ends (or ctx is cancelled) and every request has been answered or abandoned as
// the server's drain rules say, with all output written. If r is an io.Closer it is closed
// when ctx is cancelled, to stop a blocked read; a reader that cannot be interrupted keeps
// Serve waiting until its Read returns.
func Serve(ctx context.Context, srv *runtime.Server, r io.Reader, w io.Writer, opts ...Option) error {
	o := buildOptions(opts)
	in := make(chan runtime.Inbound, 64)
	out := make(chan []byte, 1024)
	var g actors.Group
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g.Add(func(ctx context.Context) error { return readLoop(ctx, r, o.maxFrame, in, o.logger) })
	g.Add(func(ctx context.Context) error { return srv.Serve(ctx, in, out) })
	g.Add(func(context.Context) error {
		return writeLoop(w, out, o.logger, func(error) { cancel() }, runtime.ReleaseFrame)
	})
	err := g.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// readLoop is a connection's reader actor: ReadFrames into the dispatcher's input, which it
// closes at the end of input.
func readLoop(ctx context.Context, r io.Reader, maxFrame int, in chan<- runtime.Inbound, log *zap.Logger) error {
	err := ReadFrames(ctx, r, maxFrame, func(msg runtime.Inbound) bool {
		return actors.Deliver(in, msg, ctx.Done())
	})
	if err != nil && ctx.Err() == nil {
		log.Error("cannot read the protocol input; treating it as its end", zap.Error(err))
	}
	return waitEnd(ctx, in)
}

// waitEnd closes in, telling the dispatcher that input has ended, and returns only when the
// group stops: the dispatcher's return, not the reader's, ends a connection.
func waitEnd(ctx context.Context, in chan<- runtime.Inbound) error {
	close(in)
	<-ctx.Done()
	return nil
}

// ServeStdio serves srv on the process's stdin and stdout until stdin ends or the process
// receives SIGTERM or SIGINT, then drains and returns. On Windows, Go delivers Ctrl-C and
// Ctrl-Break as SIGINT, and closing the console, logoff and shutdown as SIGTERM (after which
// Windows ends the process within a few seconds). While it runs, stdout (file descriptor 1,
// or the standard output handle on Windows, and os.Stdout) points at stderr and protocol
// frames go to a private duplicate of the original stdout, so nothing but frames can reach
// the peer (see ProtectStdout).
func ServeStdio(ctx context.Context, srv *runtime.Server, opts ...Option) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	proto, restore, err := ProtectStdout()
	if err != nil {
		return err
	}
	defer restore()
	in := Stdin()
	return Serve(ctx, srv, in, proto, opts...)
}

// Stdin returns the process's stdin, made interruptible when it is a pipe or a socket:
// closing it then ends a blocked read, so a reader actor can be stopped. On Unix a pipe or a
// socket is switched to non-blocking mode so that Go's poller owns it. On Windows it is
// os.Stdin itself, already interruptible when it is a pipe: closing an *os.File that holds a
// pipe handle cancels the read blocked on it (CancelIoEx, since Go 1.26). A terminal, a
// console or a regular file is left as it is, and a read blocked on it ends only with input.
func Stdin() *os.File { return pollableStdin() }

// ServeListener serves srv on every connection accepted from ln, each with its own
// dispatcher, until ctx is cancelled; then it closes ln, lets every connection drain, and
// returns once all have.
func ServeListener(ctx context.Context, srv *runtime.Server, ln net.Listener, opts ...Option) error {
	o := buildOptions(opts)
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			if err := Serve(ctx, srv, conn, conn, opts...); err != nil {
				o.logger.Warn("connection ended with an error", zap.Error(err))
			}
		}()
	}
}
