package runtime

import (
	"context"
	"sync"
	"time"
)

// A request's context is its entry itself, rather than a context.WithCancelCause of the
// dispatcher's base: that costs a request two more allocations (the cancelCtx, 80 bytes, and
// its cancel function), and a request parked in its handler keeps both for as long as it
// waits. The entry implements context.Context on the few fields below, which only these
// methods touch, from any goroutine; everything else in the entry belongs to the dispatcher.
//
// It behaves as the cancelCtx did: Done is closed when the peer cancels the request, at the
// drain deadline, or once the handler has finished; Err is then context.Canceled; and
// context.Cause gives ErrCancelled or ErrAbandoned for the first two, and context.Canceled
// for the last. Values come from the dispatcher's base context.

// The states of a request's context; ctxRunning until it ends, then the reason it ended.
const (
	ctxRunning uint32 = iota
	ctxCancelled
	ctxAbandoned
	ctxFinished
)

// requestCtx is the part of an entry that makes it a context.Context (with the dispatcher's
// base context, which the entry's request knows).
type requestCtx struct {
	mu   sync.Mutex    // guards done, and the afters in the entry's more
	done chan struct{} // made by the first Done, or closedChan if it ended first
}

// afterFunc is one function registered by AfterFunc, compared by its address.
type afterFunc struct{ f func() }

// closedChan is the Done of a context that ended before anyone asked for it.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Causes for context.Cause: it looks up, through Value, the cancelCtx that ended a context
// and reads its cause. These two ended with the runtime's causes, and Value hands one out
// for that lookup once the request has ended for that reason. cancelCtxKey is recognised
// by asking one of them: only that key makes a cancelCtx under Background return itself.
var (
	cancelledCause = endedWith(ErrCancelled)
	abandonedCause = endedWith(ErrAbandoned)
)

func endedWith(cause error) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	return ctx
}

// Deadline implements context.Context.
func (e *entry) Deadline() (time.Time, bool) { return e.req.d.base.Deadline() }

// Done implements context.Context.
func (e *entry) Done() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done == nil {
		if e.state.Load() == ctxRunning {
			e.done = make(chan struct{})
		} else {
			e.done = closedChan
		}
	}
	return e.done
}

// Err implements context.Context.
func (e *entry) Err() error {
	if e.state.Load() == ctxRunning {
		return nil
	}
	return context.Canceled
}

// Value implements context.Context.
func (e *entry) Value(key any) any {
	var ended context.Context
	switch e.state.Load() {
	case ctxCancelled:
		ended = cancelledCause
	case ctxAbandoned:
		ended = abandonedCause
	}
	if ended != nil {
		if cc := ended.Value(key); cc != nil {
			return cc // key is the context package's cancelCtxKey: context.Cause is asking
		}
	}
	return e.req.d.base.Value(key)
}

// AfterFunc is the context package's hook for contexts derived from this one (its afterFuncer
// interface): without it, every derived cancellable context would need a goroutine to watch
// Done. The context package only ever passes a function that cancels a derived context (it
// wraps anything of the caller's in one that starts a goroutine of its own), so f is called
// directly when the request's context ends, on the goroutine that ends it. If it has already
// ended, f runs on a goroutine of its own, as context.AfterFunc's does: the context package
// calls AfterFunc holding the derived context's lock, which f takes.
func (e *entry) AfterFunc(f func()) (stop func() bool) {
	e.mu.Lock()
	if e.state.Load() != ctxRunning {
		e.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f}
	m := e.moreOf()
	m.afters = append(m.afters, a)
	e.mu.Unlock()
	return func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for i, x := range m.afters {
			if x == a {
				m.afters = append(m.afters[:i], m.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// end ends the request's context for a reason (a state other than ctxRunning); only the first
// call counts.
func (e *entry) endCtx(reason uint32) {
	e.mu.Lock()
	if !e.state.CompareAndSwap(ctxRunning, reason) {
		e.mu.Unlock()
		return
	}
	if e.done == nil {
		e.done = closedChan
	} else {
		close(e.done)
	}
	var afters []*afterFunc
	if m := e.more.Load(); m != nil {
		afters, m.afters = m.afters, nil
	}
	e.mu.Unlock()
	for _, a := range afters {
		a.f()
	}
}

// String names the context, as the context package's own do.
func (e *entry) String() string { return "runtime.request" }
