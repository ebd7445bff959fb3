package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/relayrt/relay/jsonrpc"
)

// TaskStatus is where a task is in its life (io.modelcontextprotocol/tasks).
type TaskStatus string

// The statuses of a task. Completed, failed and cancelled are terminal: a task in one of them
// never changes again.
const (
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether the status is final.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// TaskRecord is the state of one task as a TaskStore keeps it: plain data, so that a store
// may write it anywhere. What runs the task (its goroutine, its cancellation) is the
// server's and is not in it.
type TaskRecord struct {
	// ID is the task's id: random, unguessable, and shown only to Principal.
	ID string
	// Principal is who made the task (see TaskPrincipal); only it can see the task.
	Principal string
	// Status is where the task is; a terminal status never changes again.
	Status TaskStatus
	// StatusMessage says more about the status, for people (optional).
	StatusMessage string
	// CreatedAt and UpdatedAt are stamped by the store.
	CreatedAt, UpdatedAt time.Time
	// TTL is how long after CreatedAt the task is kept; the store forgets it then.
	TTL time.Duration
	// PollInterval is how often the client is asked to poll.
	PollInterval time.Duration
	// Result is the tool's result, encoded, once the task is completed.
	Result json.RawMessage
	// Error is the JSON-RPC error the task failed with.
	Error *jsonrpc.Error
	// InputRequests are the questions to the client still unanswered, by key, each an
	// encoded {"method","params"}; not empty while the status is input_required.
	InputRequests map[string]json.RawMessage
	// Answers are the client's answers so far, by the key of their question.
	Answers map[string]json.RawMessage
}

// clone returns a copy of t that shares nothing mutable with it.
func (t *TaskRecord) clone() *TaskRecord {
	c := *t
	c.InputRequests = maps.Clone(t.InputRequests)
	c.Answers = maps.Clone(t.Answers)
	if t.Error != nil {
		e := *t.Error
		c.Error = &e
	}
	return &c
}

// ErrTaskNotFound is what a TaskStore returns for a task it does not have for the caller: one
// that never existed, has expired, or belongs to another principal. The three are not told
// apart, so that a caller learns nothing of others' tasks.
var ErrTaskNotFound = errors.New("mcp: no such task: it never existed, has expired, or belongs to another caller")

// ErrTaskLimit is what a TaskStore returns when it holds as many tasks, or as many bytes of
// their results, questions and answers, as it may: retry once some have expired.
var ErrTaskLimit = errors.New("mcp: the task store is full; retry once earlier tasks have expired")

// TaskStore keeps the state of tasks. The server writes a task's record as it changes and
// reads it for tasks/get; the store decides how long records live (TTL) and how many there may
// be. Implementations must be safe for concurrent use. NewMemoryTaskStore is the default; a
// store shared by several server processes lets any of them answer tasks/get, though a task
// still runs in the process that made it.
type TaskStore interface {
	// Create stores a new task, stamping CreatedAt and UpdatedAt. It fails with an error
	// wrapping ErrTaskLimit when the store is full, in all or for t.Principal; Update does
	// too when what fn made does not fit.
	Create(ctx context.Context, t *TaskRecord) error
	// Get returns a copy of the task id if principal made it and it has not expired, or an
	// error wrapping ErrTaskNotFound.
	Get(ctx context.Context, principal, id string) (*TaskRecord, error)
	// Update changes the task id as Get finds it: fn changes the record and returns true, and
	// the store stamps UpdatedAt and keeps it; or fn returns false and nothing changes. It
	// returns a copy of the task as it is afterwards. fn must be quick and call nothing else:
	// a memory store runs it under its lock; a shared one (package fleet's) may run it more
	// than once, on a fresh copy each time, until its change lands on the task as it was read,
	// so that only what fn's last run decided holds.
	Update(ctx context.Context, principal, id string, fn func(t *TaskRecord) bool) (*TaskRecord, error)
}

// MemoryTaskStoreOptions bounds a memory task store. The zero value is ready to use.
type MemoryTaskStoreOptions struct {
	// MaxTasks bounds the tasks kept at once, expired ones not counted (default 1024).
	MaxTasks int
	// MaxPerPrincipal bounds the tasks one principal may have at once (default 256). Callers
	// without authentication share one principal (see TaskPrincipal), and this bound.
	MaxPerPrincipal int
	// MaxBytes bounds the bytes of results, questions and answers kept, in all (default 64
	// MiB): the tasks' own fields take little, but a result may be large.
	MaxBytes int
	// Now is the clock (default time.Now); tests set it to move time.
	Now func() time.Time
}

// MemoryTaskStore keeps tasks in memory, bounded in number, each for its TTL. Expired tasks
// are dropped when they are next looked at and whenever room is needed, so the store needs
// no goroutine of its own.
type MemoryTaskStore struct {
	opts MemoryTaskStoreOptions

	mu          sync.Mutex
	tasks       map[string]*TaskRecord
	byPrincipal map[string]int
	bytes       int // sizeOf every task kept
}

// NewMemoryTaskStore returns an empty memory store. opts may be nil.
func NewMemoryTaskStore(opts *MemoryTaskStoreOptions) *MemoryTaskStore {
	m := &MemoryTaskStore{tasks: map[string]*TaskRecord{}, byPrincipal: map[string]int{}}
	if opts != nil {
		m.opts = *opts
	}
	if m.opts.MaxTasks <= 0 {
		m.opts.MaxTasks = 1024
	}
	if m.opts.MaxPerPrincipal <= 0 {
		m.opts.MaxPerPrincipal = 256
	}
	if m.opts.MaxBytes <= 0 {
		m.opts.MaxBytes = 64 << 20
	}
	if m.opts.Now == nil {
		m.opts.Now = time.Now
	}
	return m
}

// Create implements TaskStore.
func (m *MemoryTaskStore) Create(_ context.Context, t *TaskRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.opts.Now()
	if _, dup := m.tasks[t.ID]; dup {
		return errors.New("mcp: a task with this id exists already; draw another id")
	}
	size := sizeOf(t)
	full := func() bool {
		return len(m.tasks) >= m.opts.MaxTasks || m.byPrincipal[t.Principal] >= m.opts.MaxPerPrincipal ||
			m.bytes+size > m.opts.MaxBytes
	}
	if full() {
		m.sweep(now)
	}
	if full() {
		return ErrTaskLimit
	}
	rec := t.clone()
	rec.CreatedAt, rec.UpdatedAt = now, now
	t.CreatedAt, t.UpdatedAt = now, now
	m.tasks[rec.ID] = rec
	m.byPrincipal[rec.Principal]++
	m.bytes += size
	return nil
}

// Get implements TaskStore.
func (m *MemoryTaskStore) Get(_ context.Context, principal, id string) (*TaskRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.find(principal, id, m.opts.Now())
	if rec == nil {
		return nil, ErrTaskNotFound
	}
	return rec.clone(), nil
}

// Update implements TaskStore.
func (m *MemoryTaskStore) Update(_ context.Context, principal, id string, fn func(t *TaskRecord) bool) (*TaskRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.opts.Now()
	rec := m.find(principal, id, now)
	if rec == nil {
		return nil, ErrTaskNotFound
	}
	next := rec.clone()
	if fn(next) {
		next.ID, next.Principal, next.CreatedAt, next.UpdatedAt = rec.ID, rec.Principal, rec.CreatedAt, now
		grow := sizeOf(next) - sizeOf(rec)
		if grow > 0 && m.bytes+grow > m.opts.MaxBytes {
			m.sweep(now)
			if m.tasks[id] == nil || m.bytes+grow > m.opts.MaxBytes {
				return nil, ErrTaskLimit
			}
		}
		m.tasks[id] = next
		m.bytes += grow
		rec = next
	}
	return rec.clone(), nil
}

// Len returns how many tasks the store holds, expired ones not yet dropped included.
func (m *MemoryTaskStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tasks)
}

// find returns the live task id of principal, dropping it if it has expired.
func (m *MemoryTaskStore) find(principal, id string, now time.Time) *TaskRecord {
	rec := m.tasks[id]
	if rec == nil || rec.Principal != principal {
		return nil
	}
	if expired(rec, now) {
		m.drop(rec)
		return nil
	}
	return rec
}

// sweep drops every expired task.
func (m *MemoryTaskStore) sweep(now time.Time) {
	for _, rec := range m.tasks {
		if expired(rec, now) {
			m.drop(rec)
		}
	}
}

func (m *MemoryTaskStore) drop(rec *TaskRecord) {
	delete(m.tasks, rec.ID)
	m.bytes -= sizeOf(rec)
	if m.byPrincipal[rec.Principal]--; m.byPrincipal[rec.Principal] <= 0 {
		delete(m.byPrincipal, rec.Principal)
	}
}

// sizeOf is what a task costs the store beyond its fixed fields: its result, error, questions
// and answers.
func sizeOf(t *TaskRecord) int {
	n := len(t.Result) + len(t.StatusMessage)
	if t.Error != nil {
		n += len(t.Error.Message) + 64 // its data, roughly
	}
	for k, v := range t.InputRequests {
		n += len(k) + len(v)
	}
	for k, v := range t.Answers {
		n += len(k) + len(v)
	}
	return n
}

func expired(rec *TaskRecord, now time.Time) bool {
	return rec.TTL > 0 && !now.Before(rec.CreatedAt.Add(rec.TTL))
}
