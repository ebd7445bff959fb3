// Command mcpgo is the benchmark peer built on mark3labs/mcp-go.
//
// It serves, over stdio, the same two tools as Relay's examples/echo:
// "echo", which returns its text argument unchanged, and "sleep", which
// waits for the given number of milliseconds, reporting progress while it
// waits when the request carries a progress token. The stdio server keeps
// mcp-go's default worker pool and queue sizes.
package main

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// progressEvery is the interval between two progress notifications.
const progressEvery = 10 * time.Millisecond

// hints marks a tool read-only and idempotent, and nothing else.
func hints() mcp.ToolOption {
	return func(t *mcp.Tool) {
		yes := true
		t.Annotations = mcp.ToolAnnotation{ReadOnlyHint: &yes, IdempotentHint: &yes}
	}
}

func echo(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := req.RequireString("text")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(text), nil
}

// sleeper returns the sleep tool's handler; it needs the server to send
// progress notifications.
func sleeper(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ms, err := req.RequireInt("ms")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		total := time.Duration(ms) * time.Millisecond
		done := time.NewTimer(total)
		defer done.Stop()
		var token mcp.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		var tick <-chan time.Time
		if token != nil {
			t := time.NewTicker(progressEvery)
			defer t.Stop()
			tick = t.C
		}
		start := time.Now()
		for {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-done.C:
				return mcp.NewToolResultText("slept"), nil
			case <-tick:
				elapsed := min(time.Since(start), total)
				_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
					"progressToken": token,
					"progress":      elapsed.Milliseconds(),
					"total":         ms,
				})
			}
		}
	}
}

func main() {
	log.SetOutput(os.Stderr)
	s := server.NewMCPServer("echo-mcpgo", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Returns the given text unchanged."),
		mcp.WithString("text", mcp.Required(), mcp.Description("the text to return")),
		hints(),
	), echo)
	s.AddTool(mcp.NewTool("sleep",
		mcp.WithDescription("Sleeps for the given number of milliseconds."),
		mcp.WithInteger("ms", mcp.Required(), mcp.Description("how many milliseconds to sleep")),
		hints(),
	), sleeper(s))
	errLog := log.New(os.Stderr, "echo-mcpgo: ", log.LstdFlags)
	if err := server.ServeStdio(s, server.WithErrorLogger(errLog)); err != nil {
		errLog.Print(err)
		os.Exit(1)
	}
}
