package bridge

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

// listenLegacy serves a 2026-07-28 client's subscriptions/listen (MCP 2026-07-28, Basic ›
// Patterns › Subscriptions) on children of the initialize generation, which have no such
// method: the listen gets a child of its own, like a legacy session (it counts against
// MaxSessions), initialized with the capabilities the request declared. The bridge subscribes
// it to each resource the filter names (resources/subscribe, MCP 2025-11-25 Server ›
// Resources › Subscriptions), acknowledges with the subset the child can deliver (the list
// changes it declared listChanged for, the resources it accepted a subscription to), then
// passes on what the filter asked for, tagged with the listen's id, until the client goes
// away (its child is stopped) or the bridge shuts down (a complete result ends the stream).
func (s *session) listenLegacy(ctx context.Context, rt *runtime.Request) (any, error) {
	c, err := s.b.own.claim(ctx)
	if err != nil {
		return nil, err
	}
	defer s.b.own.release(c)
	var p struct {
		Notifications struct {
			ToolsListChanged, PromptsListChanged, ResourcesListChanged bool
			ResourceSubscriptions                                      []string
		}
	}
	json.Unmarshal(rt.Params, &p)
	meta := jsonrpc.Field(rt.Params, "_meta")
	caps := jsonrpc.Field(meta, mcp.MetaClientCapabilities)
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	info := jsonrpc.Field(meta, mcp.MetaClientInfo)
	if info == nil {
		info = json.RawMessage(`{"name":"relay-bridge","version":"1.0.0"}`)
	}

	sub := json.RawMessage(rt.ID)
	tag := func(params json.RawMessage) json.RawMessage {
		return jsonrpc.SetMember(params, "_meta", jsonrpc.SetMember(jsonrpc.Field(params, "_meta"), mcp.MetaSubscriptionID, sub))
	}
	var acked atomic.Bool // nothing before the acknowledgement (it comes first)
	want := map[string]bool{}
	uris := map[string]bool{}
	if err := c.attach(func(method string, params json.RawMessage) {
		if !acked.Load() {
			return
		}
		switch method {
		case "notifications/resources/updated":
			var u struct{ URI string }
			json.Unmarshal(params, &u)
			if !uris[u.URI] {
				return
			}
		case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
			if !want[method] {
				return
			}
		default: // log messages and the like never go on a listen stream
			return
		}
		rt.Notify(method, tag(params))
	}); err != nil {
		return nil, err
	}

	init := mustJSON(map[string]json.RawMessage{"protocolVersion": mustJSON(mcp.LegacyVersions[0]),
		"capabilities": caps, "clientInfo": info})
	res, rpcErr, err := c.call(ctx, nil, "initialize", init, nil)
	switch {
	case err != nil:
		return nil, err
	case rpcErr != nil:
		return nil, rpcErr
	}
	c.notify("notifications/initialized", nil)
	childCaps := jsonrpc.Field(res, "capabilities")
	declared := func(list, flag string) bool {
		return string(jsonrpc.Field(jsonrpc.Field(childCaps, list), flag)) == "true"
	}
	honoured := map[string]any{}
	for _, l := range []struct {
		asked bool
		list  string
	}{{p.Notifications.ToolsListChanged, "tools"}, {p.Notifications.PromptsListChanged, "prompts"}, {p.Notifications.ResourcesListChanged, "resources"}} {
		if l.asked && declared(l.list, "listChanged") {
			honoured[l.list+"ListChanged"] = true
			want["notifications/"+l.list+"/list_changed"] = true
		}
	}
	if len(p.Notifications.ResourceSubscriptions) > 0 {
		accepted := []string{}
		if declared("resources", "subscribe") {
			for _, uri := range p.Notifications.ResourceSubscriptions {
				_, rpcErr, err := c.call(ctx, nil, "resources/subscribe", mustJSON(map[string]string{"uri": uri}), nil)
				if err != nil {
					return nil, err
				}
				if rpcErr == nil {
					accepted = append(accepted, uri)
					uris[uri] = true
				}
			}
		}
		honoured["resourceSubscriptions"] = accepted
	}
	rt.Notify("notifications/subscriptions/acknowledged", tag(mustJSON(map[string]any{"notifications": honoured})))
	acked.Store(true)

	select {
	case <-ctx.Done(): // the client went away: nothing more is owed
		return nil, ctx.Err()
	case <-rt.Draining():
	case <-c.Done(): // the child is gone for good
	}
	return mustJSON(map[string]any{"resultType": "complete",
		"_meta": map[string]json.RawMessage{mcp.MetaSubscriptionID: sub, mcp.MetaServerInfo: s.b.now().info}}), nil
}
