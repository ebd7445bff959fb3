package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// The tools and the prompt of the 0.2 suite's input-required-result-* scenarios (MCP
// 2026-07-28, Basic › Multi Round-Trip Requests). Each asks the client through the mcp
// package's one mechanism, Request.Elicit, CreateMessage and ListRoots: under 2026-07-28 a
// question the client has not answered yet makes the call answer input_required, with a
// signed requestState that carries the answers of earlier rounds, and the handler runs again
// from the start when the client retries with inputResponses; under the initialize
// generation the same calls send the client a request and wait for its answer.
//
// The keys of inputRequests are the mcp package's ("elicitation-0", "sampling-1", ...), not
// the names the scenarios' descriptions show ("user_name", "capital_question"): a handler
// cannot name its questions.

// Questions the tools ask.
var (
	nameSchema    = objectSchema("name", "string")
	colorSchema   = objectSchema("color", "string")
	contextSchema = objectSchema("context", "string")
)

// objectSchema asks for one required property.
func objectSchema(prop, typ string) map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{prop: map[string]any{"type": typ}},
		"required":   []string{prop},
	}
}

func addInputRequired(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "test_input_required_result_elicitation",
		Description: "Asks the user's name (elicitation/create) and greets them."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema}, mcp.InputKey("user_name"))
			if err != nil {
				return askFailed("elicitation", err)
			}
			return greet(res), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_input_required_result_sampling",
		Description: "Asks the client's model for the capital of France (sampling/createMessage)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			res, err := req.CreateMessage(ctx, &mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: "user", Content: textBlock("What is the capital of France?")}},
				MaxTokens: 100,
			}, mcp.InputKey("capital_question"))
			if err != nil {
				return askFailed("sampling", err)
			}
			return mcp.TextResult("The client's model answered: " + samplingText(res.Content)), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_input_required_result_list_roots",
		Description: "Asks the client for its roots (roots/list) and lists them."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			res, err := req.ListRoots(ctx, mcp.InputKey("client_roots"))
			if err != nil {
				return askFailed("roots", err)
			}
			return mcp.TextResult("The client's roots: " + rootList(res)), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_input_required_result_request_state",
		Description: "Asks the user to confirm; on the retry, says whether it came with a requestState the server verified."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Please confirm", RequestedSchema: confirmSchema}, mcp.InputKey("confirm"))
			if err != nil {
				return askFailed("elicitation", err)
			}
			// The mcp package verified the requestState (its signature, expiry and binding to
			// this call) before running the handler again: a state that failed was answered
			// with -32602 and never reached here.
			state := "no requestState came with the answer"
			if jsonrpc.Field(req.Params(), "requestState") != nil {
				state = "state-ok: the requestState came back intact and bound to this call"
			}
			return elicitResult("Confirmation ("+state+")", res), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_input_required_result_multiple_inputs",
		Description: "Asks three questions at once: the user's name, a greeting from the client's model, and the client's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			// All three are asked before any answer is needed, so that a 2026-07-28 client gets
			// them in one input_required result.
			user, errU := req.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema}, mcp.InputKey("user_name"))
			greeting, errG := req.CreateMessage(ctx, &mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: "user", Content: textBlock("Generate a greeting")}},
				MaxTokens: 50,
			}, mcp.InputKey("greeting"))
			roots, errR := req.ListRoots(ctx, mcp.InputKey("client_roots"))
			if err := firstAskError(errU, errG, errR); err != nil {
				return askFailed("input", err)
			}
			return mcp.TextResult(fmt.Sprintf("%s\nThe client's model: %s\nThe client's roots: %s",
				greet(user).Content[0].(*mcp.TextContent).Text, samplingText(greeting.Content), rootList(roots))), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_input_required_result_multi_round",
		Description: "Asks the user's name, and once it is known, their favourite colour: two rounds."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			name, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Step 1: What is your name?", RequestedSchema: nameSchema}, mcp.InputKey("step1"))
			if err != nil {
				return askFailed("elicitation", err)
			}
			color, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Step 2: What is your favorite color?", RequestedSchema: colorSchema}, mcp.InputKey("step2"))
			if err != nil {
				return askFailed("elicitation", err)
			}
			return mcp.TextResult(fmt.Sprintf("%s likes %s", field(name, "name"), field(color, "color"))), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_input_required_result_tampered_state",
		Description: "Asks the user to confirm; a retry whose requestState was altered is refused (-32602)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Please confirm", RequestedSchema: confirmSchema}, mcp.InputKey("confirm"))
			if err != nil {
				return askFailed("elicitation", err)
			}
			return elicitResult("Confirmation", res), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_input_required_result_capabilities",
		Description: "Asks the client only what its declared capabilities allow: sampling, elicitation, roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			var caps map[string]json.RawMessage
			json.Unmarshal(req.ClientCapabilities(), &caps)
			declared := func(c string) bool { v, ok := caps[c]; return ok && string(v) != "null" && string(v) != "false" }
			var parts []string
			var errs []error
			if declared("sampling") {
				res, err := req.CreateMessage(ctx, &mcp.CreateMessageParams{
					Messages:  []mcp.SamplingMessage{{Role: "user", Content: textBlock("Say hello.")}},
					MaxTokens: 20,
				})
				if errs = append(errs, err); err == nil {
					parts = append(parts, "the client's model: "+samplingText(res.Content))
				}
			}
			if declared("elicitation") {
				res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema})
				if errs = append(errs, err); err == nil {
					parts = append(parts, "the user: "+field(res, "name"))
				}
			}
			if declared("roots") {
				res, err := req.ListRoots(ctx)
				if errs = append(errs, err); err == nil {
					parts = append(parts, "the client's roots: "+rootList(res))
				}
			}
			if err := firstAskError(errs...); err != nil {
				return askFailed("input", err)
			}
			if parts == nil {
				return mcp.TextResult("The client declared no capability to ask it anything with."), nil
			}
			return mcp.TextResult("Asked what the client declared; " + strings.Join(parts, "; ")), nil
		})

	s.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt",
		Description: "A prompt that asks the user for its context (elicitation/create) before it is built."},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "What context should the prompt use?", RequestedSchema: contextSchema}, mcp.InputKey("user_context"))
			if err != nil {
				return nil, err // a prompt has no tool-error result: every failure is the protocol's
			}
			if res.Action != "accept" {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
					{Role: "user", Content: &mcp.TextContent{Text: "Answer without any particular context."}},
				}}, nil
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Use this context: " + field(res, "context")}},
			}}, nil
		})
}

// firstAskError returns what a handler that asked several questions at once must return: a
// protocol error (a capability the client did not declare) before ErrInputRequired, so that
// no input_required result asks what the client cannot answer, and any other error last.
func firstAskError(errs ...error) error {
	var input, other error
	for _, err := range errs {
		var rpc *jsonrpc.Error
		switch {
		case err == nil:
		case errors.As(err, &rpc):
			return err
		case errors.Is(err, mcp.ErrInputRequired):
			input = err
		case other == nil:
			other = err
		}
	}
	if input != nil {
		return input
	}
	return other
}

// greet is the answer to the user who gave their name, or did not.
func greet(res *mcp.ElicitResult) *mcp.CallToolResult {
	if res.Action != "accept" {
		return mcp.TextResult("The user did not give their name (" + res.Action + ").")
	}
	return mcp.TextResult("Hello, " + field(res, "name") + "!")
}

// field returns a member of an accepted elicitation's content as text.
func field(res *mcp.ElicitResult, name string) string {
	if res.Action != "accept" {
		return "(" + res.Action + ")"
	}
	return fmt.Sprint(res.Content[name])
}

func rootList(res *mcp.ListRootsResult) string {
	if len(res.Roots) == 0 {
		return "(none)"
	}
	var out []string
	for _, r := range res.Roots {
		out = append(out, r.URI)
	}
	return strings.Join(out, ", ")
}
