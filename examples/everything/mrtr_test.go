package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/relayrt/relay/jsonrpc"
)

// answers are what a client answers, by the method of the question.
var answers = map[string]any{
	"elicitation/create":     map[string]any{"action": "accept", "content": map[string]any{"name": "Alice", "color": "blue", "ok": true, "context": "a test"}},
	"sampling/createMessage": map[string]any{"role": "assistant", "model": "test-model", "stopReason": "endTurn", "content": map[string]any{"type": "text", "text": "Hello there!"}},
	"roots/list":             map[string]any{"roots": []any{map[string]any{"uri": "file:///test/root", "name": "Test Root"}}},
}

// round sends one round of a 2026-07-28 request: params and, when prev is not nil, the
// answers to its questions and its requestState echoed. It returns the result as an
// inputRequired (ResultType says which it is) and as raw JSON.
func (c *client) round(method string, params map[string]any, prev *inputRequired) (inputRequired, json.RawMessage) {
	c.t.Helper()
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	if prev != nil {
		responses := map[string]any{}
		for key, q := range prev.InputRequests {
			responses[key] = answers[q.Method]
		}
		p["inputResponses"] = responses
		p["requestState"] = prev.RequestState
	}
	r := c.call(method, p)
	c.decode(method, r)
	var ir inputRequired
	json.Unmarshal(r.Result, &ir)
	return ir, r.Result
}

func (ir inputRequired) methods() []string {
	var out []string
	for _, q := range ir.InputRequests {
		out = append(out, q.Method)
	}
	slices.Sort(out)
	return out
}

func tool(name string) map[string]any {
	return map[string]any{"name": name, "arguments": map[string]any{}}
}

// MCP 2026-07-28, Basic › Multi Round-Trip Requests: a handler that asks several questions
// before it needs any answer asks them all in one input_required result; a retry that answers
// some is asked the rest, and one that answers all completes.
func TestA6_MultipleInputsAskedTogether(t *testing.T) {
	c := open(t, eras[1], bothAsks)
	params := tool("test_input_required_result_multiple_inputs")
	first, raw := c.round("tools/call", params, nil)
	want := []string{"elicitation/create", "roots/list", "sampling/createMessage"}
	if first.ResultType != "input_required" || !slices.Equal(first.methods(), want) || first.RequestState == "" {
		t.Fatalf("A6: one input_required result with all three questions and a requestState: %s", raw)
	}

	// Answer only the elicitation: the other two are asked again.
	partial := first
	partial.InputRequests = only(first, "elicitation/create")
	again, raw := c.round("tools/call", params, &partial)
	if again.ResultType != "input_required" || !slices.Equal(again.methods(), []string{"roots/list", "sampling/createMessage"}) {
		t.Fatalf("A6: a retry that answers one question is asked the other two: %s", raw)
	}
	// The new state carries the answer already given: the last round answers the rest.
	done, raw := c.round("tools/call", params, &again)
	if done.ResultType != "complete" {
		t.Fatalf("A6: all answered, the call completes: %s", raw)
	}
	for _, w := range []string{"Hello, Alice!", "Hello there!", "file:///test/root"} {
		if !strings.Contains(string(raw), w) {
			t.Errorf("the result reports every answer (%q): %s", w, raw)
		}
	}

	legacy := open(t, eras[0], bothAsks)
	legacy.answer = func(m msg) any { return answers[m.Method] }
	tr, _ := legacy.callTool("test_input_required_result_multiple_inputs", nil, nil)
	var asked []string
	for _, m := range legacy.asked {
		asked = append(asked, m.Method)
	}
	if !slices.Equal(asked, []string{"elicitation/create", "sampling/createMessage", "roots/list"}) || tr.IsError {
		t.Errorf("B1: the initialize generation is asked the three questions in turn: %v, %s", asked, tr)
	}
}

// only returns the questions of ir whose method is method.
func only(ir inputRequired, method string) map[string]question {
	out := map[string]question{}
	for k, q := range ir.InputRequests {
		if q.Method == method {
			out[k] = q
		}
	}
	return out
}

// Multi Round-Trip Requests: a question that depends on an earlier answer is asked in a later
// round, with a new requestState.
func TestA6_MultiRoundAsksTheSecondQuestionOnceTheFirstIsAnswered(t *testing.T) {
	c := open(t, eras[1], bothAsks)
	params := tool("test_input_required_result_multi_round")
	r1, raw := c.round("tools/call", params, nil)
	if r1.ResultType != "input_required" || len(r1.InputRequests) != 1 || !strings.Contains(string(raw), "Step 1") {
		t.Fatalf("round 1 asks step 1 only: %s", raw)
	}
	r2, raw := c.round("tools/call", params, &r1)
	if r2.ResultType != "input_required" || len(r2.InputRequests) != 1 || !strings.Contains(string(raw), "Step 2") ||
		r2.RequestState == r1.RequestState {
		t.Fatalf("round 2 asks step 2 only, with a new requestState: %s", raw)
	}
	r3, raw := c.round("tools/call", params, &r2)
	if r3.ResultType != "complete" || !strings.Contains(string(raw), "Alice likes blue") {
		t.Fatalf("round 3 completes with both answers, the first from the state: %s", raw)
	}
}

// Multi Round-Trip Requests: the server only asks for input kinds the client declared.
func TestA6_AsksOnlyWhatTheClientDeclared(t *testing.T) {
	cases := map[string]struct {
		caps map[string]any
		want []string
	}{
		"sampling-only": {map[string]any{"sampling": map[string]any{}}, []string{"sampling/createMessage"}},
		"elicitation-and-roots": {map[string]any{"elicitation": map[string]any{}, "roots": map[string]any{}},
			[]string{"elicitation/create", "roots/list"}},
		"all": {bothAsks, []string{"elicitation/create", "roots/list", "sampling/createMessage"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := open(t, eras[1], tc.caps)
			ir, raw := c.round("tools/call", tool("test_input_required_result_capabilities"), nil)
			if ir.ResultType != "input_required" || !slices.Equal(ir.methods(), tc.want) {
				t.Fatalf("want questions %v: %s", tc.want, raw)
			}
			if done, raw := c.round("tools/call", tool("test_input_required_result_capabilities"), &ir); done.ResultType != "complete" {
				t.Errorf("answered, the call completes: %s", raw)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		c := open(t, eras[1], map[string]any{})
		ir, raw := c.round("tools/call", tool("test_input_required_result_capabilities"), nil)
		if ir.ResultType != "complete" || !strings.Contains(string(raw), "declared no capability") {
			t.Errorf("a client that declared nothing is asked nothing: %s", raw)
		}
	})
}

// Multi Round-Trip Requests: the answer of a retry comes with the requestState the server
// verified (the tool says state-ok), and an altered one is refused with -32602.
func TestA6_RequestStateIsVerifiedAndATamperedOneRefused(t *testing.T) {
	c := open(t, eras[1], bothAsks)
	params := tool("test_input_required_result_request_state")
	ir, _ := c.round("tools/call", params, nil)
	if done, raw := c.round("tools/call", params, &ir); done.ResultType != "complete" || !strings.Contains(string(raw), "state-ok") {
		t.Errorf("the retry with the state completes and says state-ok: %s", raw)
	}

	params = tool("test_input_required_result_tampered_state")
	ir, _ = c.round("tools/call", params, nil)
	key := ""
	for k := range ir.InputRequests {
		key = k
	}
	r := c.call("tools/call", map[string]any{"name": "test_input_required_result_tampered_state", "arguments": map[string]any{},
		"inputResponses": map[string]any{key: answers["elicitation/create"]}, "requestState": ir.RequestState + "-TAMPERED"})
	if r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("A6: a tampered requestState is refused with -32602: %s %+v", r.Result, r.Error)
	}
}

// Multi Round-Trip Requests apply to prompts/get too; the initialize generation asks with a
// server request.
func TestA6_B1_PromptAsksForItsContext(t *testing.T) {
	c := open(t, eras[1], bothAsks)
	params := map[string]any{"name": "test_input_required_result_prompt"}
	ir, raw := c.round("prompts/get", params, nil)
	if ir.ResultType != "input_required" || !slices.Equal(ir.methods(), []string{"elicitation/create"}) {
		t.Fatalf("A6: prompts/get asks for the context first: %s", raw)
	}
	done, raw := c.round("prompts/get", params, &ir)
	if done.ResultType != "complete" || !strings.Contains(string(raw), "Use this context: a test") {
		t.Errorf("A6: the retry builds the prompt from the answer: %s", raw)
	}

	legacy := open(t, eras[0], bothAsks)
	legacy.answer = func(m msg) any { return answers[m.Method] }
	res := legacy.mustResult("prompts/get", params)
	if raw, _ := json.Marshal(res); len(legacy.asked) != 1 || !strings.Contains(string(raw), "Use this context: a test") {
		t.Errorf("B1: the prompt asks with elicitation/create and uses the answer: %s", raw)
	}
}
