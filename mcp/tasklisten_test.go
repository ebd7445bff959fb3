package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

// A listen that follows tasks through TaskListen ends with its complete result when the
// connection drains, not at the drain deadline, when its context is cancelled.
func TestTaskListen_EndsWhenTheConnectionDrains(t *testing.T) {
	var wg sync.WaitGroup
	srv := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"}, &mcp.ServerOptions{
		TaskHandler: func(ctx context.Context, req *mcp.Request) (any, error) { return nil, nil },
		TaskListen: func(ctx context.Context, ids []string, notify func(json.RawMessage)) ([]string, func()) {
			wg.Go(func() { <-ctx.Done() }) // follows until ctx ends, as the gateway's does
			return ids, wg.Wait
		},
	})
	conn := srv.Runtime(runtime.WithDrainTimeout(time.Minute)).Connect(context.Background())
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["t1"]},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + mcp.ExtensionTasks + `":{}}}}}}`
	if err := conn.Send(ctx, []byte(req)); err != nil {
		t.Fatal(err)
	}
	f, err := conn.Receive(ctx)
	if err != nil || !strings.Contains(string(f), "acknowledged") {
		t.Fatalf("first frame %s %v, want the acknowledgement", f, err)
	}
	conn.CloseInput() // EOF: the connection drains
	start := time.Now()
	for {
		f, err := conn.Receive(ctx)
		if err != nil {
			t.Fatalf("after %v: %v, and no answer to the listen", time.Since(start), err)
		}
		if strings.Contains(string(f), `"id":7`) {
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("the listen answered %v after the drain began (%s): its defer wait() waited for the drain deadline", d, f)
			}
			return
		}
	}
}
