package bench

import (
	"context"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	relayrt "github.com/relayrt/relay/runtime"
)

// idleSession routes every request to a handler that blocks until released.
type idleSession struct {
	started *atomic.Int64
	release <-chan struct{}
}

func (s idleSession) Route(*relayrt.Request) relayrt.Route {
	return relayrt.Route{Handler: func(ctx context.Context, r *relayrt.Request) (any, error) {
		s.started.Add(1)
		select {
		case <-s.release:
		case <-ctx.Done():
		}
		return json.RawMessage(`{}`), nil
	}}
}

func (idleSession) Notification(string, json.RawMessage) {}

// BenchmarkIdleInFlight measures what the runtime holds for each request in flight that is
// idle in its handler: 100,000 requests blocked at once, heap and stacks in use, divided by
// the count. Everything the runtime keeps for them is counted: the entry in the dispatcher's
// table, the request, its context, its worker goroutine and its stack.
func BenchmarkIdleInFlight(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		var started atomic.Int64
		release := make(chan struct{})
		srv := relayrt.NewServer(relayrt.Profile{
			NewSession: func(*relayrt.Peer) relayrt.Session { return idleSession{&started, release} },
		}, relayrt.WithLogger(zap.NewNop()), relayrt.WithBudget(n, 0))
		ctx := context.Background()
		conn := srv.Connect(ctx)
		go func() { // drain the answers at the end
			for {
				if _, err := conn.Receive(ctx); err != nil {
					return
				}
			}
		}()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		frame := make([]byte, 0, 64)
		for i := range n {
			frame = jsonrpc.AppendRequest(frame[:0], jsonrpc.IntID(int64(i)), "idle", []byte(`{}`))
			if err := conn.Send(ctx, frame); err != nil {
				b.Fatal(err)
			}
		}
		for started.Load() < n {
			time.Sleep(time.Millisecond)
		}
		runtime.GC()
		var during runtime.MemStats
		runtime.ReadMemStats(&during)
		used := int64(during.HeapInuse+during.StackInuse) - int64(before.HeapInuse+before.StackInuse)
		b.ReportMetric(float64(used)/n, "B/idle-request")
		b.ReportMetric(float64(int64(during.StackInuse)-int64(before.StackInuse))/n, "stack-B/idle-request")
		b.ReportMetric(float64(int64(during.HeapObjects)-int64(before.HeapObjects))/n, "objects/idle-request")
		close(release)
		conn.Close()
	}
}
