//go:build unix

package supervise

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeClock is a Clock the test drives: Now moves only when told, and each After is a
// channel the test fires, so no test sleeps through a backoff.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	afters chan fakeAfter
}

type fakeAfter struct {
	d  time.Duration
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC), afters: make(chan fakeAfter, 64)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.afters <- fakeAfter{d, ch}
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fire waits for the supervisor to ask for a timer, moves the clock to its deadline and
// fires it. It returns the duration asked for.
func (c *fakeClock) fire(t *testing.T) time.Duration {
	t.Helper()
	select {
	case a := <-c.afters:
		c.Advance(a.d)
		a.ch <- c.Now()
		return a.d
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor did not wait on the clock")
	}
	return 0
}

// tsRun is a supervisor running under a fake clock.
type tsRun struct {
	sup    *Supervisor
	clk    *fakeClock
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func tsStart(t *testing.T, spec Spec) *tsRun {
	t.Helper()
	clk := newFakeClock()
	spec.Clock = clk
	if spec.Child.StopWait == 0 {
		spec.Child.StopWait = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &tsRun{sup: New(spec), clk: clk, cancel: cancel, done: make(chan struct{})}
	go func() { r.err = r.sup.Run(ctx); close(r.done) }()
	t.Cleanup(func() {
		cancel()
		for range r.sup.Events() {
		}
		<-r.done
		tcNoProcessesLeft(t)
	})
	return r
}

func (r *tsRun) next(t *testing.T) Event {
	t.Helper()
	select {
	case e, ok := <-r.sup.Events():
		if !ok {
			<-r.done
			t.Fatalf("Events closed early; Run returned %v", r.err)
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return Event{}
}

func (r *tsRun) expect(t *testing.T, kind EventKind) Event {
	t.Helper()
	e := r.next(t)
	if e.Kind != kind {
		t.Fatalf("event %s (%+v), want %s", e.Kind, e, kind)
	}
	return e
}

// end expects Run to return with no further event, and returns its error.
func (r *tsRun) end(t *testing.T) error {
	t.Helper()
	select {
	case e, ok := <-r.sup.Events():
		if ok {
			t.Fatalf("unexpected event %s (%+v); want Run to return", e.Kind, e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s")
	}
	<-r.done
	return r.err
}

// cycle runs one start → exit → restarting round and returns the delay.
func (r *tsRun) cycle(t *testing.T) Event {
	t.Helper()
	r.expect(t, EventStarted)
	r.expect(t, EventExited)
	return r.expect(t, EventRestarting)
}

func TestSupervisorPolicyNever(t *testing.T) {
	for _, code := range []string{"0", "1"} {
		t.Run("exit="+code, func(t *testing.T) {
			r := tsStart(t, Spec{Command: tcCommand(t, "exit="+code, ""), Restart: Never})
			r.expect(t, EventStarted)
			if e := r.expect(t, EventExited); e.Exit.Code != int([]byte(code)[0]-'0') {
				t.Errorf("exit = %v, want code %s", e.Exit, code)
			}
			if err := r.end(t); err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
		})
	}
}

func TestSupervisorPolicyOnFailure(t *testing.T) {
	t.Run("clean exit ends", func(t *testing.T) {
		r := tsStart(t, Spec{Command: tcCommand(t, "exit=0", ""), Restart: OnFailure})
		r.expect(t, EventStarted)
		if e := r.expect(t, EventExited); e.Exit.Failed() {
			t.Errorf("exit = %v", e.Exit)
		}
		if err := r.end(t); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
	t.Run("failure restarts", func(t *testing.T) {
		r := tsStart(t, Spec{Command: tcCommand(t, "exit=7", ""), Restart: OnFailure})
		for i := 0; i < 3; i++ {
			r.expect(t, EventStarted)
			if e := r.expect(t, EventExited); e.Exit.Code != 7 {
				t.Errorf("exit = %v, want code 7", e.Exit)
			}
			r.expect(t, EventRestarting)
			r.clk.fire(t)
		}
		r.expect(t, EventStarted)
		r.expect(t, EventExited)
		r.expect(t, EventRestarting)
		r.cancel() // cancelled during the backoff: Run returns nil without another start
		if err := r.end(t); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
}

func TestSupervisorPolicyAlwaysRestartsCleanExits(t *testing.T) {
	r := tsStart(t, Spec{Command: tcCommand(t, "exit=0", "")}) // Always is the default
	for i := 0; i < 3; i++ {
		r.cycle(t)
		r.clk.fire(t)
	}
	r.expect(t, EventStarted)
	r.cancel()
	for e := range r.sup.Events() {
		if e.Kind != EventExited {
			t.Errorf("after cancel: event %s", e.Kind)
		}
	}
	if <-r.done; r.err != nil {
		t.Errorf("Run = %v", r.err)
	}
}

// tsWithin reports whether d is base ± 20 %.
func tsWithin(d, base time.Duration) bool {
	return d >= base*8/10 && d <= base*12/10
}

func TestSupervisorBackoffGrowsWithJitter(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, time.Second
	r := tsStart(t, Spec{Command: tcCommand(t, "exit=1", ""), MinBackoff: lo, MaxBackoff: hi, Unlimited: true})
	base := lo
	jittered := 0
	for i := 0; i < 10; i++ {
		e := r.cycle(t)
		if !tsWithin(e.Delay, base) {
			t.Errorf("restart %d: delay %s, want %s ± 20 %%", i+1, e.Delay, base)
		}
		if e.Delay < lo*8/10 || e.Delay > hi*12/10 {
			t.Errorf("restart %d: delay %s outside [%s, %s] with jitter", i+1, e.Delay, lo, hi)
		}
		if e.Delay != base {
			jittered++
		}
		if got := r.clk.fire(t); got != e.Delay {
			t.Errorf("restart %d: waited %s, announced %s", i+1, got, e.Delay)
		}
		base = min(2*base, hi)
	}
	if jittered == 0 {
		t.Error("no delay was jittered")
	}
}

func TestSupervisorBackoffResetsAfterStableUptime(t *testing.T) {
	const lo = 100 * time.Millisecond
	r := tsStart(t, Spec{Command: tcCommand(t, "echo", ""), MinBackoff: lo, MaxBackoff: 10 * time.Second,
		StableAfter: 10 * time.Second, Unlimited: true})
	round := func(uptime time.Duration) time.Duration {
		t.Helper()
		c := r.expect(t, EventStarted).Child
		r.clk.Advance(uptime)
		c.CloseStdin() // the echo child exits at EOF
		r.expect(t, EventExited)
		d := r.expect(t, EventRestarting).Delay
		r.clk.fire(t)
		return d
	}
	for i, want := range []time.Duration{lo, 2 * lo, 4 * lo} {
		if d := round(time.Second); !tsWithin(d, want) {
			t.Errorf("restart %d: delay %s, want %s ± 20 %%", i+1, d, want)
		}
	}
	if d := round(10 * time.Second); !tsWithin(d, lo) {
		t.Errorf("after a stable uptime: delay %s, want the minimum %s ± 20 %%", d, lo)
	}
	if d := round(time.Second); !tsWithin(d, 2*lo) {
		t.Errorf("the restart after: delay %s, want %s ± 20 %%", d, 2*lo)
	}
}

func TestSupervisorIntensityGivesUp(t *testing.T) {
	r := tsStart(t, Spec{Command: tcCommand(t, "exit=1", ""), Intensity: 3, Window: time.Minute, MinBackoff: time.Second})
	for i := 1; i <= 3; i++ {
		if e := r.cycle(t); e.Restarts != i {
			t.Errorf("restart %d: Restarts = %d", i, e.Restarts)
		}
		r.clk.fire(t)
	}
	r.expect(t, EventStarted)
	r.expect(t, EventExited)
	e := r.expect(t, EventGaveUp)
	if !errors.Is(e.Err, ErrGaveUp) || e.Restarts != 3 {
		t.Errorf("gave up with %+v", e)
	}
	if err := r.end(t); !errors.Is(err, ErrGaveUp) {
		t.Errorf("Run = %v, want ErrGaveUp", err)
	}
}

func TestSupervisorIntensityWindowSlides(t *testing.T) {
	r := tsStart(t, Spec{Command: tcCommand(t, "exit=1", ""), Intensity: 2, Window: time.Minute, MinBackoff: time.Second})
	for i := 0; i < 6; i++ {
		r.expect(t, EventStarted)
		r.clk.Advance(31 * time.Second) // no more than two restarts in any minute
		r.expect(t, EventExited)
		if e := r.expect(t, EventRestarting); e.Restarts > 2 {
			t.Errorf("restart %d: %d restarts counted in the window", i+1, e.Restarts)
		}
		r.clk.fire(t)
	}
}

func TestSupervisorUnlimitedNeverGivesUp(t *testing.T) {
	const hi = 400 * time.Millisecond
	r := tsStart(t, Spec{Command: tcCommand(t, "exit=1", ""), Unlimited: true, MinBackoff: 10 * time.Millisecond, MaxBackoff: hi})
	for i := 1; i <= 25; i++ {
		e := r.cycle(t)
		if e.Restarts != i {
			t.Errorf("restart %d: Restarts = %d", i, e.Restarts)
		}
		if e.Delay > hi*12/10 {
			t.Errorf("restart %d: delay %s over the maximum %s + 20 %%", i, e.Delay, hi)
		}
		r.clk.fire(t)
	}
	r.expect(t, EventStarted)
	r.cancel()
	for e := range r.sup.Events() {
		if e.Kind == EventGaveUp {
			t.Error("gave up with Unlimited")
		}
	}
	if <-r.done; r.err != nil {
		t.Errorf("Run = %v", r.err)
	}
}

func TestSupervisorRestartOnRequest(t *testing.T) {
	r := tsStart(t, Spec{Command: tcCommand(t, "echo", ""), Restart: OnFailure})
	first := r.expect(t, EventStarted).Child
	r.sup.Restart("liveness probe failed")
	e := r.expect(t, EventExited)
	if e.Exit.Err == nil || !strings.Contains(e.Exit.Err.Error(), "liveness probe failed") || !e.Exit.Failed() {
		t.Errorf("exit = %+v, want a failure naming the reason", e.Exit)
	}
	if !tcGone(first.PID(), 5*time.Second) {
		t.Errorf("the first child %d still exists", first.PID())
	}
	r.expect(t, EventRestarting)
	r.clk.fire(t)
	second := r.expect(t, EventStarted).Child
	if second.PID() == first.PID() {
		t.Error("the same pid after a restart")
	}
	r.cancel()
	if e := r.expect(t, EventExited); e.Exit.Failed() {
		t.Errorf("stopping the second child: %v, want the clean exit at EOF", e.Exit)
	}
	if err := r.end(t); err != nil {
		t.Errorf("Run = %v", err)
	}
}

// Restart is for the current child: asked while none runs (its child already died, as when a
// probe's verdict crosses a crash), it must not kill the next one.
func TestSupervisorRestartWithoutChildIsDropped(t *testing.T) {
	r := tsStart(t, Spec{Command: tcCommand(t, "echo", "")})
	r.expect(t, EventStarted).Child.CloseStdin()
	r.expect(t, EventExited)
	r.expect(t, EventRestarting)
	r.sup.Restart("the child did not answer a liveness probe") // too late: no child now
	r.clk.fire(t)
	r.expect(t, EventStarted)
	select {
	case e := <-r.sup.Events():
		t.Errorf("the new child got %s (%v) at once: a stale restart request killed it", e.Kind, e.Exit)
	case <-time.After(500 * time.Millisecond):
	}
}

func TestSupervisorCancelStopsChildWithSequence(t *testing.T) {
	r := tsStart(t, Spec{Command: tcCommand(t, "echo,ignore-eof", ""), Child: ChildOptions{StopWait: 100 * time.Millisecond}})
	c := r.expect(t, EventStarted).Child
	r.cancel()
	if e := r.expect(t, EventExited); e.Exit.Signal != syscall.SIGTERM {
		t.Errorf("exit = %v, want SIGTERM after the stdin wait", e.Exit)
	}
	if err := r.end(t); err != nil {
		t.Errorf("Run = %v", err)
	}
	if !tcGone(c.PID(), 5*time.Second) {
		t.Errorf("child %d still exists", c.PID())
	}
}

// A command that cannot run (missing, not executable, not a program) is not retried: no
// restart can mend it. The supervisor gives up at once, with a *StartError that names the
// command and the cause, even when restarts are unlimited.
func TestSupervisorDoesNotRetryACommandThatCannotRun(t *testing.T) {
	dir := t.TempDir()
	noExec := filepath.Join(dir, "not-executable")
	garbage := filepath.Join(dir, "not-a-program")
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(garbage, []byte{0x7f, 'E', 'L', 'F', 0, 0, 0, 0}, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		cause error // nil: any cause
	}{
		{"/nonexistent/relay-test-server", fs.ErrNotExist},
		{"relay-test-server-not-in-path", exec.ErrNotFound},
		{noExec, fs.ErrPermission},
		{garbage, nil}, // exec format error, found by the guard when there is one
	} {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			r := tsStart(t, Spec{Command: Command{Path: c.path}, Unlimited: true})
			e := r.expect(t, EventGaveUp)
			var se *StartError
			if !errors.Is(e.Err, ErrGaveUp) || !errors.As(e.Err, &se) || se.Command != c.path {
				t.Fatalf("gave up with %v, want ErrGaveUp and a *StartError for %s", e.Err, c.path)
			}
			if c.cause != nil && !errors.Is(e.Err, c.cause) {
				t.Errorf("gave up with %v, want its cause to be %v", e.Err, c.cause)
			}
			if !strings.Contains(e.Err.Error(), c.path) {
				t.Errorf("%q does not name the command", e.Err)
			}
			if err := r.end(t); !errors.As(err, &se) {
				t.Errorf("Run = %v, want the *StartError", err)
			}
		})
	}
}

// A supervisor run on its own cannot tell when a new child is ready: Upgrade says so, and
// the child it runs is untouched.
func TestSupervisorAloneRefusesUpgrade(t *testing.T) {
	r := tsStart(t, Spec{Command: tcCommand(t, "echo", "")})
	c := r.expect(t, EventStarted).Child
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.sup.Upgrade(ctx, "test"); !errors.Is(err, ErrNotServed) {
		t.Fatalf("Upgrade = %v, want ErrNotServed", err)
	}
	select {
	case <-c.Done():
		t.Fatal("the child exited")
	default:
	}
}
