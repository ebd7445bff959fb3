package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/relayrt/relay/mcp"
)

var weatherTool = &mcp.Tool{Name: "get_weather", Description: "Weather of a city.",
	InputSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"city": {Type: "string"}}}}

// agent is a tool that runs a sampling loop with tools: it offers get_weather, runs each tool
// use the model asks for, and asks again with the results, until the model ends its turn.
func agent(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
	msgs := []mcp.SamplingMessage{mcp.NewSamplingMessage("user", &mcp.TextContent{Text: "Weather in Paris?"})}
	for round := 0; round < 3; round++ {
		p := &mcp.CreateMessageParams{Messages: msgs, MaxTokens: 100, Tools: []*mcp.Tool{weatherTool},
			ToolChoice: &mcp.ToolChoice{Mode: mcp.ToolChoiceAuto}}
		if round == 2 {
			p.ToolChoice.Mode = mcp.ToolChoiceNone // the last round must answer
		}
		res, err := req.CreateMessage(ctx, p, mcp.InputKey(fmt.Sprint("round-", round)))
		if err != nil {
			return nil, err
		}
		blocks, err := res.Blocks()
		if err != nil {
			return nil, err
		}
		if res.StopReason != "toolUse" {
			return mcp.TextResult(blocks[0].(*mcp.TextContent).Text), nil
		}
		var results []mcp.SamplingContent
		for _, b := range blocks {
			if use, ok := b.(*mcp.ToolUseContent); ok {
				var args struct{ City string }
				json.Unmarshal(use.Input, &args)
				results = append(results, &mcp.ToolResultContent{ToolUseID: use.ID,
					Content: []mcp.Content{&mcp.TextContent{Text: "18°C in " + args.City}}})
			}
		}
		msgs = append(msgs, mcp.SamplingMessage{Role: "assistant", Content: res.Content},
			mcp.NewSamplingMessage("user", results...))
	}
	return mcp.ErrorResult("the model never ended its turn"), nil
}

func TestSamplingWithTools_Legacy_ToolUseThenToolResult(t *testing.T) {
	// 2025-11-25 Client Features › Sampling › Tool use: tools and toolChoice go to a client
	// that declared sampling.tools; tool_use blocks come back, and the next request carries
	// the assistant's tool uses and a user message of tool_result blocks with matching IDs.
	s := mcp.NewServer(mcp.Implementation{Name: "m", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "agent"}, agent)
	c := connect(t, s)
	legacyInit(c, `{"sampling":{"tools":{}}}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent"}}`)

	ask := c.recv()
	var first struct {
		Params struct {
			Tools      []map[string]any
			ToolChoice map[string]any
			Messages   []struct{ Role string }
		}
	}
	json.Unmarshal(ask["params"], &first.Params)
	if len(first.Params.Tools) != 1 || first.Params.Tools[0]["name"] != "get_weather" || first.Params.Tools[0]["inputSchema"] == nil ||
		first.Params.ToolChoice["mode"] != "auto" {
		t.Fatalf("first request must offer the tool and the choice: %s", ask["params"])
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","model":"m","stopReason":"toolUse",`+
		`"content":[{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}]}}`, ask["id"]))

	ask = c.recv()
	var second struct {
		Messages []struct {
			Role    string
			Content json.RawMessage
		}
	}
	json.Unmarshal(ask["params"], &second)
	if len(second.Messages) != 3 || second.Messages[1].Role != "assistant" || second.Messages[2].Role != "user" {
		t.Fatalf("second request: %s", ask["params"])
	}
	var res map[string]any // one block: an object
	json.Unmarshal(second.Messages[2].Content, &res)
	if res["type"] != "tool_result" || res["toolUseId"] != "call_1" ||
		!strings.Contains(string(second.Messages[2].Content), `"content":[{"type":"text","text":"18°C in Paris"}]`) {
		t.Fatalf("the tool result must answer call_1 in the schema's shape: %s", second.Messages[2].Content)
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","model":"m","stopReason":"endTurn",`+
		`"content":{"type":"text","text":"Mild, 18°C."}}}`, ask["id"]))
	if m := c.recv(); !strings.Contains(string(m["result"]), "Mild, 18°C.") {
		t.Fatalf("got %v", m)
	}
}

func TestSamplingWithTools_NeedsSamplingTools(t *testing.T) {
	// Servers MUST NOT send tool-enabled sampling requests to clients that have not declared
	// sampling.tools: -32021 naming it under 2026-07-28; a tool error before.
	s := mcp.NewServer(mcp.Implementation{Name: "m", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "agent"}, agent)
	c := connect(t, s)
	m := c.call(1, "tools/call", `{"name":"agent","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
		`"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}`)
	if code(m) != -32021 || !strings.Contains(string(m["error"]), `"requiredCapabilities":{"sampling":{"tools":{}}}`) {
		t.Fatalf("2026-07-28: %s", m["error"])
	}
	c2 := connect(t, s)
	legacyInit(c2, `{"sampling":{}}`)
	r := result(t, c2.call(2, "tools/call", `{"name":"agent"}`))
	if r["isError"] != true || !strings.Contains(fmt.Sprint(r["content"]), "sampling.tools") {
		t.Fatalf("2025-11-25: %v", r)
	}
}

func TestSamplingWithTools_Modern_InputRequiredCarriesTools(t *testing.T) {
	// 2026-07-28: the same loop asks through input_required; the retry's answer is decoded.
	s := mcp.NewServer(mcp.Implementation{Name: "m", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "agent"}, agent)
	c := connect(t, s)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{"tools":{}}}}`
	r := result(t, c.call(1, "tools/call", `{"name":"agent",`+meta+`}`))
	ask, _ := r["inputRequests"].(map[string]any)["round-0"].(map[string]any)
	params, _ := ask["params"].(map[string]any)
	if ask["method"] != "sampling/createMessage" || params["tools"] == nil {
		t.Fatalf("round 0 must ask for sampling with tools: %v", r)
	}
	r = result(t, c.call(2, "tools/call", fmt.Sprintf(`{"name":"agent","requestState":%q,"inputResponses":{"round-0":`+
		`{"role":"assistant","model":"m","stopReason":"endTurn","content":[{"type":"text","text":"Sunny."}]}},%s}`, r["requestState"], meta)))
	if r["resultType"] != "complete" || !strings.Contains(fmt.Sprint(r["content"]), "Sunny.") {
		t.Fatalf("retry: %v", r)
	}
}

func TestSamplingMessages_ToolResultRules(t *testing.T) {
	// 2025-11-25 Sampling › Tool use: a message of tool results holds nothing else, and every
	// tool use is answered by the next message, each by its ID.
	use := func(id string) mcp.SamplingMessage {
		return mcp.NewSamplingMessage("assistant", &mcp.ToolUseContent{ID: id, Name: "get_weather"})
	}
	answer := func(id string) mcp.SamplingContent { return &mcp.ToolResultContent{ToolUseID: id} }
	cases := []struct {
		rule string
		msgs []mcp.SamplingMessage
		ok   bool
	}{
		{"use then its result", []mcp.SamplingMessage{use("a"), mcp.NewSamplingMessage("user", answer("a"))}, true},
		{"a result for an unknown use", []mcp.SamplingMessage{use("a"), mcp.NewSamplingMessage("user", answer("b"))}, false},
		{"a use left unanswered", []mcp.SamplingMessage{use("a"), mcp.NewSamplingMessage("user", &mcp.TextContent{Text: "?"})}, false},
		{"results mixed with text", []mcp.SamplingMessage{use("a"), mcp.NewSamplingMessage("user", answer("a"), &mcp.TextContent{Text: "x"})}, false},
		{"the conversation ends on a use", []mcp.SamplingMessage{use("a")}, false},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			s := mcp.NewServer(mcp.Implementation{Name: "m", Version: "1"}, nil)
			mcp.AddTool(s, &mcp.Tool{Name: "x"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
				_, err := req.CreateMessage(ctx, &mcp.CreateMessageParams{Messages: tc.msgs, MaxTokens: 1})
				return nil, err
			})
			c := connect(t, s)
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{"tools":{}}}}`
			r := result(t, c.call(1, "tools/call", `{"name":"x",`+meta+`}`))
			if got := r["resultType"] == "input_required"; got != tc.ok {
				t.Fatalf("accepted=%v, want %v: %v", got, tc.ok, r)
			}
		})
	}
}

func TestDecodeSamplingContent_RoundTrip(t *testing.T) {
	msg := mcp.NewSamplingMessage("user",
		&mcp.ToolResultContent{ToolUseID: "u1", IsError: true, StructuredContent: map[string]any{"k": 1.0},
			Content: []mcp.Content{&mcp.TextContent{Text: "t"}, &mcp.ResourceLink{URI: "x://y", Name: "y"}}},
		&mcp.ToolUseContent{ID: "u2", Name: "n", Input: json.RawMessage(`{"a":1}`)})
	want := `[{"type":"tool_result","toolUseId":"u1","content":[{"type":"text","text":"t"},{"type":"resource_link","uri":"x://y","name":"y"}],` +
		`"structuredContent":{"k":1},"isError":true},{"type":"tool_use","id":"u2","name":"n","input":{"a":1}}]`
	if string(msg.Content) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", msg.Content, want)
	}
	blocks, err := mcp.DecodeSamplingContent(msg.Content)
	if err != nil {
		t.Fatal(err)
	}
	again := mcp.NewSamplingMessage("user", blocks...)
	if string(again.Content) != want {
		t.Fatalf("decode and encode again:\n%s", again.Content)
	}
	if one := mcp.NewSamplingMessage("user", &mcp.ToolUseContent{ID: "i", Name: "n"}); string(one.Content) != `{"type":"tool_use","id":"i","name":"n","input":{}}` {
		t.Fatalf("one block is an object, and input defaults to {}: %s", one.Content)
	}
	if _, err := mcp.DecodeSamplingContent(json.RawMessage(`{"type":"hologram"}`)); err == nil || !strings.Contains(err.Error(), "hologram") {
		t.Fatalf("an unknown block type must be an error naming it: %v", err)
	}
}
