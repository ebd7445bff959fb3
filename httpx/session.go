package httpx

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayrt/relay/runtime"
)

// legacySession is one initialize-generation session: a long-lived dispatcher and the actor
// that feeds it frames from POSTs and routes its output back to the POST each frame belongs
// to. The actor is the only sender on (and closer of) the dispatcher's input.
type legacySession struct {
	id        string
	principal string // who opened it; nobody else may use it
	mailbox   chan sessionMsg
	quit      chan struct{}
	quitOnce  sync.Once
	done      chan struct{} // closed when the dispatcher and the actor have both stopped

	lastUsed atomic.Int64 // unix nanoseconds
	active   atomic.Int32 // POSTs in progress
}

// sessionMsg is a POST handing the session a frame; when id is not nil, the frames that
// belong to that request are sent to out, and the actor confirms on ack before forwarding.
type sessionMsg struct {
	frame []byte
	id    []byte
	out   chan runtime.Outbound
	ack   chan struct{}
	drop  bool // forget the waiter for id (its client went away)
	// standalone registers out as the session's GET stream, which carries the frames that
	// belong to no request (list changes, resource updates); drop with standalone forgets it.
	standalone bool
}

// newSessionID returns 192 random bits, URL-safe, after the instance prefix if any.
// batchKey is the waiter of a batch's answer, which the dispatcher sends with no request id.
const batchKey = "\x00batch"

func newSessionID(instance string) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic("httpx: no randomness for a session id: " + err.Error())
	}
	id := base64.RawURLEncoding.EncodeToString(b)
	if instance != "" {
		id = instance + "." + id
	}
	return id
}

func startSession(ctx context.Context, rt *runtime.Server, instance string) *legacySession {
	s := &legacySession{
		id:      newSessionID(instance),
		mailbox: make(chan sessionMsg),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	s.touch()
	in := make(chan runtime.Inbound, 16)
	out := make(chan runtime.Outbound, 64)
	served := make(chan struct{})
	go func() {
		defer close(served)
		rt.ServeOutbound(ctx, in, out)
	}()
	go func() {
		defer close(s.done)
		s.run(in, out)
		<-served
	}()
	return s
}

func (s *legacySession) touch() { s.lastUsed.Store(time.Now().UnixNano()) }

// run is the session actor.
func (s *legacySession) run(in chan<- runtime.Inbound, out <-chan runtime.Outbound) {
	waiters := map[string]chan runtime.Outbound{}
	var standalone chan runtime.Outbound
	var queue [][]byte
	quit := s.quit
	for {
		var send chan<- runtime.Inbound
		var next runtime.Inbound
		if len(queue) > 0 && in != nil {
			send, next = in, runtime.Inbound{Frame: queue[0]}
		}
		select {
		case send <- next:
			queue = queue[1:]
		case m := <-s.mailbox:
			switch {
			case m.standalone && m.drop:
				if standalone != nil {
					close(standalone)
					standalone = nil
				}
				continue
			case m.standalone:
				if standalone != nil {
					close(standalone) // a newer GET stream replaces the old one
				}
				standalone = m.out
				close(m.ack)
				continue
			case m.drop:
				if w := waiters[string(m.id)]; w != nil {
					delete(waiters, string(m.id))
					close(w) // its POST, if still waiting, ends with nothing more to say
				}
				continue
			}
			if m.id != nil {
				waiters[string(m.id)] = m.out
			}
			if in != nil {
				queue = append(queue, m.frame)
			}
			close(m.ack)
		case <-quit:
			quit = nil
			close(in) // EOF: the dispatcher drains; output still flows until it stops
			in = nil
			queue = nil
		case o, ok := <-out:
			if !ok {
				for _, w := range waiters {
					close(w)
				}
				if standalone != nil {
					close(standalone)
				}
				return
			}
			if o.Request == nil {
				if w := waiters[batchKey]; w != nil && o.Final {
					w <- o // a batch's answer (one batch at a time per session)
					delete(waiters, batchKey)
					close(w)
					continue
				}
				if standalone != nil {
					select {
					case standalone <- o:
					default: // the GET stream is behind: a list change is repeated by the next one
					}
				}
				continue
			}
			w := waiters[string(o.Request)]
			if w == nil {
				continue // a session notification, or the client of this request went away
			}
			w <- o
			if o.Final {
				delete(waiters, string(o.Request))
				close(w)
			}
		}
	}
}

// post hands a frame to the session. It returns the channel of the request's frames when id
// is not nil, and false if the session has closed.
func (s *legacySession) post(frame, id []byte) (<-chan runtime.Outbound, bool) {
	m := sessionMsg{frame: frame, id: id}
	if id != nil {
		m.out = make(chan runtime.Outbound, 64)
	}
	return m.out, s.register(m)
}

// listen registers the session's GET stream and returns its channel, or false if the session
// has closed.
func (s *legacySession) listen() (<-chan runtime.Outbound, bool) {
	m := sessionMsg{standalone: true, out: make(chan runtime.Outbound, 64)}
	return m.out, s.register(m)
}

// register gives the actor a message and waits until it has taken it, so that no frame for
// the waiter can be routed before the waiter is known; false if the session has closed.
func (s *legacySession) register(m sessionMsg) bool {
	m.ack = make(chan struct{})
	select {
	case s.mailbox <- m:
	case <-s.done:
		return false
	}
	<-m.ack
	return true
}

// drop forgets the waiter of a request that will never be answered (the client cancelled
// it), ending the POST that waits for it.
func (s *legacySession) drop(id []byte) { s.withdraw(sessionMsg{id: id, drop: true}, nil) }

// forget drops the waiter of a request whose client went away (in this generation a
// disconnect is not a cancellation: the request goes on, its output is discarded).
func (s *legacySession) forget(id []byte, frames <-chan runtime.Outbound) {
	s.withdraw(sessionMsg{id: id, drop: true}, frames)
}

// unlisten forgets the GET stream whose client went away.
func (s *legacySession) unlisten(frames <-chan runtime.Outbound) {
	s.withdraw(sessionMsg{standalone: true, drop: true}, frames)
}

// withdraw sends a drop message, draining the waiter's channel meanwhile so that the actor is
// never stuck on it.
func (s *legacySession) withdraw(m sessionMsg, frames <-chan runtime.Outbound) {
	for {
		select {
		case s.mailbox <- m:
			return
		case _, ok := <-frames: // a nil frames never fires
			if !ok {
				return
			}
		case <-s.done:
			return
		}
	}
}

// close ends the session; it returns at once, and done closes when it has drained.
func (s *legacySession) close() { s.quitOnce.Do(func() { close(s.quit) }) }

// sessionTable holds the live sessions, bounded: when it is full, the least recently used
// idle session is evicted to make room.
type sessionTable struct {
	mu   sync.Mutex
	max  int
	byID map[string]*legacySession
}

func (t *sessionTable) get(id string) *legacySession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// add inserts s, evicting the least recently used idle session if the table is full. It
// returns false when the table is full of busy sessions.
func (t *sessionTable) add(s *legacySession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byID) >= t.max {
		var lru *legacySession
		for _, c := range t.byID {
			if c.active.Load() == 0 && (lru == nil || c.lastUsed.Load() < lru.lastUsed.Load()) {
				lru = c
			}
		}
		if lru == nil {
			return false
		}
		delete(t.byID, lru.id)
		lru.close()
	}
	t.byID[s.id] = s
	return true
}

func (t *sessionTable) remove(id string) *legacySession {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	delete(t.byID, id)
	return s
}

// expire closes the sessions idle for longer than idle.
func (t *sessionTable) expire(idle time.Duration) {
	cutoff := time.Now().Add(-idle).UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, s := range t.byID {
		if s.active.Load() == 0 && s.lastUsed.Load() < cutoff {
			delete(t.byID, id)
			s.close()
		}
	}
}

// all removes and returns every session.
func (t *sessionTable) all() []*legacySession {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*legacySession, 0, len(t.byID))
	for id, s := range t.byID {
		out = append(out, s)
		delete(t.byID, id)
	}
	return out
}

func (t *sessionTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// sessionHost owns a handler's sessions, the context their dispatchers run under, and the
// janitor that expires idle ones.
type sessionHost struct {
	sessions sessionTable
	base     context.Context // cancelled by close: every dispatcher drains
	stop     context.CancelFunc
	janitor  sync.WaitGroup
	closeOne sync.Once
}

func (h *sessionHost) start(maxSessions int, idle time.Duration) {
	h.sessions = sessionTable{max: maxSessions, byID: map[string]*legacySession{}}
	h.base, h.stop = context.WithCancel(context.Background())
	h.janitor.Add(1)
	go func() {
		defer h.janitor.Done()
		tick := time.NewTicker(max(idle/4, 10*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-h.base.Done():
				return
			case <-tick.C:
				h.sessions.expire(idle)
			}
		}
	}()
}

// close ends every session, waiting for each to drain, and stops the janitor.
func (h *sessionHost) close() {
	h.closeOne.Do(func() {
		h.stop()
		h.janitor.Wait()
		for _, s := range h.sessions.all() {
			s.close()
			<-s.done
		}
	})
}
