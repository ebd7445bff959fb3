// Command mcpgohttp is the Streamable HTTP benchmark peer built on
// mark3labs/mcp-go.
//
// It serves the echo tool ("echo" {text} returns one text item equal to
// text) on http://ADDR/mcp through server.NewStreamableHTTPServer with
// WithStateLess(true). mcp-go decides the protocol era per request: a request
// that carries the 2026-07-28 _meta and MCP-Protocol-Version header is served
// by an ephemeral session without initialize and answered with one
// application/json body (it would switch to SSE only to send notifications,
// which echo does not).
//
// Usage:
//
//	mcpgohttp -http 127.0.0.1:8080
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func echo(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := req.RequireString("text")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(text), nil
}

func main() {
	addr := flag.String("http", "127.0.0.1:8080", "serve Streamable HTTP on this address, endpoint /mcp")
	flag.Parse()
	log.SetOutput(os.Stderr)
	log.SetPrefix("echo-mcpgo-http: ")

	s := server.NewMCPServer("echo-mcpgo", "1.0.0", server.WithToolCapabilities(false))
	yes := true
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Returns the given text unchanged."),
		mcp.WithString("text", mcp.Required(), mcp.Description("the text to return")),
		func(t *mcp.Tool) { t.Annotations = mcp.ToolAnnotation{ReadOnlyHint: &yes, IdempotentHint: &yes} },
	), echo)
	handler := server.NewStreamableHTTPServer(s, server.WithStateLess(true))

	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	if err := srv.ListenAndServe(); err != nil {
		log.Fatal(err)
	}
}
