package supervise

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/zap"
)

// Policy says when a child that exited is started again.
type Policy string

// The restart policies.
const (
	Always    Policy = "always"     // whatever the exit
	OnFailure Policy = "on-failure" // unless it exited with code 0
	Never     Policy = "never"
)

// Clock is the supervisor's source of time; tests replace it to run restart logic without
// sleeping.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Spec describes a supervised child. Zero fields take the documented defaults.
type Spec struct {
	Command Command
	Child   ChildOptions
	// Restart is the policy (default Always).
	Restart Policy
	// MinBackoff and MaxBackoff bound the delay before a restart (defaults 100 ms and
	// 30 s); the delay doubles from the minimum, with ±20 % jitter.
	MinBackoff, MaxBackoff time.Duration
	// StableAfter is the uptime after which the backoff starts again from the minimum
	// (default 10 s).
	StableAfter time.Duration
	// Intensity is how many restarts Window allows before the supervisor gives up
	// (default 5 in 1 minute); 0 with Unlimited set means it never gives up.
	Intensity int
	Window    time.Duration
	Unlimited bool
	// Clock is the source of time (default: the real one).
	Clock Clock
}

// EventKind names what happened to a supervised child.
type EventKind string

// The events.
const (
	EventStarted    EventKind = "started"
	EventExited     EventKind = "exited"
	EventRestarting EventKind = "restarting"
	EventGaveUp     EventKind = "gave-up"
	// EventUpgraded: Child, started and made ready by the Proxy serving the supervisor (see
	// Upgrade), is now the supervised child. The one it replaces is the Proxy's to stop.
	EventUpgraded EventKind = "upgraded"
)

// Event is a typed report for metrics and logs.
type Event struct {
	Kind     EventKind
	Child    *Child        // started, upgraded: the new child; exited: the child that exited
	Exit     Exit          // exited
	Delay    time.Duration // restarting: the backoff before the next start
	Restarts int           // restarts within the intensity window so far
	Err      error         // gave-up: why
}

// ErrNotServed is Upgrade's error for a supervisor that no Proxy or ServeFrames runs.
var ErrNotServed = errors.New("supervise: an upgrade needs the supervisor to be run by Proxy or ServeFrames, which know when a new child is ready; use Restart to replace the child")

// ErrGaveUp is returned by Run when the restart intensity was exceeded, a start failed
// past the limit, or the command cannot run at all (the error is then also a *StartError,
// and no restart was tried).
var ErrGaveUp = errors.New("supervise: gave up restarting the child")

// Supervisor keeps one child running according to a Spec. Its state belongs to Run's
// goroutine; other goroutines talk to it through Restart and the Events channel.
type Supervisor struct {
	spec     Spec
	events   chan Event
	restart  chan string
	upgrades chan upgrade // to the actor that serves upgrades: the Proxy, or Run alone
	adopt    chan *Child  // from the Proxy: a new child, ready, to supervise instead
	log      *zap.Logger
}

// upgrade is a request for a zero-downtime upgrade; done gets its outcome.
type upgrade struct {
	reason string
	done   chan error // buffered: the server never waits for the asker
}

// New returns a supervisor for spec. Read its Events until Run returns: Run waits for
// each event to be taken.
func New(spec Spec) *Supervisor {
	if spec.Restart == "" {
		spec.Restart = Always
	}
	if spec.MinBackoff <= 0 {
		spec.MinBackoff = 100 * time.Millisecond
	}
	if spec.MaxBackoff < spec.MinBackoff {
		spec.MaxBackoff = max(30*time.Second, spec.MinBackoff)
	}
	if spec.StableAfter <= 0 {
		spec.StableAfter = 10 * time.Second
	}
	if spec.Intensity <= 0 && !spec.Unlimited {
		spec.Intensity = 5
	}
	if spec.Window <= 0 {
		spec.Window = time.Minute
	}
	if spec.Clock == nil {
		spec.Clock = realClock{}
	}
	log := spec.Child.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Supervisor{spec: spec, events: make(chan Event), restart: make(chan string, 1),
		upgrades: make(chan upgrade), adopt: make(chan *Child, 1), log: log}
}

// Events delivers what happens to the child, in order. It is closed when Run returns.
func (s *Supervisor) Events() <-chan Event { return s.events }

// Restart asks for the current child to be killed and started again (a liveness probe that
// failed, say). It never blocks; a restart already asked for absorbs this one.
func (s *Supervisor) Restart(reason string) {
	select {
	case s.restart <- reason:
	default:
	}
}

// Upgrade replaces the child with a new one without dropping its client, and returns once
// the new child serves (nil) or once the attempt has failed (the old child still serves,
// and the error says why): the Proxy (or ServeFrames) running s starts a new child from the
// same Command (whose file may have changed: a new version), brings it to the state of the
// old one, sends it every new request, and stops the old one once it has answered what it
// had in flight (see Proxy). Upgrades asked for while one is under way are served by one
// more upgrade after it. A supervisor run on its own, by Run, answers ErrNotServed.
func (s *Supervisor) Upgrade(ctx context.Context, reason string) error {
	u := upgrade{reason: reason, done: make(chan error, 1)}
	select {
	case s.upgrades <- u:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-u.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

type clockAdapter struct{ c Clock }

func (a clockAdapter) Now() time.Time { return a.c.Now() }

// Run starts the child and keeps it running until ctx ends (the child is then stopped with
// the full sequence, and Run returns nil), the policy says not to restart (nil), or the
// intensity limit is exceeded (ErrGaveUp).
func (s *Supervisor) Run(ctx context.Context) error {
	stop := make(chan struct{})
	defer close(stop)
	go func() { // nothing here can tell when a new child is ready: upgrades are refused
		for {
			select {
			case u := <-s.upgrades:
				u.done <- ErrNotServed
			case <-stop:
				return
			}
		}
	}()
	return s.run(ctx)
}

// run is Run's loop. A Proxy runs it directly, and serves s.upgrades itself: it hands the
// new child over on s.adopt.
func (s *Supervisor) run(ctx context.Context) error {
	defer close(s.events)
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = s.spec.MinBackoff, s.spec.MaxBackoff
	b.Multiplier, b.RandomizationFactor, b.MaxElapsedTime = 2, 0.2, 0
	b.Clock = clockAdapter{s.spec.Clock}
	b.Reset()
	var restarts []time.Time
	var adopted *Child // handed over by the Proxy: supervised instead of a new start
	for {
		started := s.spec.Clock.Now()
		child, kind := adopted, EventUpgraded
		adopted = nil
		var err error
		if child == nil {
			child, err = StartChild(s.spec.Command, &s.spec.Child)
			kind = EventStarted
		}
		var exit Exit
		var unrunnable *StartError
		if errors.As(err, &unrunnable) { // the command cannot run: no restart can mend it
			s.log.Error("cannot start the child, and will not try again: the command cannot run",
				zap.String("command", unrunnable.Command), zap.NamedError("cause", unrunnable.Err))
			err = fmt.Errorf("%w: %w", ErrGaveUp, err)
			s.emit(context.Background(), Event{Kind: EventGaveUp, Err: err})
			return err
		}
		if err != nil {
			exit = Exit{Code: -1, Err: err}
			s.log.Error("cannot start the child", zap.Error(err))
		} else {
			select { // a restart asked for before this child existed is not for it
			case <-s.restart:
			default:
			}
			if !s.emit(ctx, Event{Kind: kind, Child: child}) {
				child.Stop(context.Background())
				return nil
			}
			select {
			case next := <-s.adopt: // upgraded: the Proxy stops the old child once it has drained
				adopted = next
				b.Reset()
				continue
			case <-child.Done():
				exit = child.Exit()
			case reason := <-s.restart:
				s.log.Warn("restarting the child on request", zap.String("reason", reason))
				exit = child.Stop(ctx)
				exit.Err = fmt.Errorf("restarted: %s", reason)
			case <-ctx.Done():
				exit = child.Stop(context.Background())
				s.emit(context.Background(), Event{Kind: EventExited, Child: child, Exit: exit})
				return nil
			}
			s.emit(context.Background(), Event{Kind: EventExited, Child: child, Exit: exit})
		}
		if ctx.Err() != nil {
			return nil
		}
		if s.spec.Restart == Never || (s.spec.Restart == OnFailure && !exit.Failed()) {
			return nil
		}
		now := s.spec.Clock.Now()
		if now.Sub(started) >= s.spec.StableAfter {
			b.Reset()
		}
		restarts = append(restarts, now)
		for len(restarts) > 0 && now.Sub(restarts[0]) > s.spec.Window {
			restarts = restarts[1:]
		}
		if !s.spec.Unlimited && len(restarts) > s.spec.Intensity {
			err := fmt.Errorf("%w: %d restarts within %s (last: %s)", ErrGaveUp, len(restarts)-1, s.spec.Window, exit)
			s.emit(context.Background(), Event{Kind: EventGaveUp, Err: err, Restarts: len(restarts) - 1})
			return err
		}
		delay := b.NextBackOff()
		if !s.emit(ctx, Event{Kind: EventRestarting, Delay: delay, Restarts: len(restarts)}) {
			return nil
		}
		select {
		case <-s.spec.Clock.After(delay):
		case adopted = <-s.adopt: // a new child, ready while the old one died: no need to wait
		case <-ctx.Done():
			return nil
		}
	}
}

// emit hands an event to the reader of Events; false when ctx ended first.
func (s *Supervisor) emit(ctx context.Context, e Event) bool {
	select {
	case s.events <- e:
		return true
	case <-ctx.Done():
		return false
	}
}
