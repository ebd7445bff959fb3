// Command gosdkhttp is the Streamable HTTP benchmark peer built on the
// official MCP Go SDK.
//
// It serves the echo tool ("echo" {text} returns one text item equal to
// text) on http://ADDR/mcp through mcp.NewStreamableHTTPHandler with
// Stateless set, so that every POST is served by a session of its own and no
// initialize is needed, and with JSONResponse set, so that a call is answered
// with one application/json body rather than an SSE stream.
//
// Usage:
//
//	gosdkhttp -http 127.0.0.1:8080
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoIn is the input of the echo tool.
type echoIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
}

func main() {
	addr := flag.String("http", "127.0.0.1:8080", "serve Streamable HTTP on this address, endpoint /mcp")
	sse := flag.Bool("sse", false, "answer with an SSE stream instead of application/json")
	flag.Parse()
	log.SetOutput(os.Stderr)
	log.SetPrefix("echo-gosdk-http: ")

	server := mcp.NewServer(&mcp.Implementation{Name: "echo-gosdk", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{
		Name:        "echo",
		Description: "Returns the given text unchanged.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, echo)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: !*sse})

	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	if err := srv.ListenAndServe(); err != nil {
		log.Fatal(err)
	}
}
