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

// A server's questions reach the client's handlers: here a tool that asks the user's name.
// Under 2026-07-28 the server answers input_required and the client retries with the
// answer; under the initialize generation it would send elicitation/create instead. The
// code is the same either way.
func ExampleWithElicitation() {
	s := mcp.NewServer(mcp.Implementation{Name: "asker", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "hello", Description: "Greet whoever answers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			who, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			return mcp.TextResult(fmt.Sprintf("hello, %v", who.Content["name"])), nil
		})
	ctx := context.Background()
	c, err := client.Connect(ctx, &client.MemoryTransport{Server: s.Runtime()},
		client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "hello", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: hello, Ada
}
