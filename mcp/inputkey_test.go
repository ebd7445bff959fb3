package mcp_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/relayrt/relay/mcp"
)

// InputKey names a question in input_required (MCP 2026-07-28, Basic › Patterns ›
// Multi-round-trip requests): the client answers it under that name, unnamed questions keep
// their kind-and-order names, and two questions of one request may not share a name.
func TestInputKeyNamesTheQuestion(t *testing.T) {
	s := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "named"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		user, errU := req.Elicit(ctx, &mcp.ElicitParams{Message: "name?"}, mcp.InputKey("user_name"))
		roots, errR := req.ListRoots(ctx)
		if errU != nil {
			return nil, errU
		}
		if errR != nil {
			return nil, errR
		}
		return mcp.TextResult(fmt.Sprint(user.Content["name"], "/", len(roots.Roots))), nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "twice"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		req.Elicit(ctx, &mcp.ElicitParams{Message: "a?"}, mcp.InputKey("same"))
		if _, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "b?"}, mcp.InputKey("same")); err != nil {
			return mcp.ErrorResult(err.Error()), nil
		}
		return mcp.TextResult("asked twice under one name"), nil
	})
	c := connect(t, s)
	caps := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"roots":{}}}`

	r := result(t, c.call(1, "tools/call", `{"name":"named",`+caps+`}`))
	reqs, _ := r["inputRequests"].(map[string]any)
	if r["resultType"] != "input_required" || reqs["user_name"] == nil || reqs["roots-1"] == nil || len(reqs) != 2 {
		t.Fatalf("round 1: %v, want the questions user_name and roots-1", r)
	}
	r = result(t, c.call(2, "tools/call", fmt.Sprintf(`{"name":"named","inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}},"roots-1":{"roots":[{"uri":"file:///a"}]}},"requestState":%q,%s}`,
		r["requestState"], caps)))
	if text := r["content"].([]any)[0].(map[string]any)["text"]; r["resultType"] != "complete" || text != "Ada/1" {
		t.Fatalf("round 2: %v, want Ada/1", r)
	}
	r = result(t, c.call(3, "tools/call", `{"name":"twice",`+caps+`}`))
	if r["isError"] != true {
		t.Errorf("two questions under one name: %v, want the handler to be told", r)
	}
}
