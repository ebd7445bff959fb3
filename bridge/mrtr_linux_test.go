package bridge_test

// Linux only, as the legacy test child it uses (legacy_test.go).

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/relayrt/relay/mcp"
)

// TestA6_ModernClientAnswersALegacyChildsQuestion: a 2026-07-28 client's tools/call through
// `relay bridge` to a child of the initialize generation that asks its client for a sampling
// while serving it (a request of its own, which 2026-07-28 has no place for). The client gets
// input_required with the child's question (MCP 2026-07-28, Basic › Patterns › Multi
// Round-Trip Requests); its retry, with the answer and the requestState, reaches the same
// call, still waiting in the child, and gets the child's result. A request that did not
// declare sampling gets -32021 naming it; an unknown requestState gets -32602.
func TestA6_ModernClientAnswersALegacyChildsQuestion(t *testing.T) {
	r := startRelay(t, []string{"--pool", "2", "--spares", "0"}, legacyChildCommand(t))
	ctx := t.Context()
	callWith := func(id int, caps map[string]any, extra map[string]any) rpcReply {
		t.Helper()
		params := map[string]any{"name": "ask", "arguments": map[string]any{"text": "two and two"}}
		for k, v := range extra {
			params[k] = v
		}
		rep, err := r.callCaps(ctx, id, "tools/call", params, caps)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	sampling := map[string]any{"sampling": map[string]any{}}

	first := callWith(1, sampling, nil)
	var ir struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string
			Params struct {
				Messages []struct{ Content struct{ Text string } }
			}
		} `json:"inputRequests"`
		RequestState string `json:"requestState"`
	}
	if first.Error != nil || json.Unmarshal(first.Result, &ir) != nil || ir.ResultType != "input_required" || ir.RequestState == "" {
		t.Fatalf("first round: %v; want input_required with a requestState", first)
	}
	var key string
	for k, q := range ir.InputRequests {
		key = k
		if q.Method != "sampling/createMessage" || len(q.Params.Messages) != 1 || q.Params.Messages[0].Content.Text != "two and two" {
			t.Errorf("input request %s: %+v; want the child's sampling/createMessage", k, q)
		}
	}
	if len(ir.InputRequests) != 1 {
		t.Fatalf("input requests %v; want the child's one question", ir.InputRequests)
	}
	answer := map[string]any{key: map[string]any{"role": "assistant", "model": "m",
		"content": map[string]any{"type": "text", "text": "four"}}}
	second := callWith(2, sampling, map[string]any{"inputResponses": answer, "requestState": ir.RequestState})
	if second.Error != nil || second.text() != "sampled: four" || !strings.Contains(string(second.Result), `"resultType":"complete"`) {
		t.Errorf("the retry: %v; want the child's result with the client's answer, sampled: four", second)
	}

	// The same request again, with the same requestState: the call it named is over.
	if again := callWith(3, sampling, map[string]any{"inputResponses": answer, "requestState": ir.RequestState}); again.Error == nil || again.Error.Code != -32602 {
		t.Errorf("a retry with a spent requestState: %v; want -32602", again)
	}

	undeclared := callWith(4, map[string]any{}, nil)
	if undeclared.Error == nil || undeclared.Error.Code != mcp.CodeMissingRequiredClientCapability ||
		!strings.Contains(string(undeclared.Error.Data), `"requiredCapabilities":{"sampling":{}}`) {
		t.Errorf("without sampling declared: %v; want -32021 naming sampling", undeclared)
	}
	// The child was told no, and serves on.
	if rep := callWith(5, sampling, nil); rep.Error != nil || !strings.Contains(string(rep.Result), "input_required") {
		t.Errorf("after a refusal: %v; want input_required again", rep)
	}
}
