package runtime_test

import (
	"context"
	"errors"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// continued returns a handler whose first part records that it ran and whose continuation
// does what rest does, with the handler's context.
func continued(first chan<- struct{}, rest func(ctx context.Context) (any, error)) runtime.Handler {
	return func(ctx context.Context, r *runtime.Request) (any, error) {
		if first != nil {
			first <- struct{}{}
		}
		return runtime.Continuation(func() (any, error) { return rest(ctx) }), nil
	}
}

func TestContinuation_AnsweredAsTheHandlerWouldBe(t *testing.T) {
	release := make(chan struct{})
	c := dial(t, profile(map[string]runtime.Handler{
		"wait": continued(nil, func(ctx context.Context) (any, error) {
			<-release
			return map[string]string{"waited": "yes"}, nil
		}),
		"fail":  continued(nil, func(context.Context) (any, error) { return nil, jsonrpc.Errorf(-32042, "no") }),
		"panic": continued(nil, func(context.Context) (any, error) { panic("in the continuation") }),
		"again": continued(nil, func(context.Context) (any, error) {
			return runtime.Continuation(func() (any, error) { return "second part", nil }), nil
		}),
	}, false))
	c.send(req(1, "wait"), req(2, "fail"), req(3, "panic"), req(4, "again"))
	got := map[string]map[string][]byte{}
	for range 3 {
		m := c.next()
		got[string(m["id"])] = map[string][]byte{"result": m["result"], "error": m["error"]}
	}
	if e := string(got["2"]["error"]); !strings.Contains(e, "-32042") {
		t.Errorf("a continuation's error: want -32042, got %s", e)
	}
	if e := string(got["3"]["error"]); !strings.Contains(e, "-32603") {
		t.Errorf("a continuation's panic: want an internal error, got %s", e)
	}
	if r := string(got["4"]["result"]); r != `"second part"` {
		t.Errorf("a continuation that returns one: want the second's result, got %s", r)
	}
	close(release) // the first waited all along, and is answered last
	if m := c.next(); string(m["id"]) != "1" || string(m["result"]) != `{"waited":"yes"}` {
		t.Fatalf("want id 1's result, got %s", mustJSON(m))
	}
}

func TestContinuation_HoldsItsPlaceInTheBudgetUntilItReturns(t *testing.T) {
	release := make(chan struct{})
	first := make(chan struct{}, 4)
	c := dial(t, profile(map[string]runtime.Handler{
		"wait": continued(first, func(context.Context) (any, error) { <-release; return "done", nil }),
	}, false), runtime.WithBudget(1, 0))
	c.send(req(1, "wait"))
	<-first
	c.send(req(2, "wait")) // the first, detached from its worker, still holds the only place
	if m := c.next(); string(m["id"]) != "2" || errCode(m) != -32011 {
		t.Fatalf("want id 2 refused with the overload error, got %s", mustJSON(m))
	}
	close(release)
	if m := c.next(); string(m["id"]) != "1" || string(m["result"]) != `"done"` {
		t.Fatalf("want id 1 answered, got %s", mustJSON(m))
	}
	c.send(req(3, "wait"))
	if m := c.next(); string(m["id"]) != "3" || string(m["result"]) != `"done"` {
		t.Fatalf("want id 3 served once the place was free, got %s", mustJSON(m))
	}
}

func TestContinuation_CancelledAsAHandlerIs(t *testing.T) {
	c := dial(t, profile(map[string]runtime.Handler{
		"wait": continued(nil, func(ctx context.Context) (any, error) {
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), runtime.ErrCancelled) {
				t.Errorf("cause = %v, want ErrCancelled", context.Cause(ctx))
			}
			return nil, ctx.Err()
		}),
	}, true))
	c.send(req(7, "wait"), `{"jsonrpc":"2.0","method":"cancel","params":{"id":7}}`)
	if m := c.next(); string(m["id"]) != "7" || errCode(m) != -32006 {
		t.Fatalf("want -32006 for id 7, got %s", mustJSON(m))
	}
}

func TestContinuation_DrainWaitsForItAndItsDeadlineCancelsIt(t *testing.T) {
	c := dial(t, profile(map[string]runtime.Handler{
		"stuck": continued(nil, func(ctx context.Context) (any, error) {
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), runtime.ErrAbandoned) {
				t.Errorf("cause %v, want ErrAbandoned", context.Cause(ctx))
			}
			return nil, ctx.Err()
		}),
	}, false), runtime.WithDrainTimeout(10*time.Millisecond))
	c.send(req(1, "stuck"))
	c.closeInput()
	rest := c.rest()
	if len(rest) != 1 || !strings.Contains(string(rest[0]), "-32010") {
		t.Fatalf("want the request answered with the shutdown error, got %q", rest)
	}
}

// TestContinuation_RunsOnAGoroutineOfItsOwn: the worker that ran a handler's first part is
// free at once; a request that arrives while the continuation waits runs its handler on it,
// and a continuation never runs on a worker.
func TestContinuation_RunsOnAGoroutineOfItsOwn(t *testing.T) {
	release := make(chan struct{})
	first := make(chan struct{}, 2)
	var mu sync.Mutex
	stacks := map[string]string{}
	record := func(name string) {
		mu.Lock()
		stacks[name] = string(debug.Stack())
		mu.Unlock()
	}
	c := dial(t, profile(map[string]runtime.Handler{
		"wait": func(ctx context.Context, r *runtime.Request) (any, error) {
			record("first part")
			first <- struct{}{}
			return runtime.Continuation(func() (any, error) {
				record("continuation")
				first <- struct{}{}
				<-release
				return "done", nil
			}), nil
		},
		"quick": func(ctx context.Context, r *runtime.Request) (any, error) {
			record("quick")
			return "quick", nil
		},
	}, false))
	c.send(req(1, "wait"))
	<-first
	<-first // the continuation has started: the message that frees the worker was sent before
	for range 2 {
		// Two round trips through the dispatcher's loop: it takes waiting messages from
		// request actors before frames on all but one turn in 64, so it has taken that one.
		c.send(req("now", "now"))
		c.next()
	}
	c.send(req(2, "quick"))
	if m := c.next(); string(m["id"]) != "2" {
		t.Fatalf("want id 2 answered while 1 waits, got %s", mustJSON(m))
	}
	close(release)
	c.next()
	mu.Lock()
	defer mu.Unlock()
	goroutine := func(stack string) string { return strings.Fields(stack)[1] }
	if goroutine(stacks["quick"]) != goroutine(stacks["first part"]) {
		t.Errorf("the quick request did not reuse the worker of the first part:\n%s\n%s", stacks["first part"], stacks["quick"])
	}
	if !strings.Contains(stacks["continuation"], "created by github.com/relayrt/relay/runtime.(*dispatcher).detach") || strings.Contains(stacks["continuation"], "work(") {
		t.Errorf("the continuation did not run on a goroutine of its own:\n%s", stacks["continuation"])
	}
}

// TestContinuation_ObservedToItsEnd: under an Observer, end is called once the continuation
// has returned, with its error, and a panic of end's is still the request's error.
func TestContinuation_ObservedToItsEnd(t *testing.T) {
	o := &recorder{ended: map[string]error{}}
	release := make(chan struct{})
	c := dial(t, profile(map[string]runtime.Handler{
		"failing": continued(nil, func(ctx context.Context) (any, error) {
			<-release
			if ctx.Value(seenKey{}) != "failing" {
				t.Errorf("the continuation does not have the observer's context")
			}
			return nil, jsonrpc.Errorf(-32042, "no")
		}),
		"boom-end": continued(nil, func(context.Context) (any, error) { return "ok", nil }),
	}, false), runtime.WithObserver(o))
	c.send(req(1, "failing"))
	c.send(req(2, "boom-end"))
	if m := c.next(); string(m["id"]) != "2" || errCode(m) != jsonrpc.CodeInternalError {
		t.Fatalf("want -32603 for the observer's panic, got %s", mustJSON(m))
	}
	o.mu.Lock()
	_, ended := o.ended["failing"]
	o.mu.Unlock()
	if ended {
		t.Fatal("end was called before the continuation returned")
	}
	close(release)
	if m := c.next(); string(m["id"]) != "1" || errCode(m) != -32042 {
		t.Fatalf("want -32042, got %s", mustJSON(m))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var je *jsonrpc.Error
	if err := o.ended["failing"]; !errors.As(err, &je) || je.Code != -32042 {
		t.Errorf("end got %v, want the continuation's error", err)
	}
}
