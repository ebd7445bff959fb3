package main

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/relayrt/relay/mcp"
)

// The diagnostic tools of the conformance suite's 0.2 line (scenario server-stateless):
// each one makes the server do something a rule of MCP 2026-07-28 is about, so that the
// suite can watch the server keep the rule.
//
//   - test_missing_capability asks the client's model (sampling). A client that did not
//     declare sampling on the request gets -32021 MissingRequiredClientCapability with
//     data.requiredCapabilities {"sampling":{}}, which the mcp package builds (MCP 2026-07-28,
//     Basic › _meta: a server uses only the capabilities declared on the request itself).
//   - test_streaming_elicitation reports progress on the request's stream and then asks the
//     user a question: a 2026-07-28 client gets an input_required result on that stream and
//     never a request of the server's (Basic › Multi Round-Trip Requests), an
//     initialize-generation client gets elicitation/create on it.
//   - test_logging_tool logs at three levels: only a request that carried
//     _meta io.modelcontextprotocol/logLevel hears any of it (Server › Utilities › Logging).
//   - test_trigger_tool_change and test_trigger_prompt_change add or remove a tool or a prompt
//     in the server's registry, which tells subscriptions/listen streams that asked for it
//     (Basic › Subscriptions).

// The tool and prompt the triggers add and remove.
const (
	dynamicTool   = "test_dynamic_tool"
	dynamicPrompt = "test_dynamic_prompt"
)

// toggles adds a tool or prompt when it is absent and removes it when present. One mutex keeps
// the check and the change together when triggers race.
type toggles struct {
	mu     sync.Mutex
	tool   bool
	prompt bool
}

func addDiagnostics(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "test_missing_capability",
		Description: "Asks the client's model a question (sampling/createMessage): a client that did not declare sampling gets -32021."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			res, err := req.CreateMessage(ctx, &mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: "user", Content: textBlock("Say hello.")}},
				MaxTokens: 20,
			})
			if err != nil {
				return askFailed("sampling", err)
			}
			return mcp.TextResult("The client's model said: " + samplingText(res.Content)), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_streaming_elicitation",
		Description: "Reports progress, then asks the user to confirm (elicitation/create) on the same response stream."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			req.Progress(1, 2, "Preparing the question")
			res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Continue?", RequestedSchema: confirmSchema})
			if err != nil {
				return askFailed("elicitation", err)
			}
			req.Progress(2, 2, "Answered")
			return elicitResult("Streaming elicitation", res), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_logging_tool",
		Description: "Logs at debug, info and warning: only to a client that asked for log messages."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			req.Log(mcp.LevelDebug, "everything", "test_logging_tool: a debug message")
			req.Log(mcp.LevelInfo, "everything", "test_logging_tool: an info message")
			req.Log(mcp.LevelWarning, "everything", "test_logging_tool: a warning")
			return mcp.TextResult("Logged three messages, at debug, info and warning"), nil
		})

	var tg toggles
	mcp.AddTool(s, &mcp.Tool{Name: "test_trigger_tool_change",
		Description: "Adds " + dynamicTool + ", or removes it if present: listeners for tool list changes are told."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			tg.mu.Lock()
			defer tg.mu.Unlock()
			if tg.tool = !tg.tool; !tg.tool {
				s.RemoveTools(dynamicTool)
				return mcp.TextResult("Removed " + dynamicTool), nil
			}
			mcp.AddTool(s, &mcp.Tool{Name: dynamicTool, Description: "Added by test_trigger_tool_change; returns text."},
				func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
					return mcp.TextResult("This tool was added while the server was running."), nil
				})
			return mcp.TextResult("Added " + dynamicTool), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_trigger_prompt_change",
		Description: "Adds " + dynamicPrompt + ", or removes it if present: listeners for prompt list changes are told."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			tg.mu.Lock()
			defer tg.mu.Unlock()
			if tg.prompt = !tg.prompt; !tg.prompt {
				s.RemovePrompts(dynamicPrompt)
				return mcp.TextResult("Removed " + dynamicPrompt), nil
			}
			s.AddPrompt(&mcp.Prompt{Name: dynamicPrompt, Description: "Added by test_trigger_prompt_change."},
				func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
						{Role: "user", Content: &mcp.TextContent{Text: "This prompt was added while the server was running."}},
					}}, nil
				})
			return mcp.TextResult("Added " + dynamicPrompt), nil
		})
}

// confirmSchema asks for one boolean.
var confirmSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
	"required":   []string{"ok"},
}

// textBlock is a text content block, as a sampling message carries it.
func textBlock(text string) json.RawMessage {
	raw, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return raw
}
