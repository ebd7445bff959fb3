package mcp_test

import (
	"context"
	"fmt"

	"github.com/relayrt/relay/mcp"
)

type greetArgs struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

// A server with one tool, called in memory by a 2026-07-28 client.
func ExampleAddTool() {
	s := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Say hello."},
		func(ctx context.Context, req *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, error) {
			return mcp.TextResult("hello, " + in.Name), nil
		})

	ctx := context.Background()
	conn := s.Runtime().Connect(ctx) // in memory; stdio.ServeStdio(ctx, s.Runtime()) serves a process
	defer conn.Close()
	conn.Send(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	reply, _ := conn.Receive(ctx)
	fmt.Println(string(reply))
	// Output: {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"greeter","version":"1.0.0"}},"content":[{"type":"text","text":"hello, Ada"}]}}
}

// The same server answers a client of the initialize generation.
func ExampleServer_legacy() {
	s := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	ctx := context.Background()
	conn := s.Runtime().Connect(ctx)
	defer conn.Close()
	conn.Send(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`))
	reply, _ := conn.Receive(ctx)
	fmt.Println(string(reply))
	// Output: {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"logging":{}},"serverInfo":{"name":"greeter","version":"1.0.0"}}}
}
