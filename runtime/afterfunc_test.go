package runtime

import (
	"sync"
	"testing"
	"time"
)

// The context package calls a parent's AfterFunc while holding the new child's lock, and the
// function it passes takes that lock. A request that ended between the child's look at Done
// and that call (a cancel arriving as the handler derives a context with a timeout) must not
// run the function on the caller's goroutine: the handler deadlocked there, its request was
// never answered, and the drain left it behind.
func TestAfterFunc_OfAnEndedRequestDoesNotRunOnTheCallersGoroutine(t *testing.T) {
	e := &entry{}
	e.endCtx(ctxCancelled)
	var childLock sync.Mutex
	ran := make(chan struct{})
	returned := make(chan struct{})
	childLock.Lock()
	go func() {
		defer close(returned)
		stop := e.AfterFunc(func() {
			childLock.Lock()
			childLock.Unlock()
			close(ran)
		})
		if stop() {
			t.Error("stop reported a function it stopped, for a request that had already ended")
		}
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc of an ended request ran its function on the caller's goroutine, which holds the lock the function takes")
	}
	childLock.Unlock()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc of an ended request never ran its function")
	}
}
