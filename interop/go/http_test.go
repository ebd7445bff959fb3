package interop

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startHTTP runs a Relay example with -http on a free loopback port and returns its MCP URL.
func startHTTP(t *testing.T, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "-http", addr)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { // drain the server's log
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
		}
	}()
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil { // Windows cannot send it: kill
			cmd.Process.Kill()
			cmd.Wait()
			return
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("the server did not stop cleanly on SIGTERM: %v", err)
		}
	})
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the server did not listen on %s", addr)
	return ""
}

// TestA13_StreamableHTTPModernClient drives examples/everything over Streamable HTTP with the
// Go SDK's streamable client, which speaks 2026-07-28: discover, tools, progress, sampling
// through input_required, resources and prompts, with no session on the wire.
func TestA13_StreamableHTTPModernClient(t *testing.T) {
	if everythingBin == "" {
		t.Skip("examples/everything did not build")
	}
	url := startHTTP(t, everythingBin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var progress []float64
	client := mcp.NewClient(&mcp.Implementation{Name: "relay-interop-http", Version: "1.0.0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "interop-model", Content: &mcp.TextContent{Text: "sampled over HTTP"}}, nil
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Progress)
			mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != modernVersion {
		t.Errorf("negotiated %q over HTTP, want %q", v, modernVersion)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 10 {
		t.Fatalf("tools/list over HTTP: %v (%d tools)", err, len(tools.Tools))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("test_simple_text: %v %+v", err, res)
	}
	params := &mcp.CallToolParams{Name: "test_tool_with_progress"}
	params.SetProgressToken("http-progress")
	if res, err = cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("test_tool_with_progress: %v %+v", err, res)
	}
	mu.Lock()
	got := len(progress)
	mu.Unlock()
	if got < 3 {
		t.Errorf("progress over the POST's SSE stream: %d notifications", got)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hello"}})
	if err != nil || res.IsError {
		t.Fatalf("test_sampling over HTTP: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "sampled over HTTP") {
		t.Errorf("sampling answer not used: %q", text)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"}); err != nil {
		t.Errorf("resources/read over HTTP: %v", err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a", "arg2": "b"}}); err != nil {
		t.Errorf("prompts/get over HTTP: %v", err)
	}
}
