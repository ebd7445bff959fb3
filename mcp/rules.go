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
	p.Proxy = &proxyRules
	return p
}

// proxyRules is what a proxy must know of MCP, in both generations (2025-11-25 Basic ›
// Lifecycle, Utilities › Cancellation, Progress, Ping; Server Features › Tools, Prompts,
// Resources; 2026-07-28 Basic › Patterns › Subscriptions, server/discover).
var proxyRules = runtime.ProxyRules{
	ReadOnly: []string{"tools/list", "prompts/list", "prompts/get", "resources/list", "resources/read",
		"resources/templates/list", "server/discover", "completion/complete", "ping",
		"subscriptions/listen", "initialize"},
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
		{Capability: "tools", Changed: "notifications/tools/list_changed", Filter: "toolsListChanged"},
		{Capability: "prompts", Changed: "notifications/prompts/list_changed", Filter: "promptsListChanged"},
		{Capability: "resources", Changed: "notifications/resources/list_changed", Filter: "resourcesListChanged"},
	},
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
