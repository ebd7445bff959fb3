package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Call sends a request of any method with params as given (a JSON object, or nil) and
// returns the server's raw result, for a program that passes results on unread (relay
// gateway). The client replaces params._meta with its own (the 2026-07-28 protocol
// members, and a progressToken with WithProgress), mirrors Mcp-Name (params.name of
// tools/call and prompts/get, params.uri of resources/read) and, for tools/call, the
// Mcp-Param-* headers, as its typed calls do. An input_required result is answered through
// the client's handlers as for every call; a tools/call the server runs as a task is
// waited for (and cancelled when ctx ends first), and the tool's raw result returned.
// An error the server answered with is a *jsonrpc.Error.
func (c *Client) Call(ctx context.Context, method string, params json.RawMessage, opts ...CallOption) (json.RawMessage, error) {
	var members map[string]json.RawMessage
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &members); err != nil || members == nil {
			return nil, fmt.Errorf("mcp/client: the params of %s must be a JSON object", method)
		}
	}
	delete(members, "_meta")
	if method == "tools/call" {
		var name string
		json.Unmarshal(members["name"], &name)
		var args any
		if raw, ok := members["arguments"]; ok && string(raw) != "null" {
			args = raw
		}
		res, err := c.callTool(ctx, name, args, opts, members)
		if err != nil {
			return nil, err
		}
		if rt, _ := resultType(res); rt == "task" {
			t := &Task{c: c}
			if err := t.take(res); err != nil {
				return nil, err
			}
			res, err = t.wait(ctx)
			if err != nil && ctx.Err() != nil {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				t.Cancel(cctx)
				cancel()
			}
			return res, err
		}
		return res, nil
	}
	r := request{method: method}
	if members != nil {
		r.params = make(map[string]any, len(members))
		for k, v := range members {
			r.params[k] = v
		}
	}
	var nameKey string
	switch method {
	case "prompts/get":
		nameKey = "name"
	case "resources/read":
		nameKey = "uri"
	}
	if nameKey != "" {
		json.Unmarshal(members[nameKey], &r.name)
	}
	return c.call(ctx, r, opts...)
}

// rawMembers adds the members of a raw params object other than name, arguments and _meta
// to params: what Call passes on untouched (inputResponses, requestState, task).
func rawMembers(params map[string]any, members map[string]json.RawMessage) {
	for k, v := range members {
		switch k {
		case "name", "arguments", "_meta":
			continue
		}
		params[k] = v
	}
}
