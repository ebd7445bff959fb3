// Package jsonrpc is Relay's JSON-RPC 2.0 envelope codec: it reads one frame into a Message
// without decoding ids or params, and appends responses, requests and notifications to byte
// slices.
//
// Decoding is a single validating pass over the frame. Ids, params, results and errors stay raw
// bytes: an id is echoed exactly as it arrived (12345678901234567890 is never rounded through a
// float64) and two ids are equal only when their bytes are. Envelope keys are matched exactly
// (case-sensitive, escapes resolved) and a repeated envelope key makes the message invalid, so
// two readers of the same frame can never disagree on what it says.
//
// The codec knows JSON-RPC, not any protocol built on it: which id an unreadable request is
// answered with (omitted or null), whether batches are allowed and what each error code means
// are decided by the caller.
package jsonrpc
