package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// Call passes any request on raw and returns the raw result, on every transport and
// generation: the params' members reach the server as they are (a _meta of the caller's is
// replaced by the client's own), and an error the server answered with is a
// *jsonrpc.Error.
func TestCall_RawRequestsAndResults(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		ctx := context.Background()
		res, err := c.Call(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":{"text":"raw"},"_meta":{"progressToken":"not-the-callers"}}`))
		if err != nil {
			t.Fatal(err)
		}
		var tool struct {
			Content []struct{ Type, Text string }
		}
		if json.Unmarshal(res, &tool); len(tool.Content) != 1 || tool.Content[0].Text != "raw" {
			t.Errorf("tools/call: %s", res)
		}
		if res, err = c.Call(ctx, "resources/read", json.RawMessage(`{"uri":"test://text"}`)); err != nil || !strings.Contains(string(res), `"text":"hello"`) {
			t.Errorf("resources/read: %s %v", res, err)
		}
		if res, err = c.Call(ctx, "prompts/get", json.RawMessage(`{"name":"greet","arguments":{"who":"Ada"}}`)); err != nil || !strings.Contains(string(res), "Ada") {
			t.Errorf("prompts/get: %s %v", res, err)
		}
		var je *jsonrpc.Error
		if _, err = c.Call(ctx, "prompts/get", json.RawMessage(`{"name":"nope"}`)); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("unknown prompt: %v, want a -32602 *jsonrpc.Error", err)
		}
		if _, err = c.Call(ctx, "tools/call", json.RawMessage(`[1]`)); err == nil {
			t.Error("params that are not an object were sent")
		}
	})
}

// ReturnInputRequired hands a 2026-07-28 input_required result back as it is, for the
// caller to pass on; WithClientCapabilities declares another client's capabilities on the
// call, so that the server asks only for what that client declared, and refuses with
// -32021 what needs more (MCP 2026-07-28, Basic › _meta).
func TestCall_PassesInputRequiredAndAnotherClientsCapabilities(t *testing.T) {
	elicit := client.WithElicitation(func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return nil, errors.New("the handler must not be asked: the caller answers")
	})
	each(t, func(t *testing.T, c *client.Client) {
		if !c.Modern() {
			t.Skip("input_required and per-request capabilities are 2026-07-28's")
		}
		ctx := context.Background()
		res, err := c.Call(ctx, "tools/call", json.RawMessage(`{"name":"ask"}`), client.ReturnInputRequired())
		if err != nil || !strings.Contains(string(res), `"resultType":"input_required"`) || !strings.Contains(string(res), "Who are you?") {
			t.Fatalf("want the input_required result as it is: %s %v", res, err)
		}
		var je *jsonrpc.Error
		_, err = c.Call(ctx, "tools/call", json.RawMessage(`{"name":"ask"}`), client.ReturnInputRequired(), client.WithClientCapabilities(json.RawMessage(`{}`)))
		if !errors.As(err, &je) || je.Code != mcp.CodeMissingRequiredClientCapability {
			t.Errorf("a call declaring no elicitation: %v, want -32021", err)
		}
	}, elicit)
}

// The io.modelcontextprotocol/tasks methods sent raw mirror their task id in Mcp-Name, as
// a 2026-07-28 server over Streamable HTTP requires of them (a relay gateway passes them on
// this way).
func TestCall_RawTaskMethodsReachTheTask(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		if !c.Modern() {
			return // tasks are the 2026-07-28 extension's
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		task, err := c.StartTool(ctx, "blocktask", nil)
		if err != nil {
			t.Fatal(err)
		}
		params := json.RawMessage(`{"taskId":` + strconv.Quote(task.ID) + `}`)
		if res, err := c.Call(ctx, "tasks/get", params); err != nil || !strings.Contains(string(res), task.ID) {
			t.Errorf("tasks/get: %s %v", res, err)
		}
		if _, err := c.Call(ctx, "tasks/cancel", params); err != nil {
			t.Errorf("tasks/cancel: %v", err)
		}
	})
}
