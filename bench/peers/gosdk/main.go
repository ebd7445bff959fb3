// Command gosdk is the benchmark peer built on the official MCP Go SDK.
//
// It serves, over stdio, the same two tools as Relay's examples/echo:
// "echo", which returns its text argument unchanged, and "sleep", which
// waits for the given number of milliseconds, reporting progress while it
// waits when the request carries a progress token.
package main

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoIn is the input of the echo tool.
type echoIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

// sleepIn is the input of the sleep tool.
type sleepIn struct {
	MS int `json:"ms" jsonschema:"how many milliseconds to sleep"`
}

// progressEvery is the interval between two progress notifications.
const progressEvery = 10 * time.Millisecond

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return text(in.Text), nil, nil
}

func sleep(ctx context.Context, req *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
	total := time.Duration(in.MS) * time.Millisecond
	done := time.NewTimer(total)
	defer done.Stop()
	var tick <-chan time.Time
	token := req.Params.GetProgressToken()
	if token != nil {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-done.C:
			return text("slept"), nil, nil
		case <-tick:
			elapsed := time.Since(start)
			if elapsed > total {
				elapsed = total
			}
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(elapsed.Milliseconds()),
				Total:         float64(in.MS),
			})
		}
	}
}

func main() {
	log.SetOutput(os.Stderr)
	server := mcp.NewServer(&mcp.Implementation{Name: "echo-gosdk", Version: "1.0.0"}, nil)
	hints := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	mcp.AddTool(server, &mcp.Tool{
		Name:        "echo",
		Description: "Returns the given text unchanged.",
		Annotations: hints,
	}, echo)
	mcp.AddTool(server, &mcp.Tool{
		Name:        "sleep",
		Description: "Sleeps for the given number of milliseconds.",
		Annotations: hints,
	}, sleep)
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Printf("echo-gosdk: %v", err)
		os.Exit(1)
	}
}
