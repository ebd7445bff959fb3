package httpx

import (
	"context"
	"sync"
	"time"
)

// SessionStore keeps the initialize-generation sessions of a fleet (several instances of one
// server behind a load balancer), so that any instance serves any session's requests: the
// instance that opened a session keeps its record here, and one that gets a request of a
// session it does not hold takes the session up from its record (MCPOptions.SessionStore).
// A record is opaque to the store: who owns the session, and what its protocol negotiated and
// the client set since (the version, the client's capabilities, the log level, the
// subscriptions). Each is numbered, its revision, and replaces only the one before it: of
// two instances that change a session at the same moment, one fails and its client retries,
// and a record deleted is never written back.
//
// NewMemorySessionStore keeps records in this process (instances that share one handler's
// process, and tests); package fleet's keeps them on Redis.
type SessionStore interface {
	// Put keeps record as revision rev of session id's, for ttl, if the store's record of
	// the session is revision rev-1 (for rev 1: if it has none). Otherwise ok is false and
	// nothing changes: another instance kept a revision first, or the session has ended.
	Put(ctx context.Context, id string, rev uint64, record []byte, ttl time.Duration) (ok bool, err error)
	// Get returns session id's record and keeps it for ttl more; a nil record (and no error)
	// when there is none: the session ended, expired or never existed.
	Get(ctx context.Context, id string, ttl time.Duration) ([]byte, error)
	// Delete forgets session id: the client ended it.
	Delete(ctx context.Context, id string) error
}

// MemorySessionStore is a SessionStore in this process's memory. Expired records are dropped
// when next looked at, and by a sweep whenever the records have doubled since the last one.
type MemorySessionStore struct {
	now func() time.Time

	mu      sync.Mutex
	records map[string]memRecord
	sweepAt int // the count of records at which Put drops the expired ones
}

type memRecord struct {
	rev     uint64
	record  []byte
	expires time.Time
}

// NewMemorySessionStore returns an empty store.
func NewMemorySessionStore() *MemorySessionStore {
	return &MemorySessionStore{now: time.Now, records: map[string]memRecord{}}
}

// Put implements SessionStore.
func (m *MemorySessionStore) Put(_ context.Context, id string, rev uint64, record []byte, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var have uint64 // 0: none
	if r, ok := m.records[id]; ok && r.expires.After(now) {
		have = r.rev
	}
	if rev == 0 || have != rev-1 {
		return false, nil
	}
	m.records[id] = memRecord{rev: rev, record: append([]byte(nil), record...), expires: now.Add(ttl)}
	if len(m.records) >= m.sweepAt { // amortised: the table has doubled since the last sweep
		for k, r := range m.records {
			if !r.expires.After(now) {
				delete(m.records, k)
			}
		}
		m.sweepAt = max(2*len(m.records), 64)
	}
	return true, nil
}

// Get implements SessionStore.
func (m *MemorySessionStore) Get(_ context.Context, id string, ttl time.Duration) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	r, ok := m.records[id]
	if !ok {
		return nil, nil
	}
	if !r.expires.After(now) {
		delete(m.records, id)
		return nil, nil
	}
	r.expires = now.Add(ttl)
	m.records[id] = r
	return append([]byte(nil), r.record...), nil
}

// Delete implements SessionStore.
func (m *MemorySessionStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.records, id)
	return nil
}
