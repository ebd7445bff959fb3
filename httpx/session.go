package httpx

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayrt/relay/actors"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// session is one session of an HTTP client (MCP's initialize generation, RCP session mode): a
// long-lived dispatcher, and the actor that feeds it the frames of the client's POSTs and
// routes what it sends back to the POST each frame belongs to. The actor is the only sender
// on (and closer of) the dispatcher's input, and the only owner of its tables; everyone else
// sends it messages.
type session struct {
	id        string
	store     EventStore // keeps the events of its SSE streams for resumption; nil: none
	principal string     // who opened it; nobody else may use it
	client    string     // the principal, or the remote address of an anonymous client
	p         protocol
	mailbox   actors.Mailbox[sessionMsg]
	stopped   context.Context // done when the actor has stopped taking messages
	quit      chan struct{}   // closed by close: drain
	quitOnce  sync.Once
	evictC    chan struct{} // closed by evict: answer, cancel, drain
	evictOnce sync.Once
	done      chan struct{} // closed when the dispatcher and the actor have both stopped
	fleet     *fleet        // the fleet the session is shared with; nil: this process only
	rev       atomic.Uint64 // fleet: the newest revision of the protocol state handed to the dispatcher

	lastUsed atomic.Int64 // unix nanoseconds
	kept     int64        // fleet: lastUsed when the store's record was last kept alive (janitor's)
	recorded atomic.Bool  // fleet: the store has the session's record
	active   atomic.Int32 // POSTs in progress
	// resumable counts the client's requests running whose event streams it may resume
	// (Last-Event-ID): a client whose stream broke, or that PollAfter closed, is coming back
	// for them, so the session is at work even with no POST open.
	resumable atomic.Int32
	// waitingSince is when the oldest request of the server's to the client that is still
	// unanswered was sent (unix nanoseconds; 0: none): how long the session has waited on
	// its client.
	waitingSince atomic.Int64
}

// sessionMsg is a message to a session's actor.
type sessionMsg interface{ isSessionMsg() }

// postMsg hands the session a frame from a POST. When key is not empty, the frames of the
// request key (or a batch's answer) go to w until the final one. answers is the id of the
// server's request to the client that the frame answers, when it is such an answer. sse
// says the POST takes an event stream: its events are kept for resumption, once the first
// frame before the answer starts the stream. The actor replies on ack whether it took the
// frame, before forwarding it, so that no frame for w can be routed before w is known.
type postMsg struct {
	frame   []byte
	key     string
	answers string
	cancels string // the key of the request a cancel notification names
	sse     bool
	w       *waiter
	ack     chan posted
}

// posted is the actor's answer to a postMsg.
type posted uint8

const (
	postRefused   posted = iota // the session is ending
	postTaken                   // the frame is the dispatcher's
	postElsewhere               // fleet: an answer or a cancel for another instance's request; pass it on
)

// listenMsg makes w the session's GET stream, which carries the frames that belong to no
// request (list changes, resource updates); it replaces an earlier one.
type listenMsg struct {
	w   *waiter
	ack chan bool
}

// dropMsg ends the POST waiting for request key: the client cancelled it, and nothing more
// will be sent for it.
type dropMsg struct{ key string }

// resumeMsg resumes the stream named stream after its event seq (a GET with Last-Event-ID):
// the actor answers on ack with the events kept after it and, while the stream is live, makes
// w the waiter of what follows.
type resumeMsg struct {
	stream string
	seq    uint64
	w      *waiter
	ack    chan resumed
}

// resumed is the actor's answer to a resumeMsg.
type resumed struct {
	events []runtime.Outbound // kept since the event resumed after, each with its Event id
	live   bool               // more follows on the waiter
	ok     bool               // false: the stream cannot be resumed from there
	remote bool               // fleet: another instance's request stream, followed there (fleet.follow)
}

// startMsg starts the kept stream of request key before any frame of it (PollAfter, for a
// request that has sent nothing yet): the actor answers with the id the stream is primed
// with, or "" when the request has already been answered.
type startMsg struct {
	key string
	ack chan string
}

func (postMsg) isSessionMsg()     {}
func (busMsg) isSessionMsg()      {}
func (stateMsg) isSessionMsg()    {}
func (listenToMsg) isSessionMsg() {}

// listenToMsg makes rings get the words another instance rings about stream (fleet.follow),
// or stops them when rings is nil.
type listenToMsg struct {
	stream string
	rings  chan string // 1 slot: the newest word wins
	ack    chan bool
}

// stateMsg hands the dispatcher the session's protocol state, which another instance of the
// fleet saved, before the frames posted after it.
type stateMsg struct{ state []byte }

func (listenMsg) isSessionMsg() {}
func (dropMsg) isSessionMsg()   {}
func (resumeMsg) isSessionMsg() {}
func (startMsg) isSessionMsg()  {}

// waiter is a POST (or the GET stream) waiting for frames. Its client going away closes gone,
// which the actor watches whenever it sends to out: the actor never waits on a client that
// has left, and the POST never has to reach the actor to say so.
type waiter struct {
	out      chan runtime.Outbound
	gone     chan struct{}
	goneOnce sync.Once
	primed   string // for a GET stream whose events are kept: the id its stream starts at
}

func newWaiter() *waiter {
	return &waiter{out: make(chan runtime.Outbound, 64), gone: make(chan struct{})}
}

// leave tells the actor the waiter's client went away.
func (w *waiter) leave() { w.goneOnce.Do(func() { close(w.gone) }) }

// batchKey is the waiter of a batch's answer, which the dispatcher sends with no request id.
const batchKey = "\x00batch"

// newSessionID returns 192 random bits, URL-safe, after the instance prefix if any.
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

// sessionSpec is what a session starts with.
type sessionSpec struct {
	id                string
	principal, client string
	events            EventStore // keeps the events of its SSE streams; nil: none
	fleet             *fleet     // the fleet it is shared with; nil: this process only
	restore           []byte     // fleet: its protocol's state, when it began elsewhere
	rev               uint64     // and that state's revision
}

// startSession starts a session's dispatcher and actor under ctx. done is called when both
// have stopped.
func startSession(ctx context.Context, rt *runtime.Server, p protocol, spec sessionSpec, done func()) *session {
	stopped, stop := context.WithCancel(context.Background())
	s := &session{
		id:        spec.id,
		store:     spec.events,
		principal: spec.principal,
		client:    spec.client,
		p:         p,
		mailbox:   actors.NewMailbox[sessionMsg](16),
		stopped:   stopped,
		quit:      make(chan struct{}),
		evictC:    make(chan struct{}),
		done:      make(chan struct{}),
		fleet:     spec.fleet,
	}
	s.touch()
	ctx = runtime.WithSessionID(ctx, s.id)
	if s.fleet != nil {
		s.rev.Store(spec.rev)
		ctx = runtime.WithSessionState(ctx, &runtime.SessionState{
			Restore: spec.restore,
			Save:    func(state []byte) error { return s.fleet.save(s, state) },
		})
	}
	in := make(chan runtime.Inbound, 16)
	out := make(chan runtime.Outbound, 64)
	served := make(chan struct{})
	go func() {
		defer close(served)
		rt.ServeOutbound(ctx, in, out)
	}()
	go func() {
		defer done()
		defer close(s.done)
		s.run(in, out)
		stop()
		<-served
	}()
	return s
}

func (s *session) touch() { s.lastUsed.Store(time.Now().UnixNano()) }

// call is a request of the server's to the client, as the actor tracks it.
type call struct {
	request string     // the key of the client's request it was sent for
	since   int64      // unix nanoseconds
	orig    jsonrpc.ID // fleet: the dispatcher's id, which the client's answer gets back
}

// run is the session actor.
func (s *session) run(in chan<- runtime.Inbound, out <-chan runtime.Outbound) {
	waiters := map[string]*waiter{}
	followers := map[string]chan string{} // fleet: another instance's streams followed here, by name
	running := map[string]bool{}          // the client's requests in flight, by key
	calls := map[string]call{}            // the server's requests to the client not yet answered, by id
	var stream *waiter                    // the GET stream
	var queue []runtime.Inbound
	quit, evictC := s.quit, s.evictC
	closing := false // input ends once queue is empty
	kept := newKeptStreams(s)
	defer func() { // the dispatcher has stopped: nothing more for anyone
		for _, w := range waiters {
			close(w.out)
		}
		if stream != nil {
			close(stream.out)
		}
		kept.forget()
	}()
	forgetCalls := func(key string) {
		for id, c := range calls {
			if c.request == key {
				delete(calls, id)
			}
		}
		s.noteWaiting(calls)
	}
	// drop ends request key, cancelled by its client: its POST, if still waiting, ends with
	// nothing more to say, and a cancelled request is owed nothing more, so it is done here
	// too (its id may be used again, and nothing of it stays in the tables).
	drop := func(key string) {
		if w := waiters[key]; w != nil {
			delete(waiters, key)
			close(w.out)
		}
		delete(running, key)
		forgetCalls(key)
		kept.end(key, true)
	}
	for {
		if closing && len(queue) == 0 && in != nil {
			close(in) // EOF: the dispatcher drains; output still flows until it stops
			in = nil
		}
		var send chan<- runtime.Inbound
		var next runtime.Inbound
		if len(queue) > 0 && in != nil {
			send, next = in, queue[0]
		}
		select {
		case send <- next:
			queue = queue[1:]
		case m := <-s.mailbox.Receive():
			switch m := m.(type) {
			case postMsg:
				if in == nil || closing {
					m.ack <- postRefused
					continue
				}
				if s.fleet != nil && s.fleet.bus != nil && (m.answers != "" && calls[m.answers].since == 0 || m.cancels != "" && !running[m.cancels]) {
					m.ack <- postElsewhere // the request is another instance's, or no one's
					continue
				}
				if m.key != "" && (running[m.key] || waiters[m.key] != nil) {
					refuseReuse(m.key, m.w) // the dispatcher would too, but the first POST would lose its answer
					m.ack <- postTaken
					continue
				}
				if m.key != "" {
					waiters[m.key] = m.w
					if m.key != batchKey {
						running[m.key] = true
						kept.post(m.key, m.sse)
					}
				}
				if m.answers != "" {
					if orig := calls[m.answers].orig; orig != nil {
						m.frame = jsonrpc.SetMember(m.frame, "id", orig)
					}
					delete(calls, m.answers)
					s.noteWaiting(calls)
				}
				queue = append(queue, runtime.Inbound{Frame: m.frame})
				m.ack <- postTaken
			case stateMsg:
				if in != nil && !closing {
					queue = append(queue, runtime.Inbound{Frame: m.state, State: true})
				}
			case busMsg:
				switch m.kind {
				case busAnswer:
					if c, ok := calls[m.key]; ok {
						delete(calls, m.key)
						s.noteWaiting(calls)
						queue = append(queue, runtime.Inbound{Frame: jsonrpc.SetMember(m.frame, "id", c.orig)})
					}
				case busCancel:
					if running[m.key] {
						queue = append(queue, runtime.Inbound{Frame: m.frame})
						drop(m.key) // as a cancel POSTed here: its POST gets nothing more
					}
				case busState:
					if rev, err := strconv.ParseUint(m.key, 10, 64); err == nil && in != nil && !closing && s.newer(rev) {
						queue = append(queue, runtime.Inbound{Frame: m.frame, State: true})
					}
				case busEnded:
					s.fleet.ended(s)
				case busResume:
					kept.followed(m.key)
				case busBell:
					if rings := followers[m.key]; rings != nil {
						select { // the newest word wins: an older one not yet read goes
						case <-rings:
						default:
						}
						rings <- string(m.frame)
					}
				}
			case listenToMsg:
				if m.rings == nil {
					delete(followers, m.stream)
				} else {
					followers[m.stream] = m.rings
				}
				m.ack <- true
			case listenMsg:
				if in == nil || closing {
					m.ack <- false
					continue
				}
				if stream != nil {
					close(stream.out) // a newer GET stream replaces the old one
				}
				stream = m.w
				stream.primed = kept.listen()
				m.ack <- true
			case resumeMsg:
				if in == nil || closing {
					m.ack <- resumed{}
					continue
				}
				r, key := kept.resume(m.stream, m.seq)
				if r.ok && r.live {
					old := stream
					if key != "" {
						old = waiters[key]
						waiters[key] = m.w
					} else {
						stream = m.w
					}
					if old != nil {
						close(old.out) // the resumed stream replaces the one before
					}
				}
				m.ack <- r
			case startMsg:
				if !running[m.key] {
					m.ack <- "" // answered: the answer is on its way to the POST
					continue
				}
				m.ack <- kept.start(m.key)
			case dropMsg:
				drop(m.key)
			}
		case <-quit:
			quit = nil
			closing = true
			queue = nil // frames not yet taken are not served: their POSTs end with no answer
		case <-evictC:
			evictC, quit = nil, nil
			for key, w := range waiters {
				id := jsonrpc.ID(key)
				if key == batchKey {
					id = jsonrpc.Null
				}
				select {
				case w.out <- runtime.Outbound{Frame: s.p.evicted(id), Request: id, Final: true}:
				default: // its buffer is full: the client is not reading; it ends with nothing
				}
				close(w.out)
				delete(waiters, key)
			}
			if stream != nil {
				close(stream.out)
				stream = nil
			}
			queue = queue[:0]
			for key := range running { // the handlers stop, whatever they wait for
				queue = append(queue, runtime.Inbound{Frame: s.p.cancel(jsonrpc.ID(key))})
			}
			closing = true
		case o, ok := <-out:
			if !ok {
				return
			}
			if o.Request == nil {
				if w := waiters[batchKey]; w != nil && o.Final {
					delete(waiters, batchKey)
					if s.deliver(w, o) {
						close(w.out) // a batch's answer (one batch at a time per session)
					}
					continue
				}
				o = kept.session(o)
				if stream != nil {
					select {
					case <-stream.gone: // its client went away
						close(stream.out)
						stream = nil
					case stream.out <- o:
					default: // the GET stream is behind: a list change is repeated by the next one
					}
				}
				continue
			}
			key := string(o.Request)
			if !o.Final && isCall(o.Frame) {
				c := call{request: key, since: time.Now().UnixNano()}
				id := jsonrpc.Field(o.Frame, "id")
				if s.fleet != nil { // named so that the instance that gets the answer knows it is ours
					c.orig = append(jsonrpc.ID(nil), id...)
					id = s.fleet.callID(id)
					o.Frame = jsonrpc.SetMember(o.Frame, "id", id)
				}
				calls[string(id)] = c
				s.noteWaiting(calls)
			}
			o = kept.request(key, o)
			if o.Final {
				delete(running, key)
				forgetCalls(key)
			}
			w := waiters[key]
			if w == nil {
				continue // a session notification, or nobody waits: the client went away, or eviction ended it
			}
			if !s.deliver(w, o) {
				delete(waiters, key)
				continue
			}
			if o.Final {
				delete(waiters, key)
				close(w.out)
			}
		}
	}
}

// refuseReuse answers a POST whose request has the id of one of the client's requests still in
// flight (or that is a batch while the session's previous batch is), without handing it to
// the dispatcher: the waiter of the first stays the one its answer goes to.
func refuseReuse(key string, w *waiter) {
	id, msg := jsonrpc.ID(key), "Invalid request: this id is already in flight in this session; use a new id for each request"
	if key == batchKey {
		id, msg = jsonrpc.Null, "Invalid request: this session's previous batch is still in flight; send the next one once it is answered"
	}
	w.out <- runtime.Outbound{Frame: jsonrpc.AppendError(nil, id, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, msg)), Request: id, Final: true}
	close(w.out)
}

// deliver sends o to w, unless its client has gone away (false: forget it). An eviction
// ends the wait too: the frame is dropped, and the eviction ends w.
func (s *session) deliver(w *waiter, o runtime.Outbound) bool {
	select {
	case w.out <- o:
		return true
	case <-w.gone:
		return false
	case <-s.evictC:
		return true
	}
}

// isCall reports whether a frame is a request (of the server's to the client), not a
// notification.
func isCall(frame []byte) bool {
	return jsonrpc.Field(frame, "method") != nil && jsonrpc.Field(frame, "id") != nil
}

// noteWaiting publishes when the oldest unanswered call was sent.
func (s *session) noteWaiting(calls map[string]call) {
	var oldest int64
	for _, c := range calls {
		if oldest == 0 || c.since < oldest {
			oldest = c.since
		}
	}
	s.waitingSince.Store(oldest)
}

// post hands the session a frame from a POST (see postMsg). It returns the waiter of the
// request's frames when key is not empty, and what the actor did with the frame.
func (s *session) post(frame []byte, key, answers, cancels string, sse bool) (*waiter, posted) {
	m := postMsg{frame: frame, key: key, answers: answers, cancels: cancels, sse: sse, ack: make(chan posted, 1)}
	if key != "" {
		m.w = newWaiter()
	}
	took, ok := ask(s, m, m.ack)
	if !ok {
		return nil, postRefused
	}
	return m.w, took
}

// listen registers the session's GET stream and returns its waiter, or false if the session
// has ended.
func (s *session) listen() (*waiter, bool) {
	m := listenMsg{w: newWaiter(), ack: make(chan bool, 1)}
	took, ok := ask(s, m, m.ack)
	return m.w, ok && took
}

// ask sends the actor m and waits for its answer on ack; false if the session has ended
// first.
func ask[T any](s *session, m sessionMsg, ack <-chan T) (answer T, ok bool) {
	if s.mailbox.Send(s.stopped, m) != nil {
		return answer, false
	}
	select {
	case answer = <-ack:
		return answer, true
	case <-s.stopped.Done():
		return answer, false
	}
}

// drop ends the POST waiting for request key (see dropMsg).
func (s *session) drop(key string) { s.mailbox.Send(s.stopped, dropMsg{key: key}) }

// close ends the session gracefully: input ends, the requests in flight finish (within the
// runtime's drain timeout) and are answered. It returns at once; done closes when it has
// drained.
func (s *session) close() { s.quitOnce.Do(func() { close(s.quit) }) }

// evict ends the session at once: every POST still waiting is answered with the protocol's
// error that says the session was evicted, the GET stream ends, the requests in flight are
// cancelled, and the dispatcher drains. It returns at once.
func (s *session) evict() { s.evictOnce.Do(func() { close(s.evictC) }) }

// sessionHost owns a handler's sessions: the table of the live ones, bounded in all and per
// client, the context their dispatchers run under, the janitor that expires idle ones, and a
// wait for every session it ever started, so that close returns only when all have stopped,
// those evicted, expired or deleted before included.
type sessionHost struct {
	base    context.Context // cancelled by close: every dispatcher drains
	stop    context.CancelFunc
	store   EventStore // the sessions' SSE events, for resumption; nil: not kept
	fleet   *fleet     // the fleet the sessions are shared with; nil: this process only
	janitor sync.WaitGroup
	live    sync.WaitGroup // one per session started, until its actor and dispatcher stop

	mu        sync.Mutex
	max       int
	perClient int
	byID      map[string]*session
	clients   map[string]int // sessions in the table per client
	closed    bool
	closeOnce sync.Once
}

func (h *sessionHost) start(maxSessions, perClient int, idle time.Duration) {
	h.max, h.perClient = maxSessions, perClient
	h.byID, h.clients = map[string]*session{}, map[string]int{}
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
				h.expire(idle)
				h.fleet.refresh()
			}
		}
	}()
}

// open starts a session for the client of r and puts it in the table, making room as the
// table's policy says (see admit). The session counts one POST in progress (the initialize
// that opens it), which the caller ends with s.active.Add(-1). On refusal it returns why.
func (h *sessionHost) open(r *http.Request, rt *runtime.Server, p protocol, instance string) (*session, refusal, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, refusedBusy, false
	}
	client := clientKey(r)
	victim, why, ok := h.admit(client)
	if !ok {
		return nil, why, false
	}
	if victim != nil {
		h.removeLocked(victim.id)
		victim.evict()
	}
	h.live.Add(1)
	spec := sessionSpec{id: newSessionID(instance), principal: principalID(r), client: client, events: h.store, fleet: h.fleet}
	s := startSession(withPrincipal(h.base, runtime.PrincipalFrom(r.Context())), rt, p, spec, h.live.Done)
	s.active.Add(1)
	h.byID[s.id] = s
	h.clients[client]++
	return s, 0, true
}

// admit decides whether a new session of client fits: at once, or by evicting a victim, or
// not (why). The policy, so that busy sessions cannot lock newcomers out: when the client is
// at its limit of sessions, the one of its own that has waited longest on it goes; when the
// table is full, the one of all that has waited longest on its client goes. A session waits
// on its client while it is idle (since it was last used) and while a request of the
// server's to the client is unanswered (since it was sent: a sampling or elicitation request
// that nobody answers); a session working for its client, with no such question pending, is
// never evicted. If every candidate is working, the newcomer is refused: 429 at the client's
// limit, 503 when the table is full.
func (h *sessionHost) admit(client string) (victim *session, why refusal, ok bool) {
	switch {
	case h.clients[client] >= h.perClient:
		if victim = h.pick(client, true); victim == nil {
			return nil, refusedClientSessions, false
		}
	case len(h.byID) >= h.max:
		if victim = h.pick("", false); victim == nil {
			return nil, refusedBusy, false
		}
	}
	return victim, 0, true
}

// pick chooses the session to evict (of client only, when own): the one that has waited
// longest on its client; nil if every one is working.
func (h *sessionHost) pick(client string, own bool) *session {
	var victim *session
	var oldest int64
	for _, s := range h.byID {
		if own && s.client != client {
			continue
		}
		if since, ok := s.waitingOnClient(); ok && (victim == nil || since < oldest) {
			victim, oldest = s, since
		}
	}
	return victim
}

// waitingOnClient reports since when the session has waited on its client: since it was last
// used when idle, or since its oldest unanswered request to the client when busy; false when
// it is working.
func (s *session) waitingOnClient() (int64, bool) {
	if s.active.Load() == 0 && s.resumable.Load() == 0 {
		return s.lastUsed.Load(), true
	}
	if since := s.waitingSince.Load(); since != 0 {
		return since, true
	}
	return 0, false
}

// lookup returns the session a request names, if it exists and belongs to the request's
// principal: a session id alone never lets one user act as another.
func (h *sessionHost) lookup(r *http.Request, id string) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.byID[id]
	if s == nil || s.principal != principalID(r) {
		return nil
	}
	return s
}

// remove takes a session out of the table; the caller ends it.
func (h *sessionHost) remove(id string) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.removeLocked(id)
}

func (h *sessionHost) removeLocked(id string) *session {
	s := h.byID[id]
	if s == nil {
		return nil
	}
	delete(h.byID, id)
	if h.clients[s.client]--; h.clients[s.client] <= 0 {
		delete(h.clients, s.client)
	}
	return s
}

// expire closes the sessions idle for longer than idle.
func (h *sessionHost) expire(idle time.Duration) {
	cutoff := time.Now().Add(-idle).UnixNano()
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, s := range h.byID {
		if s.active.Load() == 0 && s.resumable.Load() == 0 && s.lastUsed.Load() < cutoff {
			h.removeLocked(id)
			s.close()
		}
	}
}

func (h *sessionHost) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.byID)
}

// close refuses new sessions, ends every session in the table (their dispatchers drain),
// stops the janitor, and waits until every session ever started has stopped.
func (h *sessionHost) close() {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		h.closed = true
		all := make([]*session, 0, len(h.byID))
		for id, s := range h.byID {
			all = append(all, s)
			h.removeLocked(id)
		}
		h.mu.Unlock()
		h.stop()
		h.janitor.Wait()
		for _, s := range all {
			s.close()
		}
		h.live.Wait()
	})
}

// sessionRefusal says why a new session was refused.
func sessionRefusal(why refusal) string {
	if why == refusedClientSessions {
		return "Too many sessions: every session of this client is busy; retry later"
	}
	return "Service unavailable: every session is busy; retry later"
}

// find returns the session a request names: the one in the table; in a fleet, the one whose
// record the store has, taken up here if another instance began it, and handed the state
// another instance saved since this one last looked. The error says why a fleet's session
// cannot be served here now (the client may retry).
func (h *sessionHost) find(r *http.Request, id string, rt *runtime.Server, p protocol) (*session, error) {
	s := h.lookup(r, id)
	if h.fleet == nil {
		return s, nil
	}
	return h.fleet.find(r, s, id, rt, p)
}

// listenTo makes rings get the words rung about another instance's stream (nil: no more);
// false if the session has ended.
func (s *session) listenTo(stream string, rings chan string) bool {
	m := listenToMsg{stream: stream, rings: rings, ack: make(chan bool, 1)}
	_, ok := ask(s, m, m.ack)
	return ok
}

// newer reports whether rev is newer than the states handed to the dispatcher, and if so
// records it (fleet): the same state is handed over once, however many requests read it.
// The dispatcher's session itself takes only a state newer than its own.
func (s *session) newer(rev uint64) bool {
	for {
		cur := s.rev.Load()
		if rev <= cur {
			return false
		}
		if s.rev.CompareAndSwap(cur, rev) {
			return true
		}
	}
}

// takeState hands the dispatcher state, of revision rev, if it is newer than the one it has
// (fleet).
func (s *session) takeState(state []byte, rev uint64) {
	if s.newer(rev) {
		s.mailbox.Send(s.stopped, stateMsg{state: state})
	}
}

// replica starts a session that began on another instance of the fleet and puts it in the
// table, making room as open does, or says why it cannot. A replica started by another
// request meanwhile is returned instead.
func (h *sessionHost) replica(r *http.Request, rt *runtime.Server, p protocol, spec sessionSpec) (*session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.byID[spec.id]; s != nil {
		return s, nil
	}
	if h.closed {
		return nil, errClosing
	}
	victim, _, ok := h.admit(spec.client)
	if !ok {
		return nil, errNoRoom
	}
	if victim != nil {
		h.removeLocked(victim.id)
		victim.evict()
	}
	spec.events, spec.fleet = h.store, h.fleet
	h.live.Add(1)
	s := startSession(withPrincipal(h.base, runtime.PrincipalFrom(r.Context())), rt, p, spec, h.live.Done)
	s.recorded.Store(true)
	h.byID[s.id] = s
	h.clients[s.client]++
	return s, nil
}

// Why a fleet's session cannot be taken up here.
var (
	errClosing = errors.New("this instance is shutting down")
	errNoRoom  = errors.New("every session this instance holds is busy")
)

// removeIf takes s out of the table if it is still there.
func (h *sessionHost) removeIf(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byID[s.id] == s {
		h.removeLocked(s.id)
	}
}
