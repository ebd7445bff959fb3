package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)} }

func task(id, principal string, ttl time.Duration) *mcp.TaskRecord {
	return &mcp.TaskRecord{ID: id, Principal: principal, Status: mcp.TaskWorking, TTL: ttl}
}

func TestMemoryTaskStore_BoundedInAllAndPerPrincipal(t *testing.T) {
	clock := newClock()
	st := mcp.NewMemoryTaskStore(&mcp.MemoryTaskStoreOptions{MaxTasks: 3, MaxPerPrincipal: 2, Now: clock.Now})
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
	if n := st.Len(); n != 2 {
		t.Errorf("the store holds %d tasks, want 2 (a3, b1)", n)
	}
	if err := st.Create(ctx, task("b1", "bob", time.Minute)); err == nil {
		t.Error("a second task with bob's id was accepted")
	}
}

func TestMemoryTaskStore_TTLExpiryOnItsClock(t *testing.T) {
	clock := newClock()
	st := mcp.NewMemoryTaskStore(&mcp.MemoryTaskStoreOptions{Now: clock.Now})
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
	if n := st.Len(); n != 0 {
		t.Errorf("the expired task is still held (%d)", n)
	}
}

func TestMemoryTaskStore_OnlyItsPrincipalSeesATask(t *testing.T) {
	st := mcp.NewMemoryTaskStore(nil)
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
}

func TestMemoryTaskStore_UpdateIsAtomicAndCopies(t *testing.T) {
	clock := newClock()
	st := mcp.NewMemoryTaskStore(&mcp.MemoryTaskStoreOptions{Now: clock.Now})
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
			st.Update(ctx, "", "t", func(r *mcp.TaskRecord) bool {
				r.Answers[string(rune('A'+i))] = json.RawMessage(`1`)
				return true
			})
		})
	}
	wg.Wait()
	if final, _ := st.Get(ctx, "", "t"); len(final.Answers) != 50 {
		t.Errorf("%d answers kept of 50", len(final.Answers))
	}
}

func TestTaskStatus_Terminal(t *testing.T) {
	for s, want := range map[mcp.TaskStatus]bool{mcp.TaskWorking: false, mcp.TaskInputRequired: false,
		mcp.TaskCompleted: true, mcp.TaskFailed: true, mcp.TaskCancelled: true} {
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v", s, !want)
		}
	}
}

func TestMemoryTaskStore_BoundedInBytes(t *testing.T) {
	clock := newClock()
	st := mcp.NewMemoryTaskStore(&mcp.MemoryTaskStoreOptions{MaxBytes: 100, Now: clock.Now})
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
