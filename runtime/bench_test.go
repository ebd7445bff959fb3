package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// benchResult is the answer of every request in these benchmarks, sent as it is.
var benchResult = json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)

// constantHandler answers at once with benchResult.
func constantHandler(context.Context, *runtime.Request) (any, error) { return benchResult, nil }

// benchSession answers every request with benchResult: at once from Route, or from a request
// actor when actor is set.
type benchSession struct{ actor bool }

func (s benchSession) Route(*runtime.Request) runtime.Route {
	if s.actor {
		return runtime.Route{Handler: constantHandler}
	}
	return runtime.Route{Result: benchResult}
}

func (benchSession) Notification(string, json.RawMessage) {}

// benchConn connects to a server whose every request is answered with benchResult, and checks
// one round trip before the benchmark starts timing.
func benchConn(b *testing.B, actor bool) *runtime.Conn {
	b.Helper()
	srv := runtime.NewServer(runtime.Profile{
		NewSession: func(*runtime.Peer) runtime.Session { return benchSession{actor: actor} },
	}, runtime.WithLogger(zap.NewNop()))
	ctx := context.Background()
	conn := srv.Connect(ctx)
	frame := jsonrpc.AppendRequest(nil, jsonrpc.IntID(0), "tools/call", []byte(`{}`))
	if err := conn.Send(ctx, frame); err != nil {
		b.Fatal(err)
	}
	got, err := conn.Receive(ctx)
	if want := jsonrpc.AppendResult(nil, jsonrpc.IntID(0), benchResult); err != nil || !bytes.Equal(got, want) {
		conn.Close()
		b.Fatalf("got %s, %v; want %s", got, err, want)
	}
	return conn
}

// roundTrips sends requests with ids 1, 2, … one at a time, each answered before the next is
// sent, one per iteration of b.Loop.
func roundTrips(b *testing.B, conn *runtime.Conn) {
	ctx := context.Background()
	frame := make([]byte, 0, 64)
	b.ReportAllocs()
	for i := int64(1); b.Loop(); i++ {
		frame = jsonrpc.AppendRequest(frame[:0], jsonrpc.IntID(i), "tools/call", []byte(`{}`))
		if err := conn.Send(ctx, frame); err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Receive(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDispatcherHop measures one request's round trip through an in-memory Conn when the
// Session's Route answers it at once (a Result, no Handler): the frame handed to the
// dispatcher, decoded, routed, its response encoded and handed back, one request at a time.
// No request actor runs, so this is the dispatcher's own cost per request, including the two
// channel hops between the caller's goroutine and the dispatcher's; BenchmarkActorSpawn's
// inflight=1 minus this is what running a request as an actor adds.
func BenchmarkDispatcherHop(b *testing.B) {
	conn := benchConn(b, false)
	defer conn.Close()
	roundTrips(b, conn)
}

// BenchmarkActorSpawn measures the same round trip when Route returns a Handler (one that
// answers at once with a constant json.RawMessage), so every request runs as a request actor
// on a worker goroutine: its entry in the table, its context, the hand-off to a worker and the
// completion event back to the dispatcher. inflight=1 sends each request after the previous
// answer, the latency of a lone request; inflight=64 keeps 64 requests outstanding (one more
// is sent as each answer arrives), where the dispatcher, workers and caller overlap, as under
// a busy client. ns/op is per request in both.
func BenchmarkActorSpawn(b *testing.B) {
	b.Run("inflight=1", func(b *testing.B) {
		conn := benchConn(b, true)
		defer conn.Close()
		roundTrips(b, conn)
	})
	b.Run("inflight=64", func(b *testing.B) {
		const window = 64 // no more than the Conn buffers, so the dispatcher never waits on us
		conn := benchConn(b, true)
		defer conn.Close()
		ctx := context.Background()
		frame := make([]byte, 0, 64)
		next := int64(1)
		send := func() {
			frame = jsonrpc.AppendRequest(frame[:0], jsonrpc.IntID(next), "tools/call", []byte(`{}`))
			next++
			if err := conn.Send(ctx, frame); err != nil {
				b.Fatal(err)
			}
		}
		for range window {
			send()
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := conn.Receive(ctx); err != nil {
				b.Fatal(err)
			}
			send()
		}
		for range window { // the last window's answers, after timing has stopped
			if _, err := conn.Receive(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
