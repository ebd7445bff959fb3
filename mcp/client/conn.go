package client

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/relayrt/relay/jsonrpc"
)

// A Transport is a way to reach a server: *CommandTransport, *HTTPTransport or
// *MemoryTransport.
type Transport interface {
	dial(ctx context.Context, in *inbox) (conn, error)
}

// ErrClosed is returned by calls on a Client that was closed, or whose server went away.
var ErrClosed = errors.New("mcp/client: the connection is closed")

// conn is what a Client needs of a transport: calls answered one by one, notifications,
// and an end.
type conn interface {
	// call sends r and waits for its answer: a result, or a *jsonrpc.Error, or the failure of
	// the call itself. When ctx ends first the server is told as the transport allows.
	call(ctx context.Context, r *outgoing) (json.RawMessage, error)
	// notify sends a notification.
	notify(ctx context.Context, r *outgoing) error
	// close ends the connection and waits for everything it started.
	close() error
}

// outgoing is one request or notification, with what an HTTP transport mirrors in headers.
type outgoing struct {
	id      jsonrpc.ID // nil for a notification
	method  string
	params  []byte
	version string            // MCP-Protocol-Version; "" before a legacy initialize
	modern  bool              // a 2026-07-28 request
	name    string            // Mcp-Name, for tools/call, resources/read and prompts/get
	headers map[string]string // Mcp-Param-* (already encoded)
	// note receives the notifications the server ties to this request, in order.
	note func(method string, params json.RawMessage)
}

// cancelParams is the params of notifications/cancelled for id.
func cancelParams(id jsonrpc.ID, reason string) []byte {
	b, _ := json.Marshal(map[string]any{"requestId": json.RawMessage(id), "reason": reason})
	return b
}

// decodeError turns a raw JSON-RPC error object into a *jsonrpc.Error.
func decodeError(raw json.RawMessage) *jsonrpc.Error {
	e := &jsonrpc.Error{}
	if err := json.Unmarshal(raw, e); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server sent an error that is not a JSON-RPC error object"}
	}
	return e
}
