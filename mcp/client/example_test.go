package client_test

import (
	"context"
	"fmt"
	"log"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// Call a tool on a stdio server: here Relay's examples/everything, started by go run.
func Example() {
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Command("go", "run", "../../examples/everything"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "test_simple_text", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: This is a simple text response for testing.
}

// A server in the same process, as tests use it.
func ExampleMemoryTransport() {
	s := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Say hello."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Name string `json:"name"`
		}) (*mcp.CallToolResult, error) {
			return mcp.TextResult("hello, " + in.Name), nil
		})
	ctx := context.Background()
	c, err := client.Connect(ctx, &client.MemoryTransport{Server: s.Runtime()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, _ := c.CallTool(ctx, "greet", map[string]string{"name": "Ada"})
	fmt.Println(c.Version(), res.Content[0].(*mcp.TextContent).Text)
	// Output: 2026-07-28 hello, Ada
}
