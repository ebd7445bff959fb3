package httpx

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

// fleet is what a handler's sessions share with the other instances of a fleet
// (MCPOptions.SessionStore and Bus): each instance that gets a request of a session runs a
// session of its own for it (a replica: its own dispatcher and actor), started from the
// session's record in the store, and the replicas tell each other, on the fleet's sessions
// topic of the bus, what only one of them can act on:
//
//   - the client's answer to a request of the server's goes to the replica that asked (the
//     ids of its requests carry its tag);
//   - a cancel goes to the replica running the request;
//   - a state saved by one (logging/setLevel, resources/subscribe) reaches the others, for
//     the GET stream's sake (a resource subscribed to through one instance is updated on the
//     stream another holds);
//   - a session the client deleted ends everywhere.
//
// The session's protocol state (logging/setLevel, resources/subscribe) is read from the
// store on each of the client's requests, with the record (one round trip, which also keeps
// the record alive), and handed to the replica's dispatcher before the request when another
// instance changed it: the client's next request sees what its last one set, wherever each
// lands. Each state is a revision kept only over the one before it (SessionStore.Put): of
// two changes made at once through two instances, one is refused and its client retries.
//
// Notifications that belong to no request (list changes, resource updates) go to the GET
// stream of the replica that holds it: each replica hears the server's changes (mcp.Bus) and
// the one with the stream sends them, so none is sent twice.
type fleet struct {
	store SessionStore
	bus   mcp.Bus // nil: replicas cannot reach each other (see MCPOptions.Bus)
	tag   string  // this instance's mark on the ids of its requests to clients
	ttl   time.Duration
	host  *sessionHost
	log   *zap.Logger
	bells chan bell // for the ringer
}

// fleetTimeout bounds a call to the store or the bus on a request's path.
const fleetTimeout = 5 * time.Second

// errSessionStore is what a request gets when the session store cannot be reached.
var errSessionStore = errors.New("the session store cannot be reached")

// newFleetTag returns a random tag for an instance that has no name.
func newFleetTag() string {
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		panic("httpx: no randomness for an instance tag: " + err.Error())
	}
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)
}

// record is a session's record in the store.
type record struct {
	Principal string          `json:"principal"`
	Client    string          `json:"client"`
	State     json.RawMessage `json:"state"`
}

// stateRev is the revision a protocol state carries (runtime.SessionState); 0 when it has
// none.
func stateRev(state []byte) uint64 {
	rev, _ := strconv.ParseUint(string(jsonrpc.Field(state, "rev")), 10, 64)
	return rev
}

// errChanged is a save that found a newer revision of the session's state, or none.
var errChanged = errors.New("the session was changed through another instance at the same moment, or has ended")

// save keeps the protocol state of s in the store, and tells the other replicas. It runs on
// the session's dispatcher goroutine, before the request that changed the state is answered.
func (f *fleet) save(s *session, state []byte) error {
	rev := stateRev(state)
	rec, err := json.Marshal(record{Principal: s.principal, Client: s.client, State: state})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetTimeout)
	defer cancel()
	ok, err := f.store.Put(ctx, s.id, rev, rec, f.ttl)
	if err != nil {
		return err
	}
	if !ok {
		return errChanged
	}
	s.recorded.Store(true)
	s.newer(rev)
	if err := f.publish(ctx, s.id, busState, strconv.FormatUint(rev, 10), state); err != nil {
		// The store has it: each request reads it. A GET stream elsewhere hears of it with the
		// session's next request there.
		f.log.Warn("a session's state is kept, but its other instances could not be told", zap.String("session", s.id), zap.Error(err))
	}
	return nil
}

// find reads session id's record for r and returns the session to serve it: s (the replica
// here, or nil) handed the record's state, or a replica started from the record. It returns
// nil when the store has no record that r's principal owns: the session has ended (and ends
// here too), or never existed, or is another's.
func (f *fleet) find(r *http.Request, s *session, id string, rt *runtime.Server, p protocol) (*session, error) {
	ctx, cancel := context.WithTimeout(r.Context(), fleetTimeout)
	defer cancel()
	raw, err := f.store.Get(ctx, id, f.ttl)
	if err != nil {
		f.log.Warn("the session store could not be read", zap.String("session", id), zap.Error(err))
		return nil, errSessionStore
	}
	var rec record
	if raw != nil {
		if err := json.Unmarshal(raw, &rec); err != nil {
			f.log.Warn("a session's record in the store could not be read; it is taken as ended", zap.String("session", id), zap.Error(err))
			raw = nil
		}
	}
	if raw == nil {
		if s != nil && !s.recorded.Load() {
			return s, nil // its initialize is still being answered: nothing is kept yet
		}
		if s != nil {
			f.ended(s) // deleted or expired: through another instance, or while this one slept
		}
		return nil, nil
	}
	if rec.Principal != principalID(r) {
		return nil, nil // a session id alone never lets one user act as another
	}
	if s != nil {
		s.takeState(rec.State, stateRev(rec.State))
		return s, nil
	}
	return f.host.replica(r, rt, p, sessionSpec{id: id, principal: rec.Principal, client: rec.Client, restore: rec.State, rev: stateRev(rec.State)})
}

// refresh keeps alive in the store the records of the sessions used here since it last did,
// and ends here those whose record has gone (deleted through an instance whose word was
// lost, or expired). The janitor calls it; a nil fleet does nothing.
func (f *fleet) refresh() {
	if f == nil {
		return
	}
	var used []*session
	f.host.mu.Lock()
	for _, s := range f.host.byID {
		if last := s.lastUsed.Load(); last != s.kept && s.recorded.Load() {
			s.kept = last
			used = append(used, s)
		}
	}
	f.host.mu.Unlock()
	for _, s := range used {
		ctx, cancel := context.WithTimeout(f.host.base, fleetTimeout)
		raw, err := f.store.Get(ctx, s.id, f.ttl)
		cancel()
		if err == nil && raw == nil {
			f.ended(s)
		}
	}
}

// ended ends s here: the client deleted the session through another instance.
func (f *fleet) ended(s *session) {
	f.host.removeIf(s)
	s.close()
}

// deleted forgets session id everywhere: the client deleted it here.
func (f *fleet) deleted(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	if err := f.store.Delete(ctx, id); err != nil {
		f.log.Warn("a deleted session could not be forgotten by the store; it expires there", zap.String("session", id), zap.Error(err))
	}
	if events := f.host.store; events != nil {
		if err := events.Forget(ctx, id); err != nil {
			f.log.Warn("a deleted session's events could not be forgotten by the event store; they expire there", zap.String("session", id), zap.Error(err))
		}
	}
	if err := f.publish(ctx, id, busEnded, "", nil); err != nil {
		f.log.Warn("a deleted session's other instances could not be told; theirs expire", zap.String("session", id), zap.Error(err))
	}
}

// callID is the id a request of this instance's to a client is sent with: the dispatcher's,
// after the instance's tag.
func (f *fleet) callID(id []byte) jsonrpc.ID {
	inner := bytes.Trim(id, `"`)
	out := make([]byte, 0, len(f.tag)+len(inner)+3)
	out = append(out, '"')
	out = append(out, f.tag...)
	out = append(out, '-')
	out = append(out, inner...)
	return append(out, '"')
}

// The kinds of message about a session on the sessions topic.
const (
	busAnswer = 'a' // key: the id of the request answered, as the client sent it; frame: the answer
	busCancel = 'c' // key: the request cancelled; frame: the cancel
	busState  = 's' // key: the revision of the state saved; frame: the state
	busEnded  = 'e' // the client deleted the session
	busResume = 'r' // key: a request stream another instance resumes, for its owner to ring
	busBell   = 'v' // key: a stream; frame: its owner's word (bellLive, bellGone)
)

// busMsg is a message about a session, from another instance.
type busMsg struct {
	kind  byte
	key   string
	frame []byte
}

// sessionsTopic is the topic of the fleet's sessions: one for all of them, so that an
// instance holds one subscription (one connection, on Redis) whatever its sessions.
const sessionsTopic = "httpx/sessions"

// publish sends a message about session id: kind, this instance's tag, the session, key and
// frame, the first four each ended by a newline (none appears in a tag, a session id or a
// JSON id).
func (f *fleet) publish(ctx context.Context, id string, kind byte, key string, frame []byte) error {
	if f.bus == nil {
		return nil
	}
	m := make([]byte, 0, 5+len(f.tag)+len(id)+len(key)+len(frame))
	m = append(m, kind, '\n')
	m = append(m, f.tag...)
	m = append(m, '\n')
	m = append(m, id...)
	m = append(m, '\n')
	m = append(m, key...)
	m = append(m, '\n')
	m = append(m, frame...)
	return f.bus.Publish(ctx, sessionsTopic, m)
}

// parseBusMsg reads a message publish sent; ok is false for one that is malformed or this
// instance's own.
func (f *fleet) parseBusMsg(m []byte) (session string, msg busMsg, ok bool) {
	parts := bytes.SplitN(m, []byte{'\n'}, 5)
	if len(parts) != 5 || len(parts[0]) != 1 || string(parts[1]) == f.tag {
		return "", busMsg{}, false
	}
	return string(parts[2]), busMsg{kind: parts[0][0], key: string(parts[3]), frame: parts[4]}, true
}

// listen hands each session held here what other instances publish about it, until ctx
// ends. It follows the sessions' topic, and follows it again, with backoff, when the bus
// loses it: a message sent meanwhile is missed (an answer is then sent again by its
// client's retry, or its request times out; a state is read with the session's next
// request; a bell is made up for by the follower's polling).
func (f *fleet) listen(ctx context.Context) {
	if f.bus == nil {
		return
	}
	b := backoff.NewExponentialBackOff(backoff.WithMaxElapsedTime(0), backoff.WithMaxInterval(5*time.Second))
	for {
		ch, err := f.bus.Subscribe(ctx, sessionsTopic)
		if err != nil && ctx.Err() == nil {
			f.log.Warn("the fleet's sessions topic could not be followed; answers and cancels from other instances wait until it can", zap.Error(err))
		}
		if err == nil {
			b.Reset()
			for raw := range ch {
				id, m, ok := f.parseBusMsg(raw)
				if !ok {
					continue
				}
				f.host.mu.Lock()
				s := f.host.byID[id]
				f.host.mu.Unlock()
				if s == nil {
					continue // a session this instance does not hold
				}
				// Never waiting on one session's actor, which would hold up every other
				// session's messages: one whose mailbox is full misses this one, as a
				// message the bus lost (see above).
				if s.mailbox.TrySend(m) != nil {
					f.log.Warn("a message from another instance was dropped: the session's actor is behind", zap.String("session", id))
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.NextBackOff()):
		}
	}
}

// The words a stream's owner rings to an instance that follows it (busBell's frame).
const (
	bellLive = "live" // the stream is live here: an event was kept, or more will be
	bellGone = "gone" // the stream has ended here (answered, cancelled), or is not this instance's
)

// bell is a word for an instance that follows a stream, on its way to the bus.
type bell struct{ session, stream, word string }

// ring tells the instance that follows stream of session about it. The actor calls it, so it
// never waits: a bell that finds the queue full is dropped (the follower also looks at the
// store every followPoll).
func (f *fleet) ring(session, stream, word string) {
	select {
	case f.bells <- bell{session, stream, word}:
	default:
	}
}

// ringer publishes the bells until ctx ends.
func (f *fleet) ringer(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-f.bells:
			pctx, cancel := context.WithTimeout(ctx, fleetTimeout)
			if err := f.publish(pctx, b.session, busBell, b.stream, []byte(b.word)); err != nil {
				f.log.Debug("a stream's follower could not be told; it looks again", zap.String("session", b.session), zap.Error(err))
			}
			cancel()
		}
	}
}

// followPoll is how often an instance that follows another's stream looks at the store when
// no bell has rung, and followQuiet how many such looks in a row, with nothing new, end the
// stream: its owner has stopped, or a long request went quiet (the client resumes again).
const (
	followPoll  = time.Second
	followQuiet = 60
)

// follow serves a resumption (a GET with Last-Event-ID) of a request stream that another
// instance of the fleet keeps (MCP 2025-11-25, Transports › Streamable HTTP › Resumability and
// Redelivery): the events kept after seq, then each one the owner keeps, to the answer. The
// owner is asked to ring on each; a stream it no longer runs (answered while the client was
// away, or cancelled), or an owner that does not answer (it has stopped), ends with what the
// store kept.
func (h *MCPHandler) follow(w http.ResponseWriter, r *http.Request, s *session, stream string, seq uint64) {
	f := s.fleet
	rings := make(chan string, 1)
	if !s.listenTo(stream, rings) {
		h.refuse(w, refusedSession, "Not found: the session has ended; initialize again")
		return
	}
	defer s.listenTo(stream, nil)
	ctx := r.Context()
	if err := f.publish(ctx, s.id, busResume, stream, nil); err != nil {
		h.unavailable(w, nil, err)
		return
	}
	word := bellGone // until the owner says it is live
	select {
	case word = <-rings:
	case <-time.After(fleetTimeout):
	case <-ctx.Done():
		return
	}
	var sse *sseWriter
	poll := time.NewTicker(followPoll)
	defer poll.Stop()
	quiet := 0 // polls since the owner last rang
	for {
		frames, ok, err := s.store.After(ctx, s.id, stream, seq)
		if err != nil || !ok {
			if sse == nil {
				h.refuse(w, refusedSession, "Not found: the stream's events after Last-Event-ID are no longer kept; send the request again")
			}
			return
		}
		if sse == nil {
			sse = startSSE(w)
		}
		for _, frame := range frames {
			seq++
			final := jsonrpc.Field(frame, "method") == nil // an answer, not a request or notification of the server's
			if out := h.capAnswer(frame, final); out != nil && sse.eventWithID(out, eventID(stream, seq)) != nil {
				return
			}
			if final {
				return
			}
		}
		if word == bellGone || quiet >= followQuiet {
			return // nothing more will be kept; or the owner has gone silent (it stopped)
		}
		select {
		case word = <-rings:
			quiet = 0
		case <-poll.C:
			quiet++
		case <-ctx.Done():
			return
		case <-s.stopped.Done():
			return // the session ended here (deleted, or this instance is closing)
		}
	}
}
