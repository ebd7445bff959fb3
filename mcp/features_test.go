package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.uber.org/zap"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

func TestPagination_OpaqueCursorsAnyProcessCanContinue(t *testing.T) {
	// DIGEST A14: deterministic order; cursors do not depend on the process that issued them.
	build := func() *mcp.Server {
		s := mcp.NewServer(mcp.Implementation{Name: "p", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
		for _, n := range []string{"e", "a", "d", "c", "b"} {
			mcp.AddTool(s, &mcp.Tool{Name: n}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
				return nil, nil
			})
		}
		return s
	}
	one, two := connect(t, build()), connect(t, build())
	var names []string
	cursor := ""
	for i := 0; i < 5; i++ {
		c := one
		if i%2 == 1 {
			c = two // continue the listing on another server process
		}
		params := `{` + modernMeta + `}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q,%s}`, cursor, modernMeta)
		}
		r := result(t, c.call(i+1, "tools/list", params))
		for _, tl := range r["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		next, _ := r["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if strings.Join(names, "") != "abcde" {
		t.Fatalf("paged listing = %v, want a b c d e", names)
	}
}

func TestMRTR_InputRequiredThenRetry(t *testing.T) {
	// DIGEST A6: input_required with a signed requestState; the retry re-runs the handler.
	s := mcp.NewServer(mcp.Implementation{Name: "m", Version: "1"}, nil)
	runs := 0
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		runs++
		first, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "name?"})
		if err != nil {
			return nil, err
		}
		second, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "really?"})
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(fmt.Sprint(first.Content["name"], "/", second.Action)), nil
	})
	c := connect(t, s)
	caps := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

	r := result(t, c.call(1, "tools/call", `{"name":"ask",`+caps+`}`))
	if r["resultType"] != "input_required" || r["ttlMs"] != nil {
		t.Fatalf("round 1: %v", r)
	}
	reqs := r["inputRequests"].(map[string]any)
	if len(reqs) != 1 || reqs["elicitation-0"].(map[string]any)["method"] != "elicitation/create" {
		t.Fatalf("round 1 input requests: %v", reqs)
	}
	state := r["requestState"].(string)

	// Round 2: answer the first question; the handler re-runs and asks the second.
	r = result(t, c.call(2, "tools/call", fmt.Sprintf(
		`{"name":"ask","inputResponses":{"elicitation-0":{"action":"accept","content":{"name":"Ada"}}},"requestState":%q,%s}`, state, caps)))
	if r["resultType"] != "input_required" || r["inputRequests"].(map[string]any)["elicitation-1"] == nil {
		t.Fatalf("round 2: %v", r)
	}
	state2 := r["requestState"].(string)

	// Round 3: only the newest answer is sent; the first comes back from requestState.
	r = result(t, c.call(3, "tools/call", fmt.Sprintf(
		`{"name":"ask","inputResponses":{"elicitation-1":{"action":"decline"}},"requestState":%q,%s}`, state2, caps)))
	content := r["content"].([]any)[0].(map[string]any)["text"]
	if r["resultType"] != "complete" || content != "Ada/decline" || runs != 3 {
		t.Fatalf("round 3: %v (runs %d)", r, runs)
	}

	// A forged or re-targeted requestState is refused.
	forged := state2[:len(state2)-2] + "AA"
	if m := c.call(4, "tools/call", fmt.Sprintf(`{"name":"ask","requestState":%q,%s}`, forged, caps)); code(m) != -32602 {
		t.Errorf("forged requestState: %s", m["error"])
	}
	if m := c.call(5, "tools/call", fmt.Sprintf(`{"name":"ask","arguments":{"x":1},"requestState":%q,%s}`, state2, caps)); code(m) != -32602 {
		t.Errorf("requestState replayed with other arguments: %s", m["error"])
	}
}

func TestMRTR_MissingCapabilityIs32021(t *testing.T) {
	// DIGEST A2: a capability the request did not declare: -32021 with data.requiredCapabilities.
	s := mcp.NewServer(mcp.Implementation{Name: "m", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "sample"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		_, err := req.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5})
		return nil, err
	})
	c := connect(t, s)
	m := c.call(1, "tools/call", `{"name":"sample",`+modernMeta+`}`)
	if code(m) != -32021 || !strings.Contains(string(m["error"]), `"requiredCapabilities":{"sampling":{}}`) {
		t.Fatalf("got %s", m["error"])
	}
}

func TestLegacy_ServerToClientRequestRoutedBack(t *testing.T) {
	// DIGEST B1: under the initialize generation the same handler asks the client directly.
	s := mcp.NewServer(mcp.Implementation{Name: "m", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "sample"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		res, err := req.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
			Messages: []mcp.SamplingMessage{{Role: "user", Content: json.RawMessage(`{"type":"text","text":"hi"}`)}}})
		if err != nil {
			return nil, err
		}
		return mcp.TextResult("model said " + res.Model), nil
	})
	c := connect(t, s)
	result(t, c.call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"c","version":"1"}}`))
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sample"}}`)
	ask := c.recv()
	if string(ask["method"]) != `"sampling/createMessage"` {
		t.Fatalf("want a sampling request, got %v", ask)
	}
	// A response to a request nobody sent is dropped, not answered.
	c.send(`{"jsonrpc":"2.0","id":"nobody","result":{}}`)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"x"},"model":"m1"}}`, ask["id"]))
	m := c.recv()
	if string(m["id"]) != "2" || !strings.Contains(string(m["result"]), "model said m1") {
		t.Fatalf("got %v", m)
	}
}

func TestListen_AcknowledgedFirstThenTaggedNotifications(t *testing.T) {
	// DIGEST A9.
	s := newServer(t)
	c := connect(t, s)
	c.send(`{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true},` + modernMeta + `}}`)
	ack := c.recv()
	if string(ack["method"]) != `"notifications/subscriptions/acknowledged"` {
		t.Fatalf("first message %v", ack)
	}
	var p struct {
		Notifications map[string]any
		Meta          map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(ack["params"], &p)
	if string(p.Meta["io.modelcontextprotocol/subscriptionId"]) != `"sub-1"` {
		t.Errorf("ack lacks the subscription id: %s", ack["params"])
	}
	if p.Notifications["promptsListChanged"] == true {
		t.Errorf("honoured prompts without a prompts capability: %v", p.Notifications)
	}
	mcp.AddTool(s, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
		return nil, nil
	})
	n := c.recv()
	if string(n["method"]) != `"notifications/tools/list_changed"` || !strings.Contains(string(n["params"]), `"sub-1"`) {
		t.Fatalf("list change %v", n)
	}
	// At EOF the stream ends with a complete result carrying the subscription id.
	c.conn.CloseInput()
	end := c.recv()
	if string(end["id"]) != `"sub-1"` || !strings.Contains(string(end["result"]), `"resultType":"complete"`) ||
		!strings.Contains(string(end["result"]), `"io.modelcontextprotocol/subscriptionId":"sub-1"`) {
		t.Fatalf("end of stream %v", end)
	}
}

// ServerOptions.DeclareLists: a server with nothing yet declares the lists, serves them
// empty, and a listen opened then hears of the first tool (DIGEST A9).
func TestListen_DeclaredListsAreHonouredWhileEmpty(t *testing.T) {
	s := mcp.NewServer(mcp.Implementation{Name: "later", Version: "1"}, &mcp.ServerOptions{DeclareLists: true})
	c := connect(t, s)
	caps := result(t, c.call(1, "server/discover", `{`+modernMeta+`}`))["capabilities"].(map[string]any)
	for _, list := range []string{"tools", "prompts", "resources"} {
		if caps[list] == nil {
			t.Errorf("%s not declared: %v", list, caps)
		}
	}
	if tools := result(t, c.call(2, "tools/list", `{`+modernMeta+`}`))["tools"]; tools == nil || len(tools.([]any)) != 0 {
		t.Errorf("tools/list while empty: %v", tools)
	}
	c.send(`{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`)
	if ack := c.recv(); !strings.Contains(string(ack["params"]), `"toolsListChanged":true`) {
		t.Fatalf("acknowledged %s, want toolsListChanged honoured", ack["params"])
	}
	mcp.AddTool(s, &mcp.Tool{Name: "first"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
		return nil, nil
	})
	if n := c.recv(); string(n["method"]) != `"notifications/tools/list_changed"` {
		t.Fatalf("want list_changed, got %v", n)
	}
}

// ServerOptions.Cache gives each cacheable result's ttlMs and cacheScope (DIGEST: ttlMs
// and cacheScope are required on complete cacheable results).
func TestCache_PerMethodTTLAndScope(t *testing.T) {
	s := mcp.NewServer(mcp.Implementation{Name: "c", Version: "1"}, &mcp.ServerOptions{
		Cache: func(method string) (time.Duration, bool) {
			if method == "tools/list" {
				return 1500 * time.Millisecond, true
			}
			return 0, false
		}})
	mcp.AddTool(s, &mcp.Tool{Name: "t"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
		return nil, nil
	})
	c := connect(t, s)
	if r := result(t, c.call(1, "tools/list", `{`+modernMeta+`}`)); r["ttlMs"] != 1500.0 || r["cacheScope"] != "private" {
		t.Errorf("tools/list: ttlMs %v cacheScope %v, want 1500 private", r["ttlMs"], r["cacheScope"])
	}
	if r := result(t, c.call(2, "server/discover", `{`+modernMeta+`}`)); r["ttlMs"] != 0.0 || r["cacheScope"] != "public" {
		t.Errorf("server/discover: ttlMs %v cacheScope %v, want 0 public", r["ttlMs"], r["cacheScope"])
	}
}

func TestLegacy_SubscribeAndListChanged(t *testing.T) {
	// DIGEST B1: resources/subscribe, notifications/resources/updated, list_changed.
	s := mcp.NewServer(mcp.Implementation{Name: "r", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "test://a", Name: "a"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, Text: "A"}}}, nil
	})
	c := connect(t, s)
	result(t, c.call(1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{}}`))
	if m := c.call(2, "logging/setLevel", `{"level":"loud"}`); code(m) != -32602 {
		t.Errorf("invalid log level: %s", m["error"])
	}
	result(t, c.call(3, "resources/subscribe", `{"uri":"test://a"}`))
	s.ResourceUpdated("test://other") // not subscribed: nothing
	s.ResourceUpdated("test://a")
	if n := c.recv(); string(n["method"]) != `"notifications/resources/updated"` || !strings.Contains(string(n["params"]), "test://a") {
		t.Fatalf("want the update, got %v", n)
	}
	if m := c.call(4, "resources/read", `{"uri":"test://missing"}`); code(m) != -32002 {
		t.Errorf("legacy resource not found: %s", m["error"])
	}
	s.RemoveResources("test://a")
	if n := c.recv(); string(n["method"]) != `"notifications/resources/list_changed"` {
		t.Fatalf("want list_changed, got %v", n)
	}
}

func TestMiddlewareSeesPrincipalAndTimeoutAnswers(t *testing.T) {
	var seen []string
	s := mcp.NewServer(mcp.Implementation{Name: "mw", Version: "1"}, &mcp.ServerOptions{
		RequestTimeout: 20 * time.Millisecond,
		Middleware: []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, req *mcp.Request) (any, error) {
				who := "anonymous"
				if p := runtime.PrincipalFrom(ctx); p != nil {
					who = p.ID
				}
				seen = append(seen, req.Method()+" by "+who)
				return next(ctx, req)
			}
		}},
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx := runtime.WithPrincipal(context.Background(), &runtime.Principal{ID: "alice"})
	conn := s.Runtime(runtime.WithLogger(zap.NewNop())).Connect(ctx)
	defer conn.Close()
	c := &client{t: t, conn: conn}
	m := c.call(1, "tools/call", `{"name":"slow",`+modernMeta+`}`)
	if code(m) != mcp.CodeServerBusy || !strings.Contains(string(m["error"]), "timed out") {
		t.Errorf("timeout: %s", m["error"])
	}
	if len(seen) != 1 || seen[0] != "tools/call by alice" {
		t.Errorf("middleware saw %v", seen)
	}
}

func TestOutputSchema_StructuredContentMustConform(t *testing.T) {
	// DIGEST A14: with an outputSchema, structuredContent MUST conform to it.
	type out struct {
		Sum int `json:"sum"`
	}
	outSchema, _ := jsonschema.For[out](nil)
	s := mcp.NewServer(mcp.Implementation{Name: "o", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", OutputSchema: outSchema}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (*mcp.CallToolResult, error) {
		if in.A < 0 {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": "not a number"}}, nil
		}
		sum := in.A + in.B
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(sum)}}, StructuredContent: out{Sum: sum}}, nil
	})
	c := connect(t, s)
	r := result(t, c.call(1, "tools/call", `{"name":"add","arguments":{"a":2,"b":3},`+modernMeta+`}`))
	if sc, _ := r["structuredContent"].(map[string]any); sc["sum"] != float64(5) {
		t.Fatalf("structuredContent %v", r["structuredContent"])
	}
	var listed struct{ Tools []map[string]any }
	json.Unmarshal(c.call(2, "tools/list", `{`+modernMeta+`}`)["result"], &listed)
	if listed.Tools[0]["outputSchema"] == nil {
		t.Error("tools/list does not show the outputSchema")
	}
	if m := c.call(3, "tools/call", `{"name":"add","arguments":{"a":-1,"b":3},`+modernMeta+`}`); code(m) != -32603 {
		t.Fatalf("non-conforming structuredContent must not be sent: %s", m["error"])
	}
}
