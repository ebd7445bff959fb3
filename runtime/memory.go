package runtime

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed is returned by a Conn's methods once it has been closed or its server has
// stopped.
var ErrClosed = errors.New("runtime: the in-memory connection is closed")

// Conn is an in-memory connection to a Server: what a test, or a program embedding a server
// in-process, uses instead of pipes. Frames sent are read by the server's dispatcher exactly as
// a transport's would be; frames the server writes are returned by Receive, in order.
type Conn struct {
	in       chan Inbound
	out      chan []byte
	done     chan struct{}
	err      error
	stop     context.CancelFunc
	closeIn  sync.Once
	inClosed chan struct{}
}

// Connect starts a dispatcher for a new in-memory connection. Cancelling ctx starts a
// graceful drain, as a signal would on stdio; Close ends input, as EOF would.
func (s *Server) Connect(ctx context.Context) *Conn {
	ctx, cancel := context.WithCancel(ctx)
	c := &Conn{
		in:       make(chan Inbound),
		out:      make(chan []byte, 64),
		done:     make(chan struct{}),
		stop:     cancel,
		inClosed: make(chan struct{}),
	}
	go func() {
		defer close(c.done)
		defer cancel()
		c.err = s.Serve(ctx, c.in, c.out)
	}()
	return c
}

// Send delivers one frame (a JSON-RPC message or batch, without a newline) to the server.
func (c *Conn) Send(ctx context.Context, frame []byte) error {
	select {
	case <-c.inClosed:
		return ErrClosed
	default:
	}
	select {
	case c.in <- Inbound{Frame: append([]byte(nil), frame...)}:
		return nil
	case <-c.inClosed:
		return ErrClosed
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Receive returns the next frame the server wrote. After the server has stopped and every
// frame has been received it returns ErrClosed.
func (c *Conn) Receive(ctx context.Context) ([]byte, error) {
	select {
	case f, ok := <-c.out:
		if !ok {
			return nil, ErrClosed
		}
		return f, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// CloseInput ends the input, as EOF does on stdio: the server drains and stops. Frames it
// still writes can be received.
func (c *Conn) CloseInput() {
	c.closeIn.Do(func() {
		close(c.inClosed)
		close(c.in)
	})
}

// Close ends the input, discards whatever the server still writes, and waits for it to stop.
func (c *Conn) Close() error {
	c.CloseInput()
	for range c.out {
	}
	<-c.done
	return c.err
}
