package interop

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// sdkServer is a server written with the official Go SDK: a tool that adds, one that asks
// the user's name (elicitation), a resource and a prompt.
func sdkServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "go-sdk-server", Version: "1.0.0"}, nil)
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two numbers."},
		func(ctx context.Context, req *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
		})
	// The SDK's portable way to ask: return InputRequests; it sends them as an
	// input_required result under 2026-07-28, as requests under the initialize generation.
	sdk.AddTool(s, &sdk.Tool{Name: "whoami", Description: "Ask the user's name."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			if res, ok := req.Params.InputResponses["name"].(*sdk.ElicitResult); ok {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("%s %v", res.Action, res.Content["name"])}}}, nil, nil
			}
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"name": &sdk.ElicitParams{Message: "Your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}, nil, nil
		})
	s.AddResource(&sdk.Resource{URI: "test://greeting", Name: "greeting", MIMEType: "text/plain"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "test://greeting", MIMEType: "text/plain", Text: "hello"}}}, nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "greet", Arguments: []*sdk.PromptArgument{{Name: "who", Required: true}}},
		func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user",
				Content: &sdk.TextContent{Text: "greet " + req.Params.Arguments["who"]}}}}, nil
		})
	return s
}

// serveSDKChild runs sdkServer on stdio when this test binary is started as the child of
// a stdio test, and reports whether it was.
func serveSDKChild() bool {
	if os.Getenv("RELAY_INTEROP_SDK_CHILD") == "" {
		return false
	}
	if err := sdkServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "go-sdk server:", err)
		os.Exit(1)
	}
	return true
}

// Relay's client (mcp/client) drives a server of the official Go SDK over stdio and
// Streamable HTTP, in both generations: the detected one (2026-07-28: server/discover)
// and the initialize generation, pinned; every kind of call, and an elicitation answered
// through the client's handler.
func TestRelayClientDrivesGoSDKServer(t *testing.T) {
	transports := map[string]func(t *testing.T) client.Transport{
		"stdio": func(t *testing.T) client.Transport {
			tr := client.Command(os.Args[0], "-test.run=^$")
			tr.Command.Env = append(os.Environ(), "RELAY_INTEROP_SDK_CHILD=1")
			return tr
		},
		"http": func(t *testing.T) client.Transport {
			srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return sdkServer() }, nil))
			t.Cleanup(srv.Close)
			return client.HTTP(srv.URL)
		},
		// The SDK serves 2026-07-28 over HTTP only when stateless: its stateful handler
		// answers server/discover with its legacy versions, and the client takes one.
		"http-stateless": func(t *testing.T) client.Transport {
			srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return sdkServer() },
				&sdk.StreamableHTTPOptions{Stateless: true}))
			t.Cleanup(srv.Close)
			return client.HTTP(srv.URL)
		},
	}
	generations := map[string][]client.Option{
		"detected":   nil,
		"2025-11-25": {client.WithVersion(mcp.Version20251125)},
	}
	for tname, open := range transports {
		for gname, opts := range generations {
			t.Run(tname+"/"+gname, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				opts := append(opts, client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				}))
				c, err := client.Connect(ctx, open(t), opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				t.Logf("%s: version %s", tname, c.Version())
				if c.ServerInfo().Name != "go-sdk-server" {
					t.Errorf("server info %+v", c.ServerInfo())
				}
				n := 0
				for tool, err := range c.ListTools(ctx) {
					if err != nil {
						t.Fatal(err)
					}
					if tool.Name == "add" || tool.Name == "whoami" {
						n++
					}
				}
				if n != 2 {
					t.Errorf("%d of the 2 tools listed", n)
				}
				text := func(res *mcp.CallToolResult, err error) string {
					if err != nil {
						t.Fatal(err)
					}
					return res.Content[0].(*mcp.TextContent).Text
				}
				if got := text(c.CallTool(ctx, "add", map[string]int{"a": 2, "b": 40})); got != "42" {
					t.Errorf("add: %q", got)
				}
				// A stateless SDK server serving the initialize generation keeps no session,
				// so it cannot know the client's capabilities: it never asks there.
				if tname != "http-stateless" || c.Modern() {
					if got := text(c.CallTool(ctx, "whoami", nil)); got != "accept Ada" {
						t.Errorf("whoami: %q", got)
					}
				}
				r, err := c.ReadResource(ctx, "test://greeting")
				if err != nil || r.Contents[0].Text != "hello" {
					t.Errorf("read: %+v, %v", r, err)
				}
				p, err := c.GetPrompt(ctx, "greet", map[string]string{"who": "Ada"})
				if err != nil || p.Messages[0].Content.(*mcp.TextContent).Text != "greet Ada" {
					t.Errorf("prompt: %+v, %v", p, err)
				}
				if err := c.Ping(ctx); err != nil {
					t.Errorf("ping: %v", err)
				}
			})
		}
	}
}
