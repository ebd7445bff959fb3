package runtime_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// recorder is an Observer that keeps what it saw, and panics in Start for method "boom-start"
// and in end for "boom-end".
type recorder struct {
	mu    sync.Mutex
	ended map[string]error
}

type seenKey struct{}

func (o *recorder) Start(ctx context.Context, req *runtime.Request) (context.Context, func(error)) {
	if req.Method == "boom-start" {
		panic("observer start")
	}
	method := req.Method
	return context.WithValue(ctx, seenKey{}, method), func(err error) {
		if method == "boom-end" {
			panic("observer end")
		}
		o.mu.Lock()
		o.ended[method] = err
		o.mu.Unlock()
	}
}

// TestObserver_SeesEveryHandledRequest: the Observer's context reaches the handler, its end
// gets the handler's error, and its panics, in Start or in end, are the request's internal
// error, the server going on.
func TestObserver_SeesEveryHandledRequest(t *testing.T) {
	o := &recorder{ended: map[string]error{}}
	sawCtx := make(chan any, 1)
	c := dial(t, profile(map[string]runtime.Handler{
		"watched": func(ctx context.Context, r *runtime.Request) (any, error) {
			sawCtx <- ctx.Value(seenKey{})
			return "ok", nil
		},
		"failing":    func(ctx context.Context, r *runtime.Request) (any, error) { return nil, jsonrpc.Errorf(-32042, "no") },
		"boom-start": func(ctx context.Context, r *runtime.Request) (any, error) { return "ok", nil },
		"boom-end":   func(ctx context.Context, r *runtime.Request) (any, error) { return "ok", nil },
	}, false), runtime.WithObserver(o))
	for i, method := range []string{"watched", "failing", "boom-start", "boom-end"} {
		c.send(req(i+1, method))
		m := c.next()
		switch method {
		case "watched":
			if m["result"] == nil || <-sawCtx != "watched" {
				t.Errorf("watched: %s, or the handler did not get the observer's context", mustJSON(m))
			}
		case "failing":
			if errCode(m) != -32042 {
				t.Errorf("failing: %s", mustJSON(m))
			}
		default:
			if errCode(m) != jsonrpc.CodeInternalError {
				t.Errorf("%s: %s, want -32603 for the observer's panic", method, mustJSON(m))
			}
		}
	}
	c.send(req(9, "now"))
	if m := c.next(); m["result"] == nil {
		t.Fatalf("the server did not go on: %s", mustJSON(m))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var je *jsonrpc.Error
	if err, ok := o.ended["watched"]; !ok || err != nil {
		t.Errorf("end of watched: %v, %v", err, ok)
	}
	if err := o.ended["failing"]; !errors.As(err, &je) || je.Code != -32042 {
		t.Errorf("end of failing got %v, want the handler's error", err)
	}
}
