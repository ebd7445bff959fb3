package jsonrpc

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// DecodeError says why a frame is not a usable message. Code is CodeParseError for text that
// is not JSON and CodeInvalidRequest for JSON that is not a valid message.
type DecodeError struct {
	Code   int64
	Reason string
}

func (e *DecodeError) Error() string { return "jsonrpc: " + e.Reason }

// AsError returns the JSON-RPC error object that answers this decoding error.
func (e *DecodeError) AsError() *Error {
	msg := "Invalid request: " + e.Reason
	if e.Code == CodeParseError {
		msg = "Parse error: " + e.Reason
	}
	return &Error{Code: e.Code, Message: msg}
}

func parseErr(reason string) error { return &DecodeError{Code: CodeParseError, Reason: reason} }
func invalid(reason string) error  { return &DecodeError{Code: CodeInvalidRequest, Reason: reason} }

// IsBatch reports whether the frame is a JSON array, the form of a JSON-RPC batch.
func IsBatch(frame []byte) bool {
	i := skipSpace(frame, 0)
	return i < len(frame) && frame[i] == '['
}

// SplitBatch returns the members of a batch frame, each as the raw bytes of one value. It
// fails with a *DecodeError of CodeParseError when the frame is not a valid JSON array.
func SplitBatch(frame []byte) ([][]byte, error) {
	i := skipSpace(frame, 0)
	if i >= len(frame) || frame[i] != '[' {
		return nil, parseErr("a batch must be a JSON array")
	}
	if !Valid(frame) {
		return nil, parseErr("the batch is not valid JSON")
	}
	var members [][]byte
	i = skipSpace(frame, i+1)
	for i < len(frame) && frame[i] != ']' {
		end, _ := skipValue(frame, i, 1) // validated above
		members = append(members, frame[i:end])
		i = skipSpace(frame, end)
		if i < len(frame) && frame[i] == ',' {
			i = skipSpace(frame, i+1)
		}
	}
	return members, nil
}

const (
	hasJSONRPC = 1 << iota
	hasID
	hasMethod
	hasParams
	hasResult
	hasError
)

// Decode reads one JSON-RPC message from a frame. On failure it still returns what it could
// read: the Kind (so that a malformed notification or response is never answered) and the ID
// when the id member itself was valid (so that an invalid request is answered with its own id).
// The error is then a *DecodeError.
func Decode(frame []byte) (Message, error) {
	var m Message
	i := skipSpace(frame, 0)
	if i >= len(frame) {
		return m, parseErr("empty message")
	}
	if frame[i] != '{' {
		if Valid(frame) {
			return m, invalid("a message must be a JSON object")
		}
		return m, parseErr("the message is not valid JSON")
	}
	var seen int
	var version, id, method []byte
	i = skipSpace(frame, i+1)
	if i < len(frame) && frame[i] == '}' {
		i++
	} else {
		for {
			if i >= len(frame) || frame[i] != '"' {
				return Message{}, parseErr("the message is not valid JSON")
			}
			keyEnd, err := skipString(frame, i)
			if err != nil {
				return Message{}, parseErr("the message is not valid JSON")
			}
			key := frame[i+1 : keyEnd-1]
			if bytes.IndexByte(key, '\\') >= 0 {
				key = unescapeKey(frame[i:keyEnd])
			}
			i = skipSpace(frame, keyEnd)
			if i >= len(frame) || frame[i] != ':' {
				return Message{}, parseErr("the message is not valid JSON")
			}
			start := skipSpace(frame, i+1)
			end, err := skipValue(frame, start, 1)
			if err != nil {
				return Message{}, parseErr("the message is not valid JSON")
			}
			val := frame[start:end]
			var bit int
			switch string(key) {
			case "jsonrpc":
				bit, version = hasJSONRPC, val
			case "id":
				bit, id = hasID, val
			case "method":
				bit, method = hasMethod, val
			case "params":
				bit, m.Params = hasParams, val
			case "result":
				bit, m.Result = hasResult, val
			case "error":
				bit, m.Error = hasError, val
			}
			if seen&bit != 0 {
				seen |= 1 << 7 // duplicate: reported once the frame is known to be valid JSON
			}
			seen |= bit
			i = skipSpace(frame, end)
			if i >= len(frame) {
				return Message{}, parseErr("the message is not valid JSON")
			}
			if frame[i] == '}' {
				i++
				break
			}
			if frame[i] != ',' {
				return Message{}, parseErr("the message is not valid JSON")
			}
			i = skipSpace(frame, i+1)
		}
	}
	if skipSpace(frame, i) != len(frame) {
		return Message{}, parseErr("the message is not valid JSON")
	}

	// The frame is valid JSON; now classify it, then check it.
	switch {
	case seen&hasMethod != 0 && seen&hasID != 0:
		m.Kind = KindRequest
	case seen&hasMethod != 0:
		m.Kind = KindNotification
	case seen&(hasResult|hasError) != 0:
		m.Kind = KindResponse
	}
	idOK := seen&hasID == 0 || validID(id, m.Kind == KindResponse)
	if idOK && seen&hasID != 0 {
		m.ID = ID(id)
	}
	if string(m.Params) == "null" {
		m.Params = nil
	}
	switch {
	case seen&(1<<7) != 0:
		return m, invalid("a member appears twice")
	case m.Kind == KindInvalid:
		return m, invalid(`a message needs "method", "result" or "error"`)
	case seen&hasJSONRPC == 0 || !isVersion(version):
		return m, invalid(`"jsonrpc" must be "2.0"`)
	case !idOK:
		if string(id) == "null" {
			return m, invalid(`"id" must not be null`)
		}
		return m, invalid(`"id" must be a string or an integer`)
	}
	if m.Kind == KindResponse {
		if seen&hasResult != 0 && seen&hasError != 0 {
			return m, invalid(`a response has "result" or "error", not both`)
		}
		if seen&hasID == 0 {
			return m, invalid(`a response needs "id"`)
		}
		return m, nil
	}
	if seen&(hasResult|hasError) != 0 {
		return m, invalid(`a request has no "result" or "error"`)
	}
	name, ok := methodName(method)
	if !ok {
		return m, invalid(`"method" must be a string`)
	}
	m.Method = name
	return m, nil
}

// unescapeKey returns a quoted key with its escapes resolved, so that "\u0069d" is "id"
// to Relay as it is to every other JSON reader.
func unescapeKey(quoted []byte) []byte {
	var k string
	if json.Unmarshal(quoted, &k) != nil {
		return quoted
	}
	return []byte(k)
}

// validID reports whether raw is a string or an integer; null is allowed only in responses.
func validID(raw []byte, response bool) bool {
	switch {
	case len(raw) == 0:
		return false
	case raw[0] == '"':
		return true
	case raw[0] == '-' || isDigit(raw[0]):
		for _, c := range raw { // a valid number (the scanner said so): an integer has neither
			if c == '.' || c == 'e' || c == 'E' {
				return false
			}
		}
		return true
	case string(raw) == "null":
		return response
	}
	return false
}

func isVersion(raw []byte) bool {
	if string(raw) == `"2.0"` {
		return true
	}
	var s string
	return bytes.IndexByte(raw, '\\') >= 0 && json.Unmarshal(raw, &s) == nil && s == Version
}

// methodName unquotes a method name, without allocating for an interned one (Intern).
func methodName(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	body := raw[1 : len(raw)-1]
	if s, ok := (*interned.Load())[string(body)]; ok {
		return s, true
	}
	return string(body), true
}

// Unquote returns the string a raw JSON value holds, as json.Unmarshal into a string gives
// it: ok is false when raw is empty or neither a string nor null (which gives ""). A string
// without escapes and in valid UTF-8, as nearly all are, is copied out without going through
// encoding/json. raw must be valid JSON, as what Field returns is.
func Unquote(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

// Field returns the raw value of the named member of a JSON object, or nil when obj is not an
// object or has no such member. obj must already be known to be valid JSON (as everything a
// Message holds is). Keys are compared exactly, after resolving escapes.
func Field(obj []byte, name string) []byte {
	var found []byte
	EachMember(obj, func(key, value []byte) bool {
		if string(key) == name {
			found = value
			return false
		}
		return true
	})
	return found
}

// IsObject reports whether raw JSON is an object.
func IsObject(raw []byte) bool {
	i := skipSpace(raw, 0)
	return i < len(raw) && raw[i] == '{'
}

// IsRequestID reports whether raw is a valid request id: a JSON string or integer.
func IsRequestID(raw []byte) bool { return validID(raw, false) }

// Fields looks up several members of a JSON object in one pass: out[i] receives the raw value
// of names[i], or nil when it is absent. Like Field, it expects valid JSON.
func Fields(obj []byte, names []string, out []json.RawMessage) {
	clear(out)
	EachMember(obj, func(key, value []byte) bool {
		for n, name := range names {
			if out[n] == nil && string(key) == name {
				out[n] = value
			}
		}
		return true
	})
}

// FirstKey returns the first member name of a JSON object without unquoting it, or "" when
// obj is not an object or is empty.
func FirstKey(obj []byte) string {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return ""
	}
	i = skipSpace(obj, i+1)
	if i >= len(obj) || obj[i] != '"' {
		return ""
	}
	end, err := skipString(obj, i)
	if err != nil {
		return ""
	}
	return string(obj[i+1 : end-1])
}

// EachMember calls fn with the key (without quotes, escapes resolved) and raw value of every
// member of a JSON object, in order, until fn returns false. It expects valid JSON and does
// nothing when obj is not an object.
func EachMember(obj []byte, fn func(key, value []byte) bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		keyEnd := skipStringTrusted(obj, i)
		if keyEnd < i+2 {
			return
		}
		key := obj[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = unescapeKey(obj[i:keyEnd])
		}
		start := skipSpace(obj, skipSpace(obj, keyEnd)+1)
		end := skipTrusted(obj, start)
		if start >= end || !fn(key, obj[start:end]) {
			return
		}
		i = skipSpace(obj, end)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
}
