// Package actors holds the primitives Relay's runtime is built from. An actor is a goroutine
// that owns its state and learns of the world only through messages on a bounded mailbox; its
// owner starts it with a context, can stop it, and waits for it. A panic inside an actor never
// crashes the process: Recover turns it into a *PanicError that the owner receives as the
// actor's result.
package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/oklog/run"
)

// PanicError is what an actor that panicked returns to its owner.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the goroutine's stack at the panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("actor panicked: %v", e.Value) }

// Recover runs fn and returns its error, or a *PanicError if fn panicked.
func Recover(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// ErrFull is returned by TrySend when a mailbox has no room.
var ErrFull = errors.New("actors: mailbox full")

// Mailbox is a bounded queue of messages for one actor. A full mailbox never grows: the sender
// chooses between waiting (Send) and being refused at once (TrySend).
type Mailbox[T any] struct{ ch chan T }

// NewMailbox returns a mailbox that holds up to size messages.
func NewMailbox[T any](size int) Mailbox[T] { return Mailbox[T]{ch: make(chan T, size)} }

// TrySend delivers v if there is room and returns ErrFull otherwise.
func (m Mailbox[T]) TrySend(v T) error {
	select {
	case m.ch <- v:
		return nil
	default:
		return ErrFull
	}
}

// Send delivers v, waiting for room until ctx is done.
func (m Mailbox[T]) Send(ctx context.Context, v T) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case m.ch <- v:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Deliver sends v on ch, or gives up and reports false once done is closed. A channel with
// room takes v at once, without the select over both channels (which locks them both): a
// sender under load, whose receiver keeps up, pays for one channel only.
func Deliver[T any](ch chan<- T, v T, done <-chan struct{}) bool {
	select {
	case ch <- v:
		return true
	default:
	}
	select {
	case ch <- v:
		return true
	case <-done:
		return false
	}
}

// Receive returns the channel the owning actor reads.
func (m Mailbox[T]) Receive() <-chan T { return m.ch }

// Len reports how many messages wait.
func (m Mailbox[T]) Len() int { return len(m.ch) }

// Group starts actors together and stops them together: when the first one returns, the
// context of every other one is cancelled, and Run returns once all have returned. The zero
// value is ready to use.
type Group struct {
	actors []func(context.Context) error
}

// Add registers an actor. It starts when Run is called.
func (g *Group) Add(actor func(ctx context.Context) error) {
	g.actors = append(g.actors, actor)
}

// Run starts every actor and returns the first one's error (a *PanicError if it panicked)
// after all of them have returned. Cancelling ctx stops them all.
func (g *Group) Run(ctx context.Context) error {
	if len(g.actors) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rg run.Group
	rg.Add(func() error { <-ctx.Done(); return nil }, func(error) { cancel() })
	for _, a := range g.actors {
		rg.Add(func() error { return Recover(func() error { return a(ctx) }) }, func(error) { cancel() })
	}
	return rg.Run()
}
