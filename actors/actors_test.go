package actors_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/actors"
)

// TestMain checks that no test of the package leaves a goroutine running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitTimeout bounds every wait of a test that would otherwise hang on a bug.
const waitTimeout = 10 * time.Second

//go:noinline
func panickingActor(v any) error { panic(v) }

func TestRecover(t *testing.T) {
	errOwn := errors.New("own error")
	cases := []struct {
		name      string
		fn        func() error
		wantErr   error
		wantPanic func(v any) bool // nil: no panic expected
	}{
		{name: "returns fn's nil", fn: func() error { return nil }},
		{name: "returns fn's error unchanged", fn: func() error { return errOwn }, wantErr: errOwn},
		{name: "panic with a string becomes *PanicError with the value",
			fn:        func() error { return panickingActor("boom") },
			wantPanic: func(v any) bool { return v == "boom" }},
		{name: "panic with an error becomes *PanicError with the error",
			fn:        func() error { return panickingActor(errOwn) },
			wantPanic: func(v any) bool { return v == errOwn }},
		{name: "panic(nil) is still a panic",
			fn: func() error { return panickingActor(nil) },
			wantPanic: func(v any) bool {
				var pn *runtime.PanicNilError
				err, ok := v.(error)
				return ok && errors.As(err, &pn)
			}},
		{name: "a runtime error becomes *PanicError with the runtime.Error",
			fn: func() error {
				var m map[string]int
				m["x"] = 1
				return nil
			},
			wantPanic: func(v any) bool { _, ok := v.(runtime.Error); return ok }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := actors.Recover(tc.fn)
			var pe *actors.PanicError
			if tc.wantPanic == nil {
				if err != tc.wantErr {
					t.Fatalf("Recover = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if !errors.As(err, &pe) {
				t.Fatalf("Recover = %v (%T), want a *PanicError", err, err)
			}
			if !tc.wantPanic(pe.Value) {
				t.Errorf("PanicError.Value = %#v", pe.Value)
			}
			if len(pe.Stack) == 0 || !bytes.Contains(pe.Stack, []byte("actors_test.")) {
				t.Errorf("PanicError.Stack does not show where the panic happened:\n%s", pe.Stack)
			}
		})
	}
}

func TestPanicErrorStackShowsThePanickingFunction(t *testing.T) {
	err := actors.Recover(func() error { return panickingActor("x") })
	var pe *actors.PanicError
	if !errors.As(err, &pe) || !bytes.Contains(pe.Stack, []byte("panickingActor")) {
		t.Fatalf("stack does not name panickingActor: %v\n%s", err, pe.Stack)
	}
	if got := pe.Error(); got != "actor panicked: x" {
		t.Errorf("Error() = %q", got)
	}
}

func TestMailboxTrySend(t *testing.T) {
	m := actors.NewMailbox[int](3)
	for i := range 3 {
		if err := m.TrySend(i); err != nil {
			t.Fatalf("TrySend(%d) into a mailbox with room: %v", i, err)
		}
	}
	if m.Len() != 3 {
		t.Errorf("Len = %d, want 3", m.Len())
	}
	if err := m.TrySend(3); !errors.Is(err, actors.ErrFull) {
		t.Fatalf("TrySend into a full mailbox = %v, want ErrFull", err)
	}
	if m.Len() != 3 {
		t.Errorf("a refused message changed Len to %d", m.Len())
	}
	for want := range 3 {
		if got := <-m.Receive(); got != want {
			t.Errorf("received %d, want %d (first in, first out)", got, want)
		}
	}
	if err := m.TrySend(9); err != nil {
		t.Errorf("TrySend after draining: %v", err)
	}
}

func TestMailboxTrySendUnbuffered(t *testing.T) {
	m := actors.NewMailbox[string](0)
	if err := m.TrySend("x"); !errors.Is(err, actors.ErrFull) {
		t.Errorf("TrySend with no room and no receiver = %v, want ErrFull", err)
	}
}

func TestMailboxSendWaitsForRoom(t *testing.T) {
	m := actors.NewMailbox[int](1)
	if err := m.Send(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() { sent <- m.Send(context.Background(), 2) }()
	select {
	case err := <-sent:
		t.Fatalf("Send into a full mailbox returned at once: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if got := <-m.Receive(); got != 1 {
		t.Errorf("received %d, want 1", got)
	}
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("Send after room was made: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Send did not deliver once there was room")
	}
	if got := <-m.Receive(); got != 2 {
		t.Errorf("received %d, want 2", got)
	}
}

func TestMailboxSendRespectsContext(t *testing.T) {
	cause := errors.New("owner stopped")
	cases := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 10*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancelled while waiting", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(10*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"cancelled with a cause returns the cause", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(cause)
			return ctx, func() {}
		}, cause},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := actors.NewMailbox[int](1)
			if err := m.TrySend(0); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := tc.ctx()
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- m.Send(ctx, 1) }()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Errorf("Send = %v, want %v", err, tc.want)
				}
			case <-time.After(waitTimeout):
				t.Fatal("Send into a full mailbox ignored its context")
			}
			if m.Len() != 1 {
				t.Errorf("Len = %d after a refused Send, want 1", m.Len())
			}
		})
	}
}

// blocker is an actor that waits for its context, records why it ended, then returns ret.
type blocker struct {
	cause    atomic.Value // error: context.Cause when it stopped
	finished atomic.Bool
	delay    time.Duration // how long it takes to stop
	ret      error
}

func (b *blocker) run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		b.cause.Store(ctx.Err())
	case <-time.After(waitTimeout):
		b.cause.Store(errors.New("never cancelled"))
	}
	time.Sleep(b.delay)
	b.finished.Store(true)
	return b.ret
}

func TestGroup(t *testing.T) {
	errFirst := errors.New("first")
	t.Run("the first actor's return cancels the others' contexts and is Run's result", func(t *testing.T) {
		b1, b2 := &blocker{}, &blocker{ret: errors.New("later")}
		var g actors.Group
		g.Add(b1.run)
		g.Add(func(context.Context) error { return errFirst })
		g.Add(b2.run)
		if err := g.Run(context.Background()); err != errFirst {
			t.Errorf("Run = %v, want %v", err, errFirst)
		}
		for i, b := range []*blocker{b1, b2} {
			if c := b.cause.Load(); c != context.Canceled {
				t.Errorf("actor %d stopped because of %v, want context.Canceled", i, c)
			}
		}
	})
	t.Run("a nil return also stops the group", func(t *testing.T) {
		b := &blocker{}
		var g actors.Group
		g.Add(b.run)
		g.Add(func(context.Context) error { return nil })
		if err := g.Run(context.Background()); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if c := b.cause.Load(); c != context.Canceled {
			t.Errorf("blocker stopped because of %v", c)
		}
	})
	t.Run("Run waits for every actor to return", func(t *testing.T) {
		slow := []*blocker{{delay: 30 * time.Millisecond}, {delay: 60 * time.Millisecond}}
		var g actors.Group
		for _, b := range slow {
			g.Add(b.run)
		}
		g.Add(func(context.Context) error { return errFirst })
		if err := g.Run(context.Background()); err != errFirst {
			t.Errorf("Run = %v", err)
		}
		for i, b := range slow {
			if !b.finished.Load() {
				t.Errorf("Run returned before actor %d did", i)
			}
		}
	})
	t.Run("a panicking actor's *PanicError is returned and the others are stopped", func(t *testing.T) {
		b := &blocker{}
		var g actors.Group
		g.Add(b.run)
		g.Add(func(context.Context) error { return panickingActor("actor exploded") })
		err := g.Run(context.Background())
		var pe *actors.PanicError
		if !errors.As(err, &pe) || pe.Value != "actor exploded" {
			t.Fatalf("Run = %v (%T), want a *PanicError for the panic", err, err)
		}
		if !bytes.Contains(pe.Stack, []byte("panickingActor")) {
			t.Errorf("stack does not show the panic:\n%s", pe.Stack)
		}
		if !b.finished.Load() || b.cause.Load() != context.Canceled {
			t.Errorf("the other actor was not stopped and waited for: %v", b.cause.Load())
		}
	})
	t.Run("a panic after the group stops does not replace the first result", func(t *testing.T) {
		var g actors.Group
		g.Add(func(ctx context.Context) error { <-ctx.Done(); return panickingActor("late") })
		g.Add(func(context.Context) error { return errFirst })
		if err := g.Run(context.Background()); err != errFirst {
			t.Errorf("Run = %v, want %v", err, errFirst)
		}
	})
	t.Run("cancelling Run's context stops every actor", func(t *testing.T) {
		bs := []*blocker{{}, {}, {}}
		var g actors.Group
		for _, b := range bs {
			g.Add(b.run)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Millisecond, cancel)
		err := g.Run(ctx)
		// The group's own watcher of ctx returns nil; an actor that sees ctx first returns
		// its own result (nil here). Either way the result is not an actor's failure.
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
		for i, b := range bs {
			if !b.finished.Load() || b.cause.Load() != context.Canceled {
				t.Errorf("actor %d: finished %v, cause %v", i, b.finished.Load(), b.cause.Load())
			}
		}
	})
	t.Run("actors see their own context, not the parent", func(t *testing.T) {
		parent := context.WithValue(context.Background(), ctxKey{}, "v")
		var g actors.Group
		var got any
		g.Add(func(ctx context.Context) error { got = ctx.Value(ctxKey{}); return nil })
		if err := g.Run(parent); err != nil {
			t.Fatal(err)
		}
		if got != "v" {
			t.Errorf("actor's context lost the parent's values: %v", got)
		}
	})
	t.Run("an empty group returns once its context is done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var g actors.Group
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(waitTimeout):
			t.Fatal("an empty group with a cancelled context did not return")
		}
	})
}

type ctxKey struct{}

func TestDeliver_SendsOrGivesUpWhenDone(t *testing.T) {
	ch := make(chan int, 1)
	done := make(chan struct{})
	if !actors.Deliver(ch, 1, done) || <-ch != 1 {
		t.Fatal("a channel with room did not take the value")
	}
	go func() { ch <- 2 }() // fills ch: the next Deliver waits for room
	for len(ch) == 0 {
		runtime.Gosched()
	}
	got := make(chan bool)
	go func() { got <- actors.Deliver(ch, 3, done) }()
	if <-ch != 2 || !<-got || <-ch != 3 {
		t.Fatal("a full channel's value was not delivered once there was room")
	}
	ch <- 4
	close(done)
	if actors.Deliver(ch, 5, done) {
		t.Fatal("Deliver to a full channel reported true after done closed")
	}
}
