package mcp

import (
	"encoding/json"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// Rules returns MCP's profile with no server behind it (NewSession is nil): the protocol's
// rules alone, for programs that carry MCP without serving it. A proxy that restarts MCP
// servers reads Proxy from it (supervise.ProtocolOf).
func Rules() runtime.Profile {
	p := (*Server)(nil).Profile() // the rules do not depend on a server: only NewSession does
	p.NewSession = nil
	return p
}

// A program that links the package decodes its method names without allocating, whatever
// profile it serves them through (relay bridge's, say).
func init() { jsonrpc.Intern(methods...) }

// methods are MCP's method and notification names, both generations, both directions
// (2025-11-25 and 2026-07-28 schemas).
var methods = []string{
	"initialize", "notifications/initialized", "ping", "server/discover",
	"tools/list", "tools/call", "prompts/list", "prompts/get",
	"resources/list", "resources/read", "resources/templates/list",
	"resources/subscribe", "resources/unsubscribe", "completion/complete",
	"logging/setLevel", "subscriptions/listen", "notifications/cancelled",
	"notifications/progress", "notifications/message", "notifications/resources/updated",
	"notifications/tools/list_changed", "notifications/prompts/list_changed",
	"notifications/resources/list_changed", "notifications/roots/list_changed",
	"notifications/subscriptions/acknowledged",
	"sampling/createMessage", "elicitation/create", "roots/list", "notifications/elicitation/complete",
	"skills/list", "skills/get", "resources/directory/read",
	"tasks/get", "tasks/update", "tasks/cancel", "notifications/tasks",
}

// proxyRules is what a proxy must know of MCP, in both generations (2025-11-25 Basic ›
// Lifecycle, Utilities › Cancellation, Progress, Ping; Server Features › Tools, Prompts,
// Resources; 2026-07-28 Basic › Patterns › Subscriptions, server/discover).
var proxyRules = runtime.ProxyRules{
	ReadOnly: []string{"tools/list", "prompts/list", "prompts/get", "resources/list", "resources/read",
		"resources/templates/list", "server/discover", "completion/complete", "ping",
		"subscriptions/listen", "initialize", "skills/list", "skills/get", "resources/directory/read", "tasks/get"},
	Handshake:       "initialize",
	Handshaken:      "notifications/initialized",
	Restate:         []string{"logging/setLevel"},
	Subscribe:       "resources/subscribe",
	Unsubscribe:     "resources/unsubscribe",
	SubscriptionKey: "uri",
	Capabilities:    "capabilities",
	Ping:            "ping",
	Discover:        "server/discover",
	VersionKey:      MetaProtocolVersion,
	ListTools:       "tools/list",
	ListCursor:      "cursor",
	ToolsChanged:    "notifications/tools/list_changed",
	CallTool:        "tools/call",
	ToolName:        "name",
	ReadTools:       readTools,
	Lists: []runtime.ListRule{
		{Capability: "tools", Changed: "notifications/tools/list_changed", Filter: "toolsListChanged",
			Read: []runtime.ListRead{{Method: "tools/list", Items: "tools"}}},
		{Capability: "prompts", Changed: "notifications/prompts/list_changed", Filter: "promptsListChanged",
			Read: []runtime.ListRead{{Method: "prompts/list", Items: "prompts"}}},
		{Capability: "resources", Changed: "notifications/resources/list_changed", Filter: "resourcesListChanged",
			Read: []runtime.ListRead{{Method: "resources/list", Items: "resources"},
				{Method: "resources/templates/list", Items: "resourceTemplates"}}},
	},
	NextCursor:   "nextCursor",
	CancelKey:    "requestId",
	Progress:     "notifications/progress",
	ProgressKey:  "progressToken",
	Listen:       "subscriptions/listen",
	StreamKey:    MetaSubscriptionID,
	Acknowledged: "notifications/subscriptions/acknowledged",
	ListFilter:   "notifications",
	Unavailable: func(why string, data map[string]any) *jsonrpc.Error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: " + why, Data: data}
	},
	Busy: func(why string, data map[string]any) *jsonrpc.Error {
		return &jsonrpc.Error{Code: CodeServerBusy, Message: "Server busy: " + why, Data: data}
	},
}

// readTools reads one page of a tools/list result: which tools the server annotated
// readOnlyHint or idempotentHint (2025-11-25 Server Features › Tools › Tool Annotations), and
// the next page's cursor.
func readTools(result json.RawMessage) (map[string]bool, string) {
	var r struct {
		Tools []struct {
			Name        string
			Annotations struct{ ReadOnlyHint, IdempotentHint bool }
		}
		NextCursor string
	}
	json.Unmarshal(result, &r)
	repeatable := make(map[string]bool, len(r.Tools))
	for _, t := range r.Tools {
		repeatable[t.Name] = t.Annotations.ReadOnlyHint || t.Annotations.IdempotentHint
	}
	return repeatable, r.NextCursor
}
