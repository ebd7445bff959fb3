package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/stdio"
)

// TestMain runs the test binary itself as the child server when RELAY_CLIENT_TEST_CHILD
// names one: real processes in tests, with no binary to build.
func TestMain(m *testing.M) {
	switch os.Getenv("RELAY_CLIENT_TEST_CHILD") {
	case "fixture":
		if err := stdio.ServeStdio(context.Background(), newFixture().Runtime()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "legacy-silent", "legacy-not-found":
		legacyOnly(os.Getenv("RELAY_CLIENT_TEST_CHILD") == "legacy-silent")
		os.Exit(0)
	case "deaf":
		// Never exits on EOF: Close must end it with signals.
		fmt.Fprintln(os.Stderr, "deaf child started")
		for {
			time.Sleep(time.Hour)
		}
	}
	goleak.VerifyTestMain(m)
}

// legacyOnly is a server of the initialize generation that knows nothing of
// server/discover: it says nothing (silent) or answers -32601.
func legacyOnly(silent bool) {
	sc := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		switch m.Method {
		case "initialize":
			out.Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
				"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
				"serverInfo": map[string]any{"name": "old", "version": "1"}}})
		case "ping":
			out.Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
		default:
			if !silent {
				out.Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID,
					"error": map[string]any{"code": -32601, "message": "Method not found"}})
			}
		}
	}
}

type echoArgs struct {
	Text   string `json:"text"`
	Region string `json:"region,omitempty"`
}

type progressArgs struct {
	Steps int `json:"steps"`
}

// newFixture is the server the tests call: tools (more than one page of them), resources,
// a prompt.
func newFixture() *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "fixture", Version: "1.0.0"},
		&mcp.ServerOptions{PageSize: 2, Instructions: "use echo", TaskPollInterval: 20 * time.Millisecond})
	echoSchema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"text":   {Type: "string"},
		"region": {Type: "string", Extra: map[string]any{"x-mcp-header": "Region"}},
	}, Required: []string{"text"}}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo text.", InputSchema: echoSchema},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, error) {
			return mcp.TextResult(in.Text + in.Region), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fail as a tool does."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			return mcp.ErrorResult("it failed"), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Report progress, then finish."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressArgs) (*mcp.CallToolResult, error) {
			for i := 1; i <= in.Steps; i++ {
				req.Progress(float64(i), float64(in.Steps), fmt.Sprintf("step %d", i))
			}
			return mcp.TextResult("done"), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "Log twice, then finish."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			req.Log("debug", "fixture", "not wanted at info")
			req.Log("warning", "fixture", "wanted")
			return mcp.TextResult("logged"), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "Wait until cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Ask the client for a name, a completion and its roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			who, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{
					"name": map[string]any{"type": "string"},
					"age":  map[string]any{"type": "integer", "default": 30},
				}}})
			if err != nil {
				return nil, err
			}
			said, err := req.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []mcp.SamplingMessage{mcp.NewSamplingMessage("user", &mcp.TextContent{Text: "hello"})}})
			if err != nil {
				return nil, err
			}
			blocks, _ := said.Blocks()
			roots, err := req.ListRoots(ctx)
			if err != nil {
				return nil, err
			}
			return mcp.TextResult(fmt.Sprintf("%s %v %v: %s, %d roots", who.Action, who.Content["name"], who.Content["age"],
				blocks[0].(*mcp.TextContent).Text, len(roots.Roots))), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "askTwice", Description: "Ask the client two questions at once, each named."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			var wg sync.WaitGroup
			said := make([]string, 2)
			errs := make([]error, 2)
			for i, q := range []string{"Who are you?", "Who else?"} {
				wg.Go(func() {
					res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: q, RequestedSchema: map[string]any{
						"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
						mcp.InputKey(fmt.Sprint("q", i))) // asked at once: their order is not theirs
					if err != nil {
						errs[i] = err
						return
					}
					said[i] = fmt.Sprint(res.Action, " ", res.Content["name"])
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return nil, err
			}
			return mcp.TextResult(strings.Join(said, ", ")), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "visit", Description: "Send the user to a URL."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			r, err := req.Elicit(ctx, &mcp.ElicitParams{Mode: mcp.ElicitURL, Message: "Sign in", URL: "https://example.com/login"})
			if err != nil {
				return nil, err
			}
			return mcp.TextResult("visited: " + r.Action), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "visitdone", Description: "Send the user to a URL, and tell the client when they are done there."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			p := &mcp.ElicitParams{Mode: mcp.ElicitURL, Message: "Sign in", URL: "https://example.com/login"}
			r, err := req.Elicit(ctx, p)
			if err != nil {
				return nil, err
			}
			// Where a real server's URL handler would learn it: the user is done.
			if err := s.CompleteElicitation(p.ElicitationID); err != nil {
				return nil, err
			}
			return mcp.TextResult("completed " + r.Action), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "weather", Description: "Ask the client's model, which may use a tool."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			lookup := &mcp.Tool{Name: "lookup", Description: "Look a city up.",
				InputSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"city": {Type: "string"}}}}
			q := mcp.NewSamplingMessage("user", &mcp.TextContent{Text: "weather in Paris?"})
			r, err := req.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 50, Messages: []mcp.SamplingMessage{q},
				Tools: []*mcp.Tool{lookup}, ToolChoice: &mcp.ToolChoice{Mode: mcp.ToolChoiceAuto}})
			if err != nil {
				return nil, err
			}
			blocks, err := r.Blocks()
			if err != nil {
				return nil, err
			}
			use, ok := blocks[0].(*mcp.ToolUseContent)
			if r.StopReason != "toolUse" || !ok {
				return mcp.TextResult("no tool use: " + r.StopReason), nil
			}
			return mcp.TextResult(use.Name + " " + string(use.Input)), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "flaky", Description: "Kill the process the first time, when told to.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			if marker := os.Getenv("RELAY_CLIENT_TEST_FLAKY"); marker != "" {
				if _, err := os.Stat(marker); err != nil {
					os.WriteFile(marker, nil, 0o600)
					os.Exit(3) // a crash in the middle of a call
				}
			}
			return mcp.TextResult("survived"), nil
		})
	// Tasks (io.modelcontextprotocol/tasks): under 2026-07-28 these calls become tasks.
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Answer after a moment, as a task when the client can."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			id, _ := req.InTask()
			return mcp.TextResult(fmt.Sprintf("slow done (task %v)", id != "")), nil
		}, mcp.AsTask(mcp.TaskOptional))
	mcp.AddTool(s, &mcp.Tool{Name: "asktask", Description: "Ask the user's name from a task."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			who, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			return mcp.TextResult(fmt.Sprintf("task asked %v", who.Content["name"])), nil
		}, mcp.AsTask(mcp.TaskOptional))
	mcp.AddTool(s, &mcp.Tool{Name: "blocktask", Description: "Wait until cancelled, as a task."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, mcp.AsTask(mcp.TaskOptional))
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "Tell subscribers that a resource changed."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			URI string `json:"uri"`
		}) (*mcp.CallToolResult, error) {
			s.ResourceUpdated(in.URI)
			return mcp.TextResult("touched"), nil
		})
	s.SetCompletionHandler(func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		var out []string
		for _, v := range []string{"alpha", "alps", "beta"} {
			if strings.HasPrefix(v, req.Argument.Value) {
				out = append(out, v+"@"+req.Ref.Name+"/"+req.Context["lang"])
			}
		}
		return &mcp.CompleteResult{Values: out, Total: len(out)}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Return an image."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1, 2, 3}, MimeType: "image/png"}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://text", Name: "text", MimeType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://text", MimeType: "text/plain", Text: "hello"}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://blob", Name: "blob", MimeType: "application/octet-stream"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://blob", Blob: []byte{0, 1, 2}}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone.", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Arguments["who"]}}}}, nil
		})
	return s
}
