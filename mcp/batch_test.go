package mcp_test

import (
	"context"
	"encoding/json"
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

// ServerOptions.TaskHandler serves tasks/* in place of the TaskStore: the server declares
// the tasks extension in server/discover, a request that declares it reaches the handler
// (its result gets the 2026-07-28 fields), and one that does not is refused with -32021.
func TestTaskHandler_ServesTasksInPlaceOfTheStore(t *testing.T) {
	var asked []string
	s := mcp.NewServer(mcp.Implementation{Name: "th", Version: "1"}, &mcp.ServerOptions{
		TaskHandler: func(ctx context.Context, req *mcp.Request) (any, error) {
			asked = append(asked, req.Method())
			return json.RawMessage(`{"taskId":"elsewhere-1","status":"working"}`), nil
		}})
	c := connect(t, s)
	if d := c.call(1, "server/discover", `{`+modernMeta+`}`); !strings.Contains(string(d["result"]), mcp.ExtensionTasks) {
		t.Errorf("discover does not declare the tasks extension: %s", d["result"])
	}
	withTasks := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + mcp.ExtensionTasks + `":{}}}}`
	got := c.call(2, "tasks/get", `{"taskId":"elsewhere-1",`+withTasks+`}`)
	res := string(got["result"])
	if !strings.Contains(res, `"taskId":"elsewhere-1"`) || !strings.Contains(res, `"resultType":"complete"`) || len(asked) != 1 || asked[0] != "tasks/get" {
		t.Errorf("tasks/get through the handler: %s (asked %v)", got["result"], asked)
	}
	if m := c.call(3, "tasks/cancel", `{"taskId":"elsewhere-1",`+modernMeta+`}`); code(m) != mcp.CodeMissingRequiredClientCapability {
		t.Errorf("tasks/cancel without the extension: %s, want -32021", m["error"])
	}
}
