package httpx

import (
	"context"
	"sync"
	"time"
)

// EventStore keeps the events sent on the SSE streams of HTTP sessions, so that a client
// whose stream broke, or that the server closed (MCPOptions.PollAfter), resumes it with a GET
// and Last-Event-ID and misses nothing (MCP 2025-11-25, Transports › Streamable HTTP ›
// Resumability and Redelivery). A stream is named within its session; its events are numbered
// from 1 in the order they were sent.
//
// The session's actor calls Append for every event as it routes it, so Append must be quick.
// NewMemoryEventStore is the default; a store shared by several instances (so that any of
// them can resume any session's stream) implements the same interface.
type EventStore interface {
	// Append keeps frame as event seq of stream in session.
	Append(ctx context.Context, session, stream string, seq uint64, frame []byte) error
	// After returns the events of stream in session numbered above seq, in order. ok is
	// false when the store does not have every one of them (it never had them, or let
	// them go): the stream cannot be resumed from seq.
	After(ctx context.Context, session, stream string, seq uint64) (frames [][]byte, ok bool, err error)
	// Forget lets go of everything kept for session: it has ended.
	Forget(ctx context.Context, session string) error
}

// MemoryEventStore is an EventStore in this process's memory, bounded in events, bytes and
// age across all sessions: past a bound, the oldest events go first.
type MemoryEventStore struct {
	maxEvents, maxBytes int
	maxAge              time.Duration
	now                 func() time.Time

	mu       sync.Mutex
	streams  map[streamKey]*memStream
	sessions map[string]map[string]bool // each session's streams with events kept, for Forget
	fifo     []*memEvent                // the events, oldest first, from head on; forgotten ones wait to be popped
	head     int
	events   int // events kept, forgotten ones apart
	bytes    int // and their bytes
}

type streamKey struct{ session, stream string }

type memStream struct{ events []*memEvent } // in order of seq, none missing

type memEvent struct {
	key   streamKey
	seq   uint64
	frame []byte
	at    time.Time
	gone  bool // forgotten with its session
}

// Defaults of NewMemoryEventStore's bounds.
const (
	DefaultEventStoreEvents = 100_000
	DefaultEventStoreBytes  = 64 << 20
	DefaultEventStoreAge    = 5 * time.Minute
)

// NewMemoryEventStore returns a store that keeps at most maxEvents events, maxBytes bytes of
// them and none older than maxAge (zero or less: the defaults, 100,000 events, 64 MiB, 5
// minutes).
func NewMemoryEventStore(maxEvents, maxBytes int, maxAge time.Duration) *MemoryEventStore {
	if maxEvents <= 0 {
		maxEvents = DefaultEventStoreEvents
	}
	if maxBytes <= 0 {
		maxBytes = DefaultEventStoreBytes
	}
	if maxAge <= 0 {
		maxAge = DefaultEventStoreAge
	}
	return &MemoryEventStore{maxEvents: maxEvents, maxBytes: maxBytes, maxAge: maxAge, now: time.Now,
		streams: map[streamKey]*memStream{}, sessions: map[string]map[string]bool{}}
}

// Append implements EventStore. The frame is kept as it is: the caller must not change it.
func (m *MemoryEventStore) Append(_ context.Context, session, stream string, seq uint64, frame []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := streamKey{session, stream}
	st := m.streams[k]
	if st == nil {
		st = &memStream{}
		m.streams[k] = st
		if m.sessions[session] == nil {
			m.sessions[session] = map[string]bool{}
		}
		m.sessions[session][stream] = true
	}
	if n := len(st.events); n > 0 && st.events[n-1].seq+1 != seq {
		m.drop(st.events) // a gap: what came before can no longer be replayed whole
		st.events = nil
	}
	e := &memEvent{key: k, seq: seq, frame: frame, at: m.now()}
	st.events = append(st.events, e)
	m.fifo = append(m.fifo, e)
	m.events++
	m.bytes += len(frame)
	m.trim()
	return nil
}

// After implements EventStore.
func (m *MemoryEventStore) After(_ context.Context, session, stream string, seq uint64) ([][]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trim()
	st := m.streams[streamKey{session, stream}]
	if st == nil || len(st.events) == 0 || st.events[0].seq > seq+1 {
		return nil, false, nil
	}
	var frames [][]byte
	for _, e := range st.events {
		if e.seq > seq {
			frames = append(frames, e.frame)
		}
	}
	return frames, true, nil
}

// Forget implements EventStore.
func (m *MemoryEventStore) Forget(_ context.Context, session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for stream := range m.sessions[session] {
		k := streamKey{session, stream}
		if st := m.streams[k]; st != nil {
			m.drop(st.events)
			delete(m.streams, k)
		}
	}
	delete(m.sessions, session)
	m.trim()
	return nil
}

// drop stops counting events that are let go before their turn in fifo.
func (m *MemoryEventStore) drop(events []*memEvent) {
	for _, e := range events {
		if !e.gone {
			e.gone = true
			m.events--
			m.bytes -= len(e.frame)
		}
	}
}

// trim lets the oldest events go until every bound holds.
func (m *MemoryEventStore) trim() {
	cutoff := m.now().Add(-m.maxAge)
	for m.head < len(m.fifo) {
		e := m.fifo[m.head]
		if !e.gone && m.events <= m.maxEvents && m.bytes <= m.maxBytes && e.at.After(cutoff) {
			break
		}
		m.fifo[m.head] = nil
		m.head++
		if e.gone {
			continue // counted out already
		}
		e.gone = true
		m.events--
		m.bytes -= len(e.frame)
		if st := m.streams[e.key]; st != nil && len(st.events) > 0 && st.events[0] == e {
			st.events[0] = nil
			st.events = st.events[1:]
			if len(st.events) == 0 {
				delete(m.streams, e.key)
				if delete(m.sessions[e.key.session], e.key.stream); len(m.sessions[e.key.session]) == 0 {
					delete(m.sessions, e.key.session)
				}
			}
		}
	}
	if m.head > 1024 && m.head*2 > len(m.fifo) { // let the array's dead front go
		m.fifo = append([]*memEvent(nil), m.fifo[m.head:]...)
		m.head = 0
	}
}
