package httpx

import (
	"context"
	"strconv"
	"strings"

	"github.com/relayrt/relay/runtime"
)

// keptStreams is a session actor's record of the SSE streams whose events its store keeps for
// resumption (EventStore): which stream each request's frames go on, and the number of each
// stream's last event. A request's stream ("p1", "p2", ...) starts with its first frame
// before the answer, if its POST takes a stream, and ends with the answer; the session's GET
// stream ("g") starts when a GET stream is first opened, and its numbers go on across GETs.
// An event's id is the stream's name, a dot, and its number; a stream's priming event is
// numbered as the event before its first. Only the actor uses it.
//
// In a fleet, where every instance keeps its replica's events in one store, a stream's name
// starts with the instance's tag and a dash ("a1-p3", "a1-g"), so that names never clash and
// a resumption that lands on another instance knows whose the stream is (fleet.go).
type keptStreams struct {
	s      *session
	prefix string                 // fleet: this instance's tag and a dash
	remote map[string]bool        // fleet: streams followed from another instance, told of each event
	sse    map[string]bool        // requests whose POST takes a stream that has not started yet
	live   map[string]*keptStream // by request key
	names  map[string]string      // a live request stream's name → its request key
	next   int
	get    *keptStream // the GET stream, once one was opened
	// cancelled names the latest request streams whose requests were cancelled: owed no
	// answer, a resumption of one has nothing to wait for (the official TypeScript client
	// resumes a stream it cancelled). Bounded: the oldest names go first.
	cancelled     map[string]bool
	cancelledList []string
}

// keptCancelled bounds keptStreams.cancelled.
const keptCancelled = 256

type keptStream struct {
	name string
	seq  uint64 // the last event's number
}

func newKeptStreams(s *session) *keptStreams {
	k := &keptStreams{s: s, sse: map[string]bool{}, live: map[string]*keptStream{}, names: map[string]string{},
		cancelled: map[string]bool{}}
	if s.fleet != nil {
		k.prefix, k.remote = s.fleet.tag+"-", map[string]bool{}
	}
	return k
}

// eventID names event seq of stream.
func eventID(stream string, seq uint64) string { return stream + "." + strconv.FormatUint(seq, 10) }

// parseEventID reads an id eventID made.
func parseEventID(id string) (stream string, seq uint64, ok bool) {
	i := strings.LastIndexByte(id, '.')
	if i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(id[i+1:], 10, 64)
	return id[:i], seq, err == nil
}

// post notes a request whose POST takes a stream (sse).
func (k *keptStreams) post(key string, sse bool) {
	if k.s.store != nil && sse {
		k.sse[key] = true
	}
}

// request numbers and keeps o, a frame of request key, if it goes on a kept stream.
func (k *keptStreams) request(key string, o runtime.Outbound) runtime.Outbound {
	if k.s.store == nil {
		return o
	}
	st := k.live[key]
	if st == nil && k.sse[key] && !o.Final {
		k.begin(key)
		st = k.live[key]
	}
	if st != nil {
		o = k.keep(st, o)
	}
	if o.Final {
		k.end(key, false)
	}
	return o
}

// start starts request key's stream, if its POST takes one and it has not started, and
// returns the id to prime the POST with: the stream's very start, since the POST has written
// nothing yet (frames already routed to it may still be on their way, and are kept: resumed
// from the start, the client misses none). "" when nothing is kept for it.
func (k *keptStreams) start(key string) string {
	if st := k.live[key]; st != nil {
		return eventID(st.name, 0)
	}
	if !k.sse[key] {
		return ""
	}
	k.begin(key)
	return eventID(k.live[key].name, 0)
}

// begin starts request key's stream.
func (k *keptStreams) begin(key string) {
	k.next++
	st := &keptStream{name: k.prefix + "p" + strconv.Itoa(k.next)}
	k.live[key], k.names[st.name] = st, key
	delete(k.sse, key)
	k.s.resumable.Store(int32(len(k.live)))
}

// end forgets that request key runs: it was answered, or (cancelled) ended with no answer.
// What its stream sent stays in the store, for a client that resumes it late.
func (k *keptStreams) end(key string, cancelled bool) {
	delete(k.sse, key)
	st := k.live[key]
	if st == nil {
		return
	}
	delete(k.live, key)
	delete(k.names, st.name)
	k.s.resumable.Store(int32(len(k.live)))
	if k.remote[st.name] {
		delete(k.remote, st.name)
		k.s.fleet.ring(k.s.id, st.name, bellGone)
	}
	if cancelled {
		if len(k.cancelledList) == keptCancelled {
			delete(k.cancelled, k.cancelledList[0])
			k.cancelledList = k.cancelledList[1:]
		}
		k.cancelled[st.name] = true
		k.cancelledList = append(k.cancelledList, st.name)
	}
}

// session numbers and keeps o, a frame of the session's own (for the GET stream), once a GET
// stream has been opened.
func (k *keptStreams) session(o runtime.Outbound) runtime.Outbound {
	if k.get == nil {
		return o
	}
	return k.keep(k.get, o)
}

func (k *keptStreams) keep(st *keptStream, o runtime.Outbound) runtime.Outbound {
	st.seq++
	o.Event = eventID(st.name, st.seq)
	k.s.store.Append(context.Background(), k.s.id, st.name, st.seq, o.Frame)
	if k.remote[st.name] {
		k.s.fleet.ring(k.s.id, st.name, bellLive)
	}
	return o
}

// listen starts the GET stream's record if need be and returns the id a new GET stream is
// primed with ("" when nothing is kept).
func (k *keptStreams) listen() string {
	if k.s.store == nil {
		return ""
	}
	if k.get == nil {
		k.get = &keptStream{name: k.prefix + "g"}
	}
	return eventID(k.get.name, k.get.seq)
}

// followed answers another instance that follows stream, a request stream of this one's
// (fleet): from now on each of its events rings, and its end; a stream not live here rings
// its end at once.
func (k *keptStreams) followed(stream string) {
	if !strings.HasPrefix(stream, k.prefix) {
		return // another instance's: it answers
	}
	if k.names[stream] == "" {
		k.s.fleet.ring(k.s.id, stream, bellGone)
		return
	}
	k.remote[stream] = true
	k.s.fleet.ring(k.s.id, stream, bellLive)
}

// resume answers a resumption of stream after event seq, and returns the key of the request
// whose stream it is while that is live ("" for the GET stream, or one that has ended).
func (k *keptStreams) resume(stream string, seq uint64) (resumed, string) {
	if k.s.store == nil {
		return resumed{}, ""
	}
	if k.s.fleet != nil && !strings.HasPrefix(stream, k.prefix) {
		return k.resumeForeign(stream, seq)
	}
	var st *keptStream
	key := ""
	if stream == k.prefix+"g" {
		st = k.get
	} else if key = k.names[stream]; key != "" {
		st = k.live[key]
	}
	switch {
	case st != nil && seq == st.seq:
		return resumed{ok: true, live: true}, key // nothing missed
	case st != nil && seq > st.seq:
		return resumed{}, ""
	case st == nil && stream == k.prefix+"g":
		return resumed{}, ""
	}
	frames, ok, err := k.s.store.After(context.Background(), k.s.id, stream, seq)
	switch {
	case k.cancelled[stream] && (err != nil || !ok):
		return resumed{ok: true}, "" // cancelled, and what it sent is gone: nothing is owed
	case err != nil || !ok:
		return resumed{}, "" // not kept (never, or no longer): the client sends its request again
	}
	r := resumed{ok: true, live: st != nil}
	for i, f := range frames {
		r.events = append(r.events, runtime.Outbound{Frame: f, Event: eventID(stream, seq+1+uint64(i))})
	}
	if st == nil && len(r.events) > 0 && !k.cancelled[stream] { // an answered stream: its last event is the answer
		r.events[len(r.events)-1].Final = true
	}
	return r, key
}

// resumeForeign answers a resumption of another instance's stream (fleet). A request's
// stream is followed where it is (remote: see fleet.follow); the GET stream's events kept
// since are sent, and then this instance's own (it holds the session's GET stream now).
func (k *keptStreams) resumeForeign(stream string, seq uint64) (resumed, string) {
	if isRequestStream(stream) {
		return resumed{ok: true, remote: true}, ""
	}
	if !strings.HasSuffix(stream, "-g") {
		return resumed{}, "" // no stream of this server's
	}
	frames, ok, err := k.s.store.After(context.Background(), k.s.id, stream, seq)
	if err != nil || !ok {
		return resumed{}, ""
	}
	r := resumed{ok: true, live: true}
	for i, f := range frames {
		r.events = append(r.events, runtime.Outbound{Frame: f, Event: eventID(stream, seq+1+uint64(i))})
	}
	k.listen()
	return r, ""
}

// isRequestStream reports whether stream is named as a fleet's request streams are:
// tag-pN.
func isRequestStream(stream string) bool {
	_, n, ok := strings.Cut(stream, "-p")
	if !ok || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 64)
	return err == nil
}

// forget lets the store go of the session: it has ended. In a fleet the session lives on
// the other instances: the store lets go of it when the client deletes it (fleet.deleted).
func (k *keptStreams) forget() {
	if k.s.store != nil && k.s.fleet == nil {
		k.s.store.Forget(context.Background(), k.s.id)
	}
}

// startStream asks the actor to start request key's kept stream (see startMsg).
func (s *session) startStream(key string) string {
	m := startMsg{key: key, ack: make(chan string, 1)}
	id, _ := ask(s, m, m.ack) // "" if the session has ended
	return id
}

// resume asks the actor to resume stream after event seq (see resumeMsg).
func (s *session) resume(stream string, seq uint64) (*waiter, resumed) {
	m := resumeMsg{stream: stream, seq: seq, w: newWaiter(), ack: make(chan resumed, 1)}
	r, ok := ask(s, m, m.ack)
	if !ok {
		return nil, resumed{}
	}
	return m.w, r
}
