package jsonrpc

import (
	"encoding/json"
	"strconv"
)

// Version is the only value of the "jsonrpc" member that Relay accepts and sends.
const Version = "2.0"

// Kind says what a decoded message is.
type Kind uint8

const (
	// KindInvalid is a value that is not a JSON-RPC message; only a decoding error carries it.
	KindInvalid Kind = iota
	// KindRequest has a method and an id: it is owed exactly one response.
	KindRequest
	// KindNotification has a method and no id: it is never answered.
	KindNotification
	// KindResponse has a result or an error and no method: it answers a request this side sent.
	KindResponse
)

// String returns the kind's lower-case name, for logs.
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "invalid"
}

// ID is a request id exactly as it appeared on the wire: a JSON string with its quotes, or a
// JSON integer. A nil ID means the message had none. Compare ids with Equal or as strings of
// their bytes; never decode one to compare it.
type ID []byte

// Null is the id that answers a request whose own id could not be read, in protocols that
// send "id": null rather than leave the member out.
var Null = ID("null")

// IntID returns the id for an integer.
func IntID(n int64) ID { return strconv.AppendInt(nil, n, 10) }

// StringID returns the id for a string, quoted and escaped as JSON.
func StringID(s string) ID {
	b, _ := json.Marshal(s)
	return b
}

// Equal reports whether two ids are the same bytes.
func (id ID) Equal(other ID) bool { return string(id) == string(other) }

// String returns the id's JSON text, for logs and map keys.
func (id ID) String() string { return string(id) }

// Message is one decoded JSON-RPC message. Its slices alias the frame it was decoded from.
type Message struct {
	Kind   Kind
	ID     ID              // raw id; nil when absent
	Method string          // requests and notifications
	Params json.RawMessage // raw params; nil when absent or null
	Result json.RawMessage // responses: the raw result
	Error  json.RawMessage // responses: the raw error object
}

// Standard error codes of JSON-RPC 2.0.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error object. It is also a Go error, so a handler can return one to
// choose the code its caller sees.
type Error struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Error returns the message and the code.
func (e *Error) Error() string {
	return e.Message + " (JSON-RPC error " + strconv.FormatInt(e.Code, 10) + ")"
}

// Errorf returns an *Error with the given code and message.
func Errorf(code int64, message string) *Error { return &Error{Code: code, Message: message} }
