package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/relayrt/relay/mcp"
)

// startBare sends a 2026-07-28 request whose _meta is exactly meta (withMeta would add a log
// level) and returns its id.
func (c *client) startBare(method string, params map[string]any, meta map[string]any) int {
	c.t.Helper()
	id := c.nextID
	c.nextID++
	p := map[string]any{"_meta": meta}
	for k, v := range params {
		p[k] = v
	}
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	return id
}

func modernMeta(extra map[string]any) map[string]any {
	m := map[string]any{
		mcp.MetaProtocolVersion:    mcp.Version20260728,
		mcp.MetaClientCapabilities: map[string]any{},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func logLevels(notes []msg) []string {
	var out []string
	for _, n := range notes {
		if n.Method == "notifications/message" {
			var p struct {
				Level string `json:"level"`
			}
			json.Unmarshal(n.Params, &p)
			out = append(out, p.Level)
		}
	}
	return out
}

// MCP 2026-07-28, Server › Utilities › Logging: notifications/message only for a request that
// carried _meta logLevel, and only at that level or above.
func TestA10_LoggingToolLogsOnlyWhenAskedAndAtOrAboveTheLevel(t *testing.T) {
	c := open(t, eras[1], nil)
	tool := map[string]any{"name": "test_logging_tool"}

	r := c.wait(c.startBare("tools/call", tool, modernMeta(nil)))
	if r.Error != nil || len(logLevels(r.notes)) != 0 {
		t.Errorf("A10: no log message without _meta logLevel: %v %+v", logLevels(r.notes), r.Error)
	}
	r = c.wait(c.startBare("tools/call", tool, modernMeta(map[string]any{mcp.MetaLogLevel: "info"})))
	if got := logLevels(r.notes); !slices.Equal(got, []string{"info", "warning"}) {
		t.Errorf("A10: at logLevel info, want the info and warning messages; got %v", got)
	}

	legacy := open(t, eras[0], nil) // logging/setLevel debug
	_, r = legacy.callTool("test_logging_tool", nil, nil)
	if got := logLevels(r.notes); !slices.Equal(got, []string{"debug", "info", "warning"}) {
		t.Errorf("B1: after logging/setLevel debug, want all three messages; got %v", got)
	}
}

// subscriptionID returns the io.modelcontextprotocol/subscriptionId of a notification.
func subscriptionID(m msg) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(m.Params, &p)
	return string(p.Meta[mcp.MetaSubscriptionID])
}

// nextNote returns the first notification for the subscription sub among seen (the
// notifications a call read while it waited), or else reads frames until one comes.
func (c *client) nextNote(sub int, seen ...msg) msg {
	c.t.Helper()
	for _, m := range seen {
		if subscriptionID(m) == fmt.Sprint(sub) {
			return m
		}
	}
	for {
		if m := c.recv(); m.Method != "" && subscriptionID(m) == fmt.Sprint(sub) {
			return m
		}
	}
}

// MCP 2026-07-28, Basic › Subscriptions: a change of the registry reaches the listen streams
// that asked for that list, tagged with their subscription id, and no other.
func TestA9_TriggersChangeTheListsAndTellOnlyTheListenersThatAsked(t *testing.T) {
	c := open(t, eras[1], nil)
	tools := c.start("subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
	if ack := c.nextNote(tools); ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("A9: the first message of a subscription is its acknowledgement: %+v", ack)
	}
	prompts := c.start("subscriptions/listen", map[string]any{"notifications": map[string]any{"promptsListChanged": true}})
	if ack := c.nextNote(prompts); ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("A9: the first message of a subscription is its acknowledgement: %+v", ack)
	}
	toolNames := func() []string {
		return names(t, c.mustResult("tools/list", nil)["tools"], "name")
	}
	promptNames := func() []string {
		return names(t, c.mustResult("prompts/list", nil)["prompts"], "name")
	}

	if tr, r := c.callTool("test_trigger_tool_change", nil, nil); tr.text() != "Added "+dynamicTool {
		t.Fatalf("the first trigger adds the tool: %s", tr)
	} else if m := c.nextNote(tools, r.notes...); m.Method != "notifications/tools/list_changed" {
		t.Errorf("A9: the tools listener hears of the change: %+v", m)
	}
	if !slices.Contains(toolNames(), dynamicTool) {
		t.Errorf("tools/list must show %s once added", dynamicTool)
	}
	if tr, _ := c.callTool(dynamicTool, nil, nil); tr.IsError || tr.text() == "" {
		t.Errorf("the added tool can be called: %s", tr)
	}

	if tr, r := c.callTool("test_trigger_prompt_change", nil, nil); tr.text() != "Added "+dynamicPrompt {
		t.Fatalf("the first trigger adds the prompt: %s", tr)
	} else if m := c.nextNote(prompts, r.notes...); m.Method != "notifications/prompts/list_changed" {
		t.Errorf("A9: the prompts listener hears of the change: %+v", m)
	}
	if !slices.Contains(promptNames(), dynamicPrompt) {
		t.Errorf("prompts/list must show %s once added", dynamicPrompt)
	}

	// Removal. Each listener hears the changes in the order they happened, so had the tools
	// listener been told of the prompt change, it would hear that before this one.
	if tr, r := c.callTool("test_trigger_tool_change", nil, nil); tr.text() != "Removed "+dynamicTool {
		t.Fatalf("the second trigger removes the tool: %s", tr)
	} else if m := c.nextNote(tools, r.notes...); m.Method != "notifications/tools/list_changed" {
		t.Errorf("A9: the tools listener hears only of tool changes; got %+v", m)
	}
	if slices.Contains(toolNames(), dynamicTool) {
		t.Errorf("tools/list must not show %s once removed", dynamicTool)
	}
	if tr, r := c.callTool("test_trigger_prompt_change", nil, nil); tr.text() != "Removed "+dynamicPrompt {
		t.Fatalf("the second trigger removes the prompt: %s", tr)
	} else if m := c.nextNote(prompts, r.notes...); m.Method != "notifications/prompts/list_changed" {
		t.Errorf("A9: the prompts listener hears only of prompt changes; got %+v", m)
	}
	if slices.Contains(promptNames(), dynamicPrompt) {
		t.Errorf("prompts/list must not show %s once removed", dynamicPrompt)
	}
}
