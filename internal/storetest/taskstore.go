package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// TaskOptions are the bounds and clock the TaskStore suite asks a store for; zero means the
// store's default.
type TaskOptions struct {
	MaxTasks, MaxPerPrincipal, MaxBytes int
	Now                                 func() time.Time
}

// Tasks is a store under test and how to count what it holds.
type Tasks struct {
	Store mcp.TaskStore
	// Len returns how many tasks the store holds, expired ones not yet dropped included.
	Len func() int
}

// TaskStore runs the TaskStore suite. open returns a new, empty store with opts.
func TaskStore(t *testing.T, open func(t *testing.T, opts TaskOptions) Tasks) {
	t.Run("BoundedInAllAndPerPrincipal", func(t *testing.T) { tasksBounded(t, open) })
	t.Run("TTLExpiryOnItsClock", func(t *testing.T) { tasksExpire(t, open) })
	t.Run("OnlyItsPrincipalSeesATask", func(t *testing.T) { tasksPrincipal(t, open) })
	t.Run("UpdateIsAtomicAndCopies", func(t *testing.T) { tasksUpdate(t, open) })
	t.Run("BoundedInBytes", func(t *testing.T) { tasksBytes(t, open) })
	t.Run("KeepsEveryField", func(t *testing.T) { tasksFields(t, open) })
}

// Clock is a clock the test moves.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at a fixed time.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func task(id, principal string, ttl time.Duration) *mcp.TaskRecord {
	return &mcp.TaskRecord{ID: id, Principal: principal, Status: mcp.TaskWorking, TTL: ttl}
}

func tasksBounded(t *testing.T, open func(*testing.T, TaskOptions) Tasks) {
	clock := NewClock()
	s := open(t, TaskOptions{MaxTasks: 3, MaxPerPrincipal: 2, Now: clock.Now})
	st := s.Store
	ctx := context.Background()
	for _, rec := range []*mcp.TaskRecord{task("a1", "alice", time.Minute), task("a2", "alice", time.Minute)} {
		if err := st.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Create(ctx, task("a3", "alice", time.Minute)); !errors.Is(err, mcp.ErrTaskLimit) {
		t.Errorf("alice's third task: %v, want ErrTaskLimit (2 per principal)", err)
	}
	if err := st.Create(ctx, task("b1", "bob", 2*time.Minute)); err != nil {
		t.Errorf("bob's first task: %v", err)
	}
	if err := st.Create(ctx, task("b2", "bob", time.Minute)); !errors.Is(err, mcp.ErrTaskLimit) {
		t.Errorf("a fourth task: %v, want ErrTaskLimit (3 in all)", err)
	}
	// Expired tasks make room: alice's two expire, bob's does not.
	clock.Advance(time.Minute)
	if err := st.Create(ctx, task("a3", "alice", time.Minute)); err != nil {
		t.Errorf("once alice's tasks expired: %v", err)
	}
	if n := s.Len(); n != 2 {
		t.Errorf("the store holds %d tasks, want 2 (a3, b1)", n)
	}
	if err := st.Create(ctx, task("b1", "bob", time.Minute)); err == nil {
		t.Error("a second task with bob's id was accepted")
	}
}

func tasksExpire(t *testing.T, open func(*testing.T, TaskOptions) Tasks) {
	clock := NewClock()
	s := open(t, TaskOptions{Now: clock.Now})
	st := s.Store
	ctx := context.Background()
	rec := task("t", "", time.Minute)
	if err := st.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if !rec.CreatedAt.Equal(clock.Now()) || !rec.UpdatedAt.Equal(clock.Now()) {
		t.Errorf("Create stamped %v, %v; want the store's clock, %v", rec.CreatedAt, rec.UpdatedAt, clock.Now())
	}
	clock.Advance(time.Minute - time.Millisecond)
	got, err := st.Get(ctx, "", "t")
	if err != nil {
		t.Fatalf("before its TTL: %v", err)
	}
	if got.Status != mcp.TaskWorking {
		t.Errorf("status %q", got.Status)
	}
	clock.Advance(time.Millisecond)
	if _, err := st.Get(ctx, "", "t"); !errors.Is(err, mcp.ErrTaskNotFound) {
		t.Errorf("at its TTL: %v, want ErrTaskNotFound", err)
	}
	if _, err := st.Update(ctx, "", "t", func(*mcp.TaskRecord) bool { return true }); !errors.Is(err, mcp.ErrTaskNotFound) {
		t.Errorf("Update after its TTL: %v, want ErrTaskNotFound", err)
	}
	if n := s.Len(); n != 0 {
		t.Errorf("the expired task is still held (%d)", n)
	}
}

func tasksPrincipal(t *testing.T, open func(*testing.T, TaskOptions) Tasks) {
	st := open(t, TaskOptions{}).Store
	ctx := context.Background()
	if err := st.Create(ctx, task("t", "principal:alice", time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"principal:bob", "", "session:alice"} {
		if _, err := st.Get(ctx, who, "t"); !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Errorf("Get by %q: %v, want ErrTaskNotFound", who, err)
		}
		if _, err := st.Update(ctx, who, "t", func(r *mcp.TaskRecord) bool { r.Status = mcp.TaskCancelled; return true }); !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Errorf("Update by %q: %v, want ErrTaskNotFound", who, err)
		}
	}
	if got, err := st.Get(ctx, "principal:alice", "t"); err != nil || got.Status != mcp.TaskWorking {
		t.Errorf("alice's own task: %+v, %v", got, err)
	}
	if _, err := st.Get(ctx, "principal:alice", "never"); !errors.Is(err, mcp.ErrTaskNotFound) {
		t.Errorf("a task that never existed: %v, want ErrTaskNotFound", err)
	}
}

func tasksUpdate(t *testing.T, open func(*testing.T, TaskOptions) Tasks) {
	clock := NewClock()
	st := open(t, TaskOptions{Now: clock.Now}).Store
	ctx := context.Background()
	st.Create(ctx, task("t", "", time.Hour))
	clock.Advance(time.Second)
	got, err := st.Update(ctx, "", "t", func(r *mcp.TaskRecord) bool {
		r.Status = mcp.TaskInputRequired
		r.InputRequests = map[string]json.RawMessage{"q": json.RawMessage(`{"method":"elicitation/create"}`)}
		r.ID, r.Principal = "other", "mallory" // not the caller's to change
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "t" || got.Principal != "" || !got.UpdatedAt.Equal(clock.Now()) || got.CreatedAt.Equal(got.UpdatedAt) {
		t.Errorf("after Update: %+v", got)
	}
	got.InputRequests["x"] = nil // a copy: the store's record does not change
	again, _ := st.Get(ctx, "", "t")
	if len(again.InputRequests) != 1 {
		t.Errorf("the store's record changed through a copy: %v", again.InputRequests)
	}
	clock.Advance(time.Second)
	same, _ := st.Update(ctx, "", "t", func(r *mcp.TaskRecord) bool { r.Status = mcp.TaskFailed; return false })
	if same.Status != mcp.TaskInputRequired || !same.UpdatedAt.Equal(again.UpdatedAt) {
		t.Errorf("fn returned false but the task changed: %+v", same)
	}
	// Concurrent updates are serialised: none is lost.
	st.Update(ctx, "", "t", func(r *mcp.TaskRecord) bool { r.Answers = map[string]json.RawMessage{}; return true })
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if _, err := st.Update(ctx, "", "t", func(r *mcp.TaskRecord) bool {
				r.Answers[string(rune('A'+i))] = json.RawMessage(`1`)
				return true
			}); err != nil {
				t.Errorf("a concurrent Update: %v", err)
			}
		})
	}
	wg.Wait()
	if final, _ := st.Get(ctx, "", "t"); len(final.Answers) != 50 {
		t.Errorf("%d answers kept of 50", len(final.Answers))
	}
}

func tasksBytes(t *testing.T, open func(*testing.T, TaskOptions) Tasks) {
	clock := NewClock()
	st := open(t, TaskOptions{MaxBytes: 100, Now: clock.Now}).Store
	ctx := context.Background()
	st.Create(ctx, task("a", "", time.Minute))
	st.Create(ctx, task("b", "", 2*time.Minute))
	big := json.RawMessage(`"` + strings.Repeat("x", 60) + `"`)
	if _, err := st.Update(ctx, "", "a", func(r *mcp.TaskRecord) bool { r.Result = big; return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, "", "b", func(r *mcp.TaskRecord) bool { r.Result = big; return true }); !errors.Is(err, mcp.ErrTaskLimit) {
		t.Errorf("a result past MaxBytes: %v, want ErrTaskLimit", err)
	}
	if got, _ := st.Get(ctx, "", "b"); got.Result != nil {
		t.Errorf("the refused update was kept: %s", got.Result)
	}
	clock.Advance(time.Minute) // a expires, and its bytes with it
	if _, err := st.Update(ctx, "", "b", func(r *mcp.TaskRecord) bool { r.Result = big; return true }); err != nil {
		t.Errorf("once a has expired: %v", err)
	}
	if err := st.Create(ctx, &mcp.TaskRecord{ID: "c", TTL: time.Minute, Result: big}); !errors.Is(err, mcp.ErrTaskLimit) {
		t.Errorf("a new task past MaxBytes: %v", err)
	}
}

// tasksFields: every field of a record comes back as it was kept (an error's Data as its JSON
// decoding would give it, which a store that encodes records cannot do better than).
func tasksFields(t *testing.T, open func(*testing.T, TaskOptions) Tasks) {
	clock := NewClock()
	st := open(t, TaskOptions{Now: clock.Now}).Store
	ctx := context.Background()
	rec := &mcp.TaskRecord{ID: "t", Principal: "principal:p", Status: mcp.TaskWorking, StatusMessage: "starting",
		TTL: time.Hour, PollInterval: 1500 * time.Millisecond,
		InputRequests: map[string]json.RawMessage{"q1": json.RawMessage(`{"method":"elicitation/create","params":{}}`)}}
	if err := st.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	created := clock.Now()
	clock.Advance(time.Second)
	wantErr := &jsonrpc.Error{Code: -32603, Message: "it broke", Data: map[string]any{"why": "a test"}}
	_, err := st.Update(ctx, "principal:p", "t", func(r *mcp.TaskRecord) bool {
		r.Status = mcp.TaskFailed
		r.StatusMessage = "failed: it broke"
		r.Result = json.RawMessage(`{"content": [{"type":"text","text":"<é>\u0000"}]}`)
		r.Error = wantErr
		r.InputRequests = nil
		r.Answers = map[string]json.RawMessage{"q1": json.RawMessage(`{"action":"accept"}`)}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, "principal:p", "t")
	if err != nil {
		t.Fatal(err)
	}
	want := &mcp.TaskRecord{ID: "t", Principal: "principal:p", Status: mcp.TaskFailed, StatusMessage: "failed: it broke",
		CreatedAt: created, UpdatedAt: clock.Now(), TTL: time.Hour, PollInterval: 1500 * time.Millisecond,
		Result: json.RawMessage(`{"content": [{"type":"text","text":"<é>\u0000"}]}`), Error: wantErr,
		Answers: map[string]json.RawMessage{"q1": json.RawMessage(`{"action":"accept"}`)}}
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("stamps %v, %v; want %v, %v", got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
	got.CreatedAt, got.UpdatedAt = want.CreatedAt, want.UpdatedAt
	if len(got.InputRequests) == 0 {
		got.InputRequests = nil // nil and empty are the same record
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kept %+v\nwant %+v", got, want)
	}
}
