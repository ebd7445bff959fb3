package supervise

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

// Protocol is what a proxy knows of the protocol it carries, read from the protocol's
// runtime.Profile: the methods safe to send again, the handshake and state to replay on a
// new child, how to probe one, how requests and streams are named in notifications, the
// cancel, and the errors for a request the child cannot answer. The proxy itself knows no
// method name.
type Protocol struct {
	rules    runtime.ProxyRules
	readOnly map[string]bool
	restate  map[string]bool
	// cancel is the notification that cancels a request; answered reports whether the
	// protocol still owes a cancelled request its answer (RCP/1) or says nothing more (MCP).
	cancel   string
	answered bool
	tooLarge func(limit int) *jsonrpc.Error // answers a host line over the size limit
	// progressKey is the progress token's key, quoted, as it stands in a request's params.
	progressKey []byte
}

// ProtocolOf reads a protocol's rules for a proxy from its profile: mcp.Rules() or
// rcp.Rules(), or a profile of your own whose Proxy field says what to replay. A profile
// without Proxy gives a proxy that maps ids and replays nothing.
func ProtocolOf(p runtime.Profile) *Protocol {
	pr := &Protocol{cancel: p.CancelMethod, answered: p.Cancelled != nil, tooLarge: p.FrameTooLarge,
		readOnly: map[string]bool{}, restate: map[string]bool{}}
	if pr.tooLarge == nil {
		pr.tooLarge = func(limit int) *jsonrpc.Error {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("Invalid request: the message is longer than %d bytes; send a smaller one", limit)}
		}
	}
	if p.Proxy != nil {
		pr.rules = *p.Proxy
	}
	pr.progressKey = jsonrpc.AppendString(nil, pr.rules.ProgressKey)
	for _, m := range pr.rules.ReadOnly {
		pr.readOnly[m] = true
	}
	for _, m := range pr.rules.Restate {
		pr.restate[m] = true
	}
	if pr.rules.Unavailable == nil {
		pr.rules.Unavailable = func(why string, data map[string]any) *jsonrpc.Error {
			return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: " + why, Data: data}
		}
	}
	if pr.rules.Busy == nil {
		pr.rules.Busy = pr.rules.Unavailable
	}
	return pr
}

// mcpProtocol is the default: MCP, both generations.
var mcpProtocol = ProtocolOf(mcp.Rules())

// isCall reports whether a request calls a tool, and which.
func (pr *Protocol) isCall(method string, params json.RawMessage) (string, bool) {
	if method == "" || method != pr.rules.CallTool {
		return "", false
	}
	var name string
	json.Unmarshal(jsonrpc.Field(params, pr.rules.ToolName), &name)
	return name, true
}

// progressToken is the progress token a request carries in its params' _meta, if any.
func (pr *Protocol) progressToken(params json.RawMessage) json.RawMessage {
	if pr.rules.ProgressKey == "" {
		return nil
	}
	// Most requests carry no progress token (a 2026-07-28 request's _meta holds its
	// version and capabilities): a look for the key's name spares the walk through params
	// and _meta (5 to 7 % of the proxy's CPU at 64 B). A key spelled with escapes has a
	// backslash, and is still found by the walk.
	if !bytes.Contains(params, pr.progressKey) && bytes.IndexByte(params, '\\') < 0 {
		return nil
	}
	return jsonrpc.Field(jsonrpc.Field(params, "_meta"), pr.rules.ProgressKey)
}

// cancelFrame is the notification that cancels the request id, with a reason.
func (pr *Protocol) cancelFrame(id json.RawMessage, reason string) []byte {
	params, _ := json.Marshal(map[string]any{pr.rules.CancelKey: id, "reason": reason})
	return jsonrpc.AppendNotification(nil, pr.cancel, params)
}

// is reports whether method is the protocol's named one; an unnamed one is never matched.
func is(method, named string) bool { return named != "" && method == named }
