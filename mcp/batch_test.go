package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/relayrt/relay/mcp"
)

// Batch tells a listening client once per list it changed, after it returns, however many
// entries it added or removed (MCP 2025-11-25, Server Features › Tools, Resources › List
// Changed Notification); RemoveResourceTemplates is one of those changes.
func TestBatch_OneListChangedPerListAfterwards(t *testing.T) {
	s := mcp.NewServer(mcp.Implementation{Name: "b", Version: "1"}, nil)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, nil)
	c := connect(t, s)
	result(t, c.call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{}}`))
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	noop := func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) { return nil, nil }
	s.Batch(func() {
		for _, name := range []string{"a", "b", "c"} {
			mcp.AddTool(s, &mcp.Tool{Name: name}, noop)
		}
		s.RemoveTools("b")
		s.RemoveResourceTemplates("test://t/{id}")
	})
	// A change after the batch, alone: what comes before its notification is the batch's.
	s.AddPrompt(&mcp.Prompt{Name: "p"}, nil)
	var got []string
	for {
		m := c.recv()
		if string(m["method"]) == `"notifications/prompts/list_changed"` {
			break
		}
		got = append(got, string(m["method"]))
	}
	want := []string{`"notifications/tools/list_changed"`, `"notifications/resources/list_changed"`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("notifications %v, want %v", got, want)
	}
	list := c.call(2, "tools/list", `{}`)
	if !strings.Contains(string(list["result"]), `"a"`) || strings.Contains(string(list["result"]), `"b"`) {
		t.Fatalf("tools/list %s", list["result"])
	}
}
