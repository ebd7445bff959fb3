package client_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
	"github.com/relayrt/relay/runtime"
)

// WithTraceContext carries the caller's W3C trace context in the request's _meta, where the
// server reads it (runtime.TraceFrom), on typed calls and raw ones alike.
func TestWithTraceContextReachesTheServer(t *testing.T) {
	s := mcp.NewServer(mcp.Implementation{Name: "traced", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "trace"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		tc, _ := runtime.TraceFrom(ctx)
		return mcp.TextResult(tc.Parent + "|" + tc.State), nil
	})
	ctx := context.Background()
	c, err := client.Connect(ctx, &client.MemoryTransport{Server: s.Runtime()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	want := parent + "|vendor=x"
	res, err := c.CallTool(ctx, "trace", struct{}{}, client.WithTraceContext(parent, "vendor=x"))
	if err != nil || res.Content[0].(*mcp.TextContent).Text != want {
		t.Errorf("CallTool with a trace context: %v %v, want %s", res, err, want)
	}
	raw, err := c.Call(ctx, "tools/call", json.RawMessage(`{"name":"trace","arguments":{}}`), client.WithTraceContext(parent, "vendor=x"))
	var r struct{ Content []struct{ Text string } }
	json.Unmarshal(raw, &r)
	if err != nil || len(r.Content) == 0 || r.Content[0].Text != want {
		t.Errorf("Call with a trace context: %s %v, want %s", raw, err, want)
	}
	if res, _ := c.CallTool(ctx, "trace", struct{}{}); res.Content[0].(*mcp.TextContent).Text != "|" {
		t.Errorf("a call without one carried %q", res.Content[0].(*mcp.TextContent).Text)
	}
}
