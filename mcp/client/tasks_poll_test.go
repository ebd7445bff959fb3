package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// The poll interval a server suggests for a task (pollIntervalMs) is held within 50 ms and
// 30 s: a server that asks for a poll every millisecond would have the client hammer it,
// one that asks for an hour would have Wait sleep long past the task's end.
func TestTaskPollIntervalIsClampedToASaneRange(t *testing.T) {
	for _, tc := range []struct{ suggested, want time.Duration }{
		{time.Millisecond, 50 * time.Millisecond},
		{200 * time.Millisecond, 200 * time.Millisecond},
		{time.Hour, 30 * time.Second},
	} {
		t.Run(tc.suggested.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := mcp.NewServer(mcp.Implementation{Name: "tasks", Version: "1"}, &mcp.ServerOptions{TaskPollInterval: tc.suggested})
			mcp.AddTool(s, &mcp.Tool{Name: "hold", Description: "Wait until cancelled, as a task."},
				func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				}, mcp.AsTask(mcp.TaskOptional))
			c, err := client.Connect(ctx, &client.MemoryTransport{Server: s.Runtime()})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			task, err := c.StartTool(ctx, "hold", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			defer task.Cancel(ctx)
			if task.PollInterval != tc.want {
				t.Fatalf("the server suggested %v: PollInterval %v, want %v", tc.suggested, task.PollInterval, tc.want)
			}
			if err := task.Refresh(ctx); err != nil || task.PollInterval != tc.want {
				t.Fatalf("after Refresh (%v): PollInterval %v, want %v", err, task.PollInterval, tc.want)
			}
		})
	}
}
