package runtime_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// ServeRequest serves what ServeOutbound serves: a handler that sends far more notifications
// than a request's queue holds has every one delivered, in order, before its answer; and a
// batch's members, each in a worker of its own, are all answered.
func TestServeRequest_DeliversAllARequestSends(t *testing.T) {
	const notes = 100
	chatty := func(ctx context.Context, r *runtime.Request) (any, error) {
		for i := range notes {
			if err := r.Notify("progress", map[string]int{"n": i}); err != nil {
				return nil, err
			}
		}
		return "done", nil
	}
	srv := runtime.NewServer(profile(map[string]runtime.Handler{"chatty": chatty}, true))

	in := make(chan runtime.Inbound, 1)
	out := make(chan runtime.Outbound)
	served := make(chan error, 1)
	go func() { served <- srv.ServeRequest(context.Background(), in, out) }()
	in <- runtime.Inbound{Frame: []byte(`{"jsonrpc":"2.0","id":7,"method":"chatty"}`)}
	close(in)
	var frames []runtime.Outbound
	for o := range out {
		time.Sleep(100 * time.Microsecond) // a slow transport: the handler outpaces it
		frames = append(frames, o)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if len(frames) != notes+1 {
		t.Fatalf("%d frames, want %d notifications and the answer", len(frames), notes)
	}
	for i, o := range frames[:notes] {
		n := string(jsonrpc.Field(jsonrpc.Field(o.Frame, "params"), "n"))
		if o.Final || string(o.Request) != "7" || n != strconv.Itoa(i) {
			t.Fatalf("frame %d: %s (request %s, final %v), want notification n=%d of request 7", i, o.Frame, o.Request, o.Final, i)
		}
	}
	if last := frames[notes]; !last.Final || string(jsonrpc.Field(last.Frame, "result")) != `"done"` {
		t.Fatalf("last frame %s (final %v), want the answer \"done\"", last.Frame, last.Final)
	}

	// A batch of more members than the queue holds.
	in = make(chan runtime.Inbound, 1)
	out = make(chan runtime.Outbound)
	go func() { served <- srv.ServeRequest(context.Background(), in, out) }()
	batch := "["
	for i := range 20 {
		if i > 0 {
			batch += ","
		}
		batch += `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"now"}`
	}
	in <- runtime.Inbound{Frame: []byte(batch + "]")}
	close(in)
	var answers int
	for o := range out {
		parts, err := jsonrpc.SplitBatch(o.Frame)
		if err != nil {
			t.Fatalf("%s: %v", o.Frame, err)
		}
		answers += len(parts)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if answers != 20 {
		t.Fatalf("%d answers to a batch of 20", answers)
	}
}
