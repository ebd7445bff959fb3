package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relayrt/relay/runtime"
)

type ctxKey struct{}

// A request's context behaves as a cancellable context of the Serve context's values: derived
// contexts (cancellable, with a deadline, AfterFunc) end with it and see its cause, and it
// ends once the handler has returned.
func TestRequestContext_DerivedContextsEndWithTheRequest(t *testing.T) {
	type seen struct {
		child, timed, after, value error
		deadline                   bool
	}
	got := make(chan seen, 1)
	finished := make(chan context.Context, 1)
	running := make(chan struct{})
	c := dial(t, profile(map[string]runtime.Handler{
		"wait": func(ctx context.Context, r *runtime.Request) (any, error) {
			var s seen
			if ctx.Err() != nil || context.Cause(ctx) != nil {
				t.Errorf("a running request's context has ended: %v", ctx.Err())
			}
			_, s.deadline = ctx.Deadline()
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			timed, stop := context.WithTimeout(ctx, time.Hour)
			defer stop()
			gone, unused := context.WithCancel(ctx)
			unused() // a child cancelled first is forgotten, and does not stop the others
			<-gone.Done()
			afterRan := make(chan struct{})
			context.AfterFunc(ctx, func() { close(afterRan) })
			stopped := context.AfterFunc(ctx, func() { t.Error("a stopped AfterFunc ran") })
			if !stopped() {
				t.Error("an AfterFunc of a running request could not be stopped")
			}
			if v, _ := ctx.Value(ctxKey{}).(string); v != "serve" {
				s.value = errors.New("the Serve context's value is missing")
			}
			close(running)
			<-ctx.Done()
			<-child.Done()
			<-timed.Done()
			<-afterRan
			s.child, s.timed, s.after = context.Cause(child), context.Cause(timed), context.Cause(ctx)
			got <- s
			finished <- ctx
			return "ended", nil
		},
	}, false))
	c.send(req("a", "wait"))
	<-running
	c.send(`{"jsonrpc":"2.0","method":"cancel","params":{"id":"a"}}`)
	s := <-got
	if s.deadline || s.value != nil {
		t.Errorf("deadline %v, value: %v", s.deadline, s.value)
	}
	for name, err := range map[string]error{"request": s.after, "child": s.child, "timeout child": s.timed} {
		if !errors.Is(err, runtime.ErrCancelled) {
			t.Errorf("the %s context's cause is %v, want ErrCancelled", name, err)
		}
	}
	ctx := <-finished
	c.closeInput()
	c.rest()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("after the handler, Err = %v", ctx.Err())
	}
	// Derived after the end: ended at once, with the cause.
	late, cancel := context.WithCancel(ctx)
	defer cancel()
	select {
	case <-late.Done():
	default:
		t.Error("a context derived from an ended request's has not ended")
	}
	if !errors.Is(context.Cause(late), runtime.ErrCancelled) {
		t.Errorf("cause %v, want ErrCancelled", context.Cause(late))
	}
}

// A request's context that no one cancelled ends when the handler returns, and its cause is
// then context.Canceled, as for a context.WithCancel that was cancelled.
func TestRequestContext_EndsWhenTheHandlerReturns(t *testing.T) {
	done := make(chan context.Context, 1)
	c := dial(t, profile(map[string]runtime.Handler{
		"quick": func(ctx context.Context, r *runtime.Request) (any, error) {
			child, cancel := context.WithCancel(ctx)
			t.Cleanup(cancel)
			done <- child
			return "ok", nil
		},
	}, false))
	c.send(req(1, "quick"))
	c.next()
	child := <-done
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a derived context outlived its request")
	}
	if err := context.Cause(child); err != context.Canceled {
		t.Errorf("cause %v, want context.Canceled", err)
	}
	c.closeInput()
	c.rest()
}
