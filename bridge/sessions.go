package bridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/supervise"
)

// sessionChildren owns the children of initialize-generation sessions, when the children
// speak only that generation: a bound on the children claimed (one per session), the warm
// spares, and every child until it has stopped.
//
// A spare is a child spawned ahead and left uninitialized; a session claims one at its
// initialize (or spawns one at once when none is left), and a keeper spawns the next spare.
// A session's end (DELETE, idle timeout, eviction, the bridge's Close) hands its child back,
// and the child is stopped with the supervisor's stop sequence in a goroutine that close
// waits for.
type sessionChildren struct {
	ctx   context.Context // the bridge's: the children's cores run under it
	opts  Options         // for its Record
	spec  supervise.Spec
	proxy supervise.ProxyOptions
	log   *zap.Logger
	name  string

	slots  chan struct{}   // one per child claimed and not yet handed back; its capacity is the bound
	spares chan *childConn // warm children, not initialized
	room   chan struct{}   // one per spare the keeper is to spawn
	stop   chan struct{}   // closed by close: the keeper ends, claims fail

	keeper   sync.WaitGroup // the spare keeper
	stopping sync.WaitGroup // children being stopped

	mu     sync.Mutex
	live   map[*childConn]bool // claimed, not yet handed back
	seq    int
	closed bool
}

// claimWait is how long a claim waits for a slot when every one is taken: a session evicted
// to make room for this one hands its child back a moment after the newcomer arrives.
const claimWait = 2 * time.Second

func newSessionChildren(ctx context.Context, opts Options) *sessionChildren {
	spares := max(opts.Spares, 0)
	s := &sessionChildren{ctx: ctx, opts: opts, spec: opts.Spec, proxy: opts.Proxy, log: opts.Logger, name: nameOf(opts.Spec.Command),
		slots: make(chan struct{}, opts.MaxSessions), spares: make(chan *childConn, spares),
		room: make(chan struct{}, spares), stop: make(chan struct{}), live: map[*childConn]bool{}}
	for range spares {
		s.room <- struct{}{}
	}
	s.keeper.Go(s.keep)
	return s
}

// keep spawns a spare whenever there is room for one, until close.
func (s *sessionChildren) keep() {
	for {
		select {
		case <-s.stop:
			return
		case <-s.room:
		}
		c := s.spawn()
		select {
		case s.spares <- c: // never waits: spares and room share one capacity
		case <-s.stop:
			s.retire(c)
			return
		}
	}
}

func (s *sessionChildren) spawn() *childConn {
	s.mu.Lock()
	s.seq++
	name := s.name + "/s" + strconv.Itoa(s.seq)
	s.mu.Unlock()
	return startChild(s.ctx, name, s.spec, s.proxy, s.log, s.opts.recorder(name), s.opts.Telemetry)
}

// errFull is the answer to an initialize beyond the bound.
func (s *sessionChildren) errFull() error {
	return &jsonrpc.Error{Code: mcp.CodeServerBusy,
		Message: fmt.Sprintf("Server busy: all %d sessions of this bridge have a child of their own (--max-sessions); end one (DELETE), or retry later", cap(s.slots)),
		Data:    map[string]any{"reason": "max sessions", "maxSessions": cap(s.slots), "retryable": true}}
}

var errBridgeClosed = &jsonrpc.Error{Code: mcp.CodeServerBusy, Message: "Server busy: the bridge is shutting down",
	Data: map[string]any{"reason": "shutting down", "retryable": false}}

// claim gives a new session its child: a warm spare if one is left, else one spawned now.
func (s *sessionChildren) claim(ctx context.Context) (*childConn, error) {
	select {
	case s.slots <- struct{}{}:
	default:
		t := time.NewTimer(claimWait)
		defer t.Stop()
		select {
		case s.slots <- struct{}{}:
		case <-t.C:
			return nil, s.errFull()
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.stop:
			return nil, errBridgeClosed
		}
	}
	var c *childConn
	for c == nil {
		select {
		case c = <-s.spares:
			s.room <- struct{}{} // never waits: the spare taken made room
			select {
			case <-c.done: // it gave up (or the bridge is closing): the next one
				c.close() // at once: its core has returned
				c = nil
			default:
			}
		default:
			c = s.spawn()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.mu.Unlock()
		c.close() // here: close may be waiting already for the children it knows of
		s.mu.Lock()
		return nil, errBridgeClosed
	}
	s.live[c] = true
	return c, nil
}

// release hands back a session's child: its slot is free at once, and the child is stopped
// in the background.
func (s *sessionChildren) release(c *childConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live[c] {
		return // already stopped by close
	}
	delete(s.live, c)
	<-s.slots
	s.stopping.Go(func() {
		if err := c.close(); err != nil && !errors.Is(err, supervise.ErrGaveUp) {
			s.log.Warn("a session's child stopped with an error", zap.String("child", c.name), zap.Error(err))
		}
	})
}

// retire stops a child that was never claimed.
func (s *sessionChildren) retire(c *childConn) {
	s.stopping.Go(func() { c.close() })
}

// upgrade upgrades every session's child, one at a time (see Bridge.Upgrade), and replaces
// the spares, which no session has claimed, with new ones.
func (s *sessionChildren) upgrade(ctx context.Context, reason string) []error {
	s.mu.Lock()
	live := make([]*childConn, 0, len(s.live))
	for c := range s.live {
		live = append(live, c)
	}
	s.mu.Unlock()
	var errs []error
	for _, c := range live {
		if err := c.upgrade(ctx, reason); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	for range cap(s.spares) {
		select {
		case c := <-s.spares:
			s.room <- struct{}{} // never waits: the spare taken made room; the keeper spawns a new one
			s.retire(c)
		default:
		}
	}
	return errs
}

// close stops the keeper, the spares and every session's child, and waits until all have
// stopped.
func (s *sessionChildren) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.stopping.Wait()
		return
	}
	s.closed = true
	close(s.stop)
	held := make([]*childConn, 0, len(s.live))
	for c := range s.live {
		held = append(held, c)
		delete(s.live, c)
		<-s.slots
	}
	s.mu.Unlock()
	s.keeper.Wait()
drain: // the keeper has stopped: nobody adds spares now
	for {
		select {
		case c := <-s.spares:
			s.retire(c)
		default:
			break drain
		}
	}
	for _, c := range held {
		s.retire(c)
	}
	s.stopping.Wait()
}
