package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/relayrt/relay/jsonrpc"
)

// Call sends a request of any method with params as given (a JSON object, or nil) and
// returns the server's raw result, for a program that passes results on unread (relay
// gateway). The client replaces params._meta with its own (the 2026-07-28 protocol
// members, and a progressToken with WithProgress), mirrors Mcp-Name (params.name of
// tools/call and prompts/get, params.uri of resources/read, params.taskId of tasks/get,
// tasks/update and tasks/cancel) and, for tools/call, the
// Mcp-Param-* headers, as its typed calls do. An input_required result is answered through
// the client's handlers as for every call (ReturnInputRequired returns it instead); a
// tools/call the server runs as a task is waited for (and cancelled when ctx ends first),
// and the tool's raw result returned (ReturnTask returns the task instead).
// An error the server answered with is a *jsonrpc.Error.
func (c *Client) Call(ctx context.Context, method string, params json.RawMessage, opts ...CallOption) (json.RawMessage, error) {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{}`)
	} else if !jsonrpc.IsObject(params) {
		return nil, fmt.Errorf("mcp/client: the params of %s must be a JSON object", method)
	}
	var res json.RawMessage
	var err error
	if _, isHTTP := c.conn.(*httpConn); method == "tools/call" && c.modern && isHTTP {
		// The Mcp-Param-* headers come from the arguments: the members are read.
		var members map[string]json.RawMessage
		if err := json.Unmarshal(params, &members); err != nil {
			return nil, fmt.Errorf("mcp/client: the params of %s must be a JSON object", method)
		}
		var name string
		json.Unmarshal(members["name"], &name)
		var args any
		if raw, ok := members["arguments"]; ok && string(raw) != "null" {
			args = raw
		}
		res, err = c.callTool(ctx, name, args, opts, members)
	} else {
		// Sent as they are, but for _meta, which is the client's.
		r := request{method: method, raw: params}
		switch method {
		case "tools/call", "prompts/get":
			json.Unmarshal(jsonrpc.Field(params, "name"), &r.name)
		case "resources/read":
			json.Unmarshal(jsonrpc.Field(params, "uri"), &r.name)
		case "tasks/get", "tasks/update", "tasks/cancel":
			json.Unmarshal(jsonrpc.Field(params, "taskId"), &r.name)
		}
		res, err = c.call(ctx, r, opts...)
	}
	if err != nil || method != "tools/call" {
		return res, err
	}
	var co callOptions
	for _, opt := range opts {
		opt.applyCall(&co)
	}
	if rt, _ := resultType(res); rt == "task" && !co.returnTask {
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

// rawParams returns the members of a raw params object but _meta, for a request written
// from them.
func rawParams(raw json.RawMessage) map[string]any {
	params := map[string]any{}
	jsonrpc.EachMember(raw, func(k, v []byte) bool {
		if string(k) != "_meta" {
			params[string(k)] = json.RawMessage(v)
		}
		return true
	})
	return params
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
