package fleet_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/relayrt/relay/fleet"
	"github.com/relayrt/relay/internal/redistest"
	"github.com/relayrt/relay/mcp"
)

// The benchmarks measure one call's cost on a real redis-server on loopback: the round trip
// dominates, so the figures are those of a Redis next to the instance, not across a network.

// frame is an SSE event of a typical size: a progress notification.
var frame = []byte(`id: 1/p1/42` + "\n" + `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":42,"total":100}}` + "\n\n")

func BenchmarkEventStoreAppend(b *testing.B) {
	s := open(b, redistest.Start(b), fleet.Options{}).EventStore()
	ctx := context.Background()
	b.ReportAllocs()
	seq := uint64(0)
	for b.Loop() {
		seq++
		if err := s.Append(ctx, "session", "p1", seq, frame); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventStoreAfter: a resumption that replays 100 events.
func BenchmarkEventStoreAfter(b *testing.B) {
	s := open(b, redistest.Start(b), fleet.Options{}).EventStore()
	ctx := context.Background()
	for i := uint64(1); i <= 100; i++ {
		s.Append(ctx, "session", "p1", i, frame)
	}
	b.ReportAllocs()
	for b.Loop() {
		if frames, ok, err := s.After(ctx, "session", "p1", 0); err != nil || !ok || len(frames) != 100 {
			b.Fatal(len(frames), ok, err)
		}
	}
}

// BenchmarkTaskStoreUpdate: a read, fn, and a compare-and-write, uncontended.
func BenchmarkTaskStoreUpdate(b *testing.B) {
	s := open(b, redistest.Start(b), fleet.Options{}).TaskStore(nil)
	ctx := context.Background()
	if err := s.Create(ctx, &mcp.TaskRecord{ID: "t", Principal: "p", Status: mcp.TaskWorking, TTL: time.Hour}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Update(ctx, "p", "t", func(r *mcp.TaskRecord) bool {
			r.StatusMessage = "step " + strconv.Itoa(i)
			r.Result = json.RawMessage(`{"content":[]}`)
			return true
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBusPublish: a publish heard by one subscriber of another instance, the
// subscriber reading as fast as it can (it may lose some: the cost measured is the
// publisher's).
func BenchmarkBusPublish(b *testing.B) {
	srv := redistest.Start(b)
	pub := open(b, srv, fleet.Options{Prefix: "bench:"}).Bus()
	sub := open(b, srv, fleet.Options{Prefix: "bench:"}).Bus()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := sub.Subscribe(ctx, "changes")
	if err != nil {
		b.Fatal(err)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range ch {
		}
	}()
	msg := []byte(`{"kind":"tools/list_changed"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := pub.Publish(ctx, "changes", msg); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cancel()
	<-drained
}
