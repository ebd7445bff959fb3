package jsonrpc_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/relayrt/relay/jsonrpc"
)

// decodeCase is one frame and what Decode must make of it. A zero code means success; an empty
// id or params means nil (a present id is never empty: the empty string id is `""`).
type decodeCase struct {
	name   string
	frame  string
	code   int64
	kind   jsonrpc.Kind
	id     string
	method string
	params string
}

const (
	parseErr = jsonrpc.CodeParseError
	invalid  = jsonrpc.CodeInvalidRequest
)

const (
	request      = jsonrpc.KindRequest
	notification = jsonrpc.KindNotification
	response     = jsonrpc.KindResponse
	nokind       = jsonrpc.KindInvalid
)

func decodeCases() []decodeCase {
	req := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` }
	huge := strings.Repeat("9", 400)
	cases := []decodeCase{
		// DIGEST A1, C1: a request id is a string or an integer, echoed with the same JSON type
		// and value; Relay keeps its bytes, so no integer is ever rounded through a float64.
		{name: "DIGEST C1 id echoed byte for byte: 12345678901234567890", frame: req("12345678901234567890"), kind: request, id: "12345678901234567890", method: "ping"},
		{name: "DIGEST C1 id echoed byte for byte: 9007199254740993 (2^53+1)", frame: req("9007199254740993"), kind: request, id: "9007199254740993", method: "ping"},
		{name: "DIGEST C1 id echoed byte for byte: -9223372036854775809 (below int64)", frame: req("-9223372036854775809"), kind: request, id: "-9223372036854775809", method: "ping"},
		{name: "DIGEST C1 id echoed byte for byte: 400-digit integer", frame: req(huge), kind: request, id: huge, method: "ping"},
		{name: "DIGEST C1 id echoed byte for byte: 0", frame: req("0"), kind: request, id: "0", method: "ping"},
		{name: "DIGEST C1 id echoed byte for byte: -0", frame: req("-0"), kind: request, id: "-0", method: "ping"},
		{name: "DIGEST C1 id echoed byte for byte: -42", frame: req("-42"), kind: request, id: "-42", method: "ping"},
		{name: `DIGEST C1 id echoed byte for byte: "abc"`, frame: req(`"abc"`), kind: request, id: `"abc"`, method: "ping"},
		{name: `DIGEST C1 id echoed byte for byte: empty string ""`, frame: req(`""`), kind: request, id: `""`, method: "ping"},
		{name: `DIGEST C1 id echoed byte for byte: escapes "a\"b\\c\/\u00e9\n"`, frame: req(`"a\"b\\c\/\u00e9\n"`), kind: request, id: `"a\"b\\c\/\u00e9\n"`, method: "ping"},
		{name: `DIGEST C1 id echoed byte for byte: surrogate pair "\ud83d\ude00"`, frame: req(`"\ud83d\ude00"`), kind: request, id: `"\ud83d\ude00"`, method: "ping"},
		{name: `DIGEST C1 id echoed byte for byte: raw UTF-8 "héllo 😀"`, frame: req(`"héllo 😀"`), kind: request, id: `"héllo 😀"`, method: "ping"},
		{name: `DIGEST C1 id echoed byte for byte: "12" stays a string`, frame: req(`"12"`), kind: request, id: `"12"`, method: "ping"},
		{name: "DIGEST C1 id echoed without the white space around it", frame: `{"jsonrpc":"2.0","id" :	 7 ,"method":"ping"}`, kind: request, id: "7", method: "ping"},

		// DIGEST A1, C1: a null id is forbidden on a request; the request is still a request
		// (it is answered), but with no id of its own.
		{name: "DIGEST A1 null id on a request is an invalid request", frame: req("null"), code: invalid, kind: request},
		// DIGEST A1: an id is an integer, never a fraction or an exponent.
		{name: "DIGEST A1 id 1.0 is invalid", frame: req("1.0"), code: invalid, kind: request},
		{name: "DIGEST A1 id -1.5 is invalid", frame: req("-1.5"), code: invalid, kind: request},
		{name: "DIGEST A1 id 1e3 is invalid", frame: req("1e3"), code: invalid, kind: request},
		{name: "DIGEST A1 id 1E+3 is invalid", frame: req("1E+3"), code: invalid, kind: request},
		{name: "DIGEST A1 id 0.0 is invalid", frame: req("0.0"), code: invalid, kind: request},
		{name: "DIGEST A1 id true is invalid", frame: req("true"), code: invalid, kind: request},
		{name: "DIGEST A1 id {} is invalid", frame: req("{}"), code: invalid, kind: request},
		{name: `DIGEST A1 id ["1"] is invalid`, frame: req(`["1"]`), code: invalid, kind: request},

		// DIGEST A11: text that is not JSON is -32700, and nothing of it is trusted: no kind, no id.
		{name: "DIGEST A11 parse error: empty frame", frame: "", code: parseErr},
		{name: "DIGEST A11 parse error: only white space", frame: " \t\r\n", code: parseErr},
		{name: "DIGEST A11 parse error: lone brace", frame: "{", code: parseErr},
		{name: "DIGEST A11 parse error: unterminated object", frame: `{"jsonrpc":"2.0","id":1,"method":"ping"`, code: parseErr},
		{name: "DIGEST A11 parse error: trailing comma", frame: `{"jsonrpc":"2.0","id":1,"method":"ping",}`, code: parseErr},
		{name: "DIGEST A11 parse error: single-quoted key", frame: `{'jsonrpc':"2.0"}`, code: parseErr},
		{name: "DIGEST A11 parse error: missing colon", frame: `{"jsonrpc" "2.0"}`, code: parseErr},
		{name: "DIGEST A11 parse error: missing comma", frame: `{"jsonrpc":"2.0" "id":1}`, code: parseErr},
		{name: "DIGEST A11 parse error: unquoted key", frame: `{jsonrpc:"2.0"}`, code: parseErr},
		{name: "DIGEST A11 parse error: two objects on one line", frame: `{"jsonrpc":"2.0","id":1,"method":"ping"}{}`, code: parseErr},
		{name: "DIGEST A11 parse error: text after the object", frame: `{"jsonrpc":"2.0","id":1,"method":"ping"} x`, code: parseErr},
		{name: "DIGEST A11 parse error: raw control character in a string", frame: "{\"jsonrpc\":\"2.0\",\"id\":\"a\x01b\",\"method\":\"ping\"}", code: parseErr},
		{name: "DIGEST A11 parse error: short \\u escape", frame: `{"jsonrpc":"2.0","id":"\u12","method":"ping"}`, code: parseErr},
		{name: "DIGEST A11 parse error: bad escape \\x", frame: `{"jsonrpc":"2.0","id":"\x41","method":"ping"}`, code: parseErr},
		{name: "DIGEST A11 parse error: leading zero 01", frame: req("01"), code: parseErr},
		{name: "DIGEST A11 parse error: bare minus", frame: req("-"), code: parseErr},
		{name: "DIGEST A11 parse error: NaN", frame: req("NaN"), code: parseErr},
		{name: "DIGEST A11 parse error: 1. without digits", frame: req("1."), code: parseErr},
		{name: "DIGEST A11 parse error: truncated literal nul", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","params":nul}`, code: parseErr},
		{name: "DIGEST A11 parse error: bad nested value", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[1,]}}`, code: parseErr},
		{name: "DIGEST C2 parse error: a byte order mark is not JSON", frame: "\xef\xbb\xbf" + req("1"), code: parseErr},
		{name: "DIGEST A11 parse error: invalid JSON that starts like an array", frame: `[1,`, code: parseErr},
		{name: "DIGEST A11 parse error: invalid JSON that starts like a literal", frame: `tru`, code: parseErr},

		// DIGEST A11: valid JSON that is not a message object is -32600.
		{name: "DIGEST A11 valid non-object 42 is an invalid request", frame: "42", code: invalid},
		{name: `DIGEST A11 valid non-object "x" is an invalid request`, frame: `"x"`, code: invalid},
		{name: "DIGEST A11 valid non-object [] is an invalid request", frame: "[]", code: invalid},
		{name: "DIGEST A11 valid non-object [request] is an invalid request (batches are the caller's)", frame: "[" + req("1") + "]", code: invalid},
		{name: "DIGEST A11 valid non-object null is an invalid request", frame: "null", code: invalid},
		{name: "DIGEST A11 valid non-object true is an invalid request", frame: " true ", code: invalid},
		{name: "DIGEST A11 valid non-object -1.5e3 is an invalid request", frame: "-1.5e3", code: invalid},
		{name: "DIGEST A11 empty object is an invalid request", frame: "{}", code: invalid},
		{name: "DIGEST A11 empty object with space is an invalid request", frame: " { } ", code: invalid},
		{name: "DIGEST A11 object without method, result or error keeps its id for the answer", frame: `{"jsonrpc":"2.0","id":5}`, code: invalid, id: "5"},

		// DIGEST C1: "jsonrpc" must be exactly "2.0".
		{name: `DIGEST C1 missing "jsonrpc" is invalid (id kept for the answer)`, frame: `{"id":3,"method":"ping"}`, code: invalid, kind: request, id: "3"},
		{name: `DIGEST C1 "jsonrpc":"1.0" is invalid`, frame: `{"jsonrpc":"1.0","id":3,"method":"ping"}`, code: invalid, kind: request, id: "3"},
		{name: `DIGEST C1 "jsonrpc":2.0 (a number) is invalid`, frame: `{"jsonrpc":2.0,"id":3,"method":"ping"}`, code: invalid, kind: request, id: "3"},
		{name: `DIGEST C1 "jsonrpc":"2.0 " is invalid`, frame: `{"jsonrpc":"2.0 ","id":3,"method":"ping"}`, code: invalid, kind: request, id: "3"},
		{name: `DIGEST C1 "jsonrpc":null is invalid`, frame: `{"jsonrpc":null,"id":3,"method":"ping"}`, code: invalid, kind: request, id: "3"},
		{name: `DIGEST C1 "jsonrpc":"2.00" is invalid`, frame: `{"jsonrpc":"2.00","id":3,"method":"ping"}`, code: invalid, kind: request, id: "3"},
		{name: `DIGEST C1 "jsonrpc":"2\u002e0" is the string 2.0`, frame: `{"jsonrpc":"2\u002e0","id":3,"method":"ping"}`, kind: request, id: "3", method: "ping"},

		// DIGEST A11: "method" must be a string.
		{name: "DIGEST A11 method 1 is invalid; still a request", frame: `{"jsonrpc":"2.0","id":1,"method":1}`, code: invalid, kind: request, id: "1"},
		{name: "DIGEST A11 method null is invalid; still a request", frame: `{"jsonrpc":"2.0","id":1,"method":null}`, code: invalid, kind: request, id: "1"},
		{name: "DIGEST A11 method {} is invalid; still a request", frame: `{"jsonrpc":"2.0","id":1,"method":{}}`, code: invalid, kind: request, id: "1"},
		{name: "DIGEST A11 method [] is invalid; still a notification", frame: `{"jsonrpc":"2.0","method":["ping"]}`, code: invalid, kind: notification},
		{name: `DIGEST A11 method with escapes "tools\/call" is tools/call`, frame: `{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`, kind: request, id: "1", method: "tools/call"},
		{name: `DIGEST A11 method with \u escapes`, frame: `{"jsonrpc":"2.0","id":1,"method":"x-acme\/\u00e9t\u00e9"}`, kind: request, id: "1", method: "x-acme/été"},
		{name: `DIGEST A11 empty method "" is a string`, frame: `{"jsonrpc":"2.0","id":1,"method":""}`, kind: request, id: "1", method: ""},
		{name: "DIGEST A11 unknown method names are not the codec's business", frame: `{"jsonrpc":"2.0","id":1,"method":"no/such/method"}`, kind: request, id: "1", method: "no/such/method"},

		// DIGEST A1, C1: a notification has no id and is never answered, even when malformed,
		// so Kind must say notification whatever else is wrong.
		{name: "DIGEST C1 notification: no id", frame: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, kind: notification, method: "notifications/initialized"},
		{name: "DIGEST C1 notification with params", frame: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":0.5}}`, kind: notification, method: "notifications/progress", params: `{"progress":0.5}`},
		{name: "DIGEST C1 unknown notifications/* is still a notification", frame: `{"jsonrpc":"2.0","method":"notifications/x-unknown"}`, kind: notification, method: "notifications/x-unknown"},
		{name: "DIGEST C1 malformed notification: no jsonrpc, still never answered", frame: `{"method":"notifications/cancelled"}`, code: invalid, kind: notification},
		{name: "DIGEST C1 malformed notification: wrong jsonrpc, still never answered", frame: `{"jsonrpc":"1.0","method":"x"}`, code: invalid, kind: notification},
		{name: "DIGEST C1 malformed notification: method 7, still never answered", frame: `{"jsonrpc":"2.0","method":7}`, code: invalid, kind: notification},
		{name: "DIGEST C1 malformed notification: with result, still never answered", frame: `{"jsonrpc":"2.0","method":"x","result":{}}`, code: invalid, kind: notification},
		{name: "DIGEST C1 malformed notification: with error, still never answered", frame: `{"jsonrpc":"2.0","method":"x","error":{}}`, code: invalid, kind: notification},
		{name: "DIGEST C1 malformed notification: duplicate method, still never answered", frame: `{"jsonrpc":"2.0","method":"x","method":"y"}`, code: invalid, kind: notification},

		// DIGEST A1: a response has result or error and no method; the runtime never answers it.
		{name: "DIGEST A1 response with result", frame: `{"jsonrpc":"2.0","id":9,"result":{"resultType":"complete"}}`, kind: response, id: "9"},
		{name: "DIGEST A1 response with error", frame: `{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"Method not found"}}`, kind: response, id: `"a"`},
		{name: "DIGEST C1 response with id null answers an unreadable request", frame: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, kind: response, id: "null"},
		{name: "DIGEST A1 response with result null", frame: `{"jsonrpc":"2.0","id":1,"result":null}`, kind: response, id: "1"},
		{name: "DIGEST A1 malformed response: result and error, still never answered", frame: `{"jsonrpc":"2.0","id":1,"result":1,"error":{}}`, code: invalid, kind: response, id: "1"},
		{name: "DIGEST A1 malformed response: no id, still never answered", frame: `{"jsonrpc":"2.0","result":1}`, code: invalid, kind: response},
		{name: "DIGEST A1 malformed response: no jsonrpc, still never answered", frame: `{"id":1,"result":1}`, code: invalid, kind: response, id: "1"},
		{name: "DIGEST A1 malformed response: fraction id, still never answered", frame: `{"jsonrpc":"2.0","id":1.5,"result":1}`, code: invalid, kind: response},
		{name: "DIGEST A1 malformed response: object id, still never answered", frame: `{"jsonrpc":"2.0","id":{},"error":{}}`, code: invalid, kind: response},
		{name: "DIGEST A1 malformed response: duplicate result, still never answered", frame: `{"jsonrpc":"2.0","id":1,"result":1,"result":2}`, code: invalid, kind: response, id: "1"},
		{name: "DIGEST A1 a request may not carry result", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, code: invalid, kind: request, id: "1"},
		{name: "DIGEST A1 a request may not carry error", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","error":{}}`, code: invalid, kind: request, id: "1"},

		// Package doc: a repeated envelope key makes the message invalid, so two readers of the
		// frame cannot disagree on what it says.
		{name: `duplicate envelope key "jsonrpc" is invalid`, frame: `{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"}`, code: invalid, kind: request, id: "1"},
		{name: `duplicate envelope key "id" is invalid`, frame: `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, code: invalid, kind: request, id: "2"},
		{name: `duplicate envelope key "method" is invalid`, frame: `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`, code: invalid, kind: request, id: "1"},
		{name: `duplicate envelope key "params" is invalid`, frame: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{},"params":{}}`, code: invalid, kind: request, id: "1", params: "{}"},
		{name: `duplicate envelope key "result" is invalid`, frame: `{"jsonrpc":"2.0","id":1,"result":{},"result":{}}`, code: invalid, kind: response, id: "1"},
		{name: `duplicate envelope key "error" is invalid`, frame: `{"jsonrpc":"2.0","id":1,"error":{},"error":{}}`, code: invalid, kind: response, id: "1"},
		{name: "duplicate unknown key is not the codec's business", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","x":1,"x":2}`, kind: request, id: "1", method: "ping"},
		{name: "DIGEST C1 unknown members are ignored", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","_meta":{},"x-acme":[1]}`, kind: request, id: "1", method: "ping"},
		{name: `envelope keys are case-sensitive: "ID" is not the id`, frame: `{"jsonrpc":"2.0","ID":1,"method":"ping"}`, kind: notification, method: "ping"},
		{name: `envelope keys are case-sensitive: "Method" is not the method`, frame: `{"jsonrpc":"2.0","id":1,"Method":"ping"}`, code: invalid, id: "1"},

		// RFC 8259 §8.3: a key with escapes is the same string as the key it spells, so
		// "\u0069d" is the id member; reading it as an unknown key turns a request into a
		// notification that is never answered (DIGEST A1) and lets two readers disagree.
		{name: `DIGEST A1 escaped key "\u0069d" is the id: the request is answered`, frame: `{"jsonrpc":"2.0","\u0069d":1,"method":"ping"}`, kind: request, id: "1", method: "ping"},
		{name: `DIGEST A1 escaped key "\u006dethod" repeating "method" is a duplicate`, frame: `{"jsonrpc":"2.0","id":1,"method":"ping","\u006dethod":"tools/call"}`, code: invalid, kind: request, id: "1"},
		{name: `DIGEST C1 escaped key "json\u0072pc" is jsonrpc`, frame: `{"json\u0072pc":"2.0","id":1,"method":"ping"}`, kind: request, id: "1", method: "ping"},

		// DIGEST C1: null counts as absent, so "params": null is no params at all.
		{name: "DIGEST C1 params null treated as absent", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`, kind: request, id: "1", method: "ping"},
		{name: "DIGEST C1 params null with space treated as absent", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","params" :  null }`, kind: request, id: "1", method: "ping"},
		{name: "DIGEST C1 params null on a notification treated as absent", frame: `{"jsonrpc":"2.0","method":"x","params":null}`, kind: notification, method: "x"},
		{name: "DIGEST C1 params kept raw without surrounding space", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","params":  {"a" : [1, 2.5e3, "\u00e9"]}  }`, kind: request, id: "1", method: "ping", params: `{"a" : [1, 2.5e3, "\u00e9"]}`},
		{name: "DIGEST C1 params that are not an object are left to the runtime", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","params":[1,2]}`, kind: request, id: "1", method: "ping", params: `[1,2]`},
		{name: "DIGEST C1 empty params object", frame: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`, kind: request, id: "1", method: "ping", params: `{}`},
		{name: "DIGEST C1 member order does not matter", frame: `{"params":{},"method":"ping","id":"z","jsonrpc":"2.0"}`, kind: request, id: `"z"`, method: "ping", params: `{}`},
		{name: "DIGEST A12 white space around and inside the envelope", frame: " \t{ \"jsonrpc\" : \"2.0\" ,\r\n \"id\" : 1 , \"method\" : \"ping\" } \r", kind: request, id: "1", method: "ping"},
	}
	return cases
}

func TestDecode(t *testing.T) {
	for _, tc := range decodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			m, err := jsonrpc.Decode([]byte(tc.frame))
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("Decode(%s) = %v, want success", tc.frame, err)
				}
				if !json.Valid([]byte(tc.frame)) {
					t.Errorf("Decode accepted %s, which encoding/json calls invalid", tc.frame)
				}
			} else {
				var de *jsonrpc.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("Decode(%s) error = %v (%T), want a *DecodeError with code %d", tc.frame, err, err, tc.code)
				}
				if de.Code != tc.code {
					t.Errorf("Decode(%s) code = %d (%v), want %d", tc.frame, de.Code, de, tc.code)
				}
				if got, want := de.Code == jsonrpc.CodeParseError, !json.Valid([]byte(tc.frame)); got != want {
					t.Errorf("Decode(%s): parse error = %v, but encoding/json says invalid = %v", tc.frame, got, want)
				}
			}
			if m.Kind != tc.kind {
				t.Errorf("Decode(%s).Kind = %v, want %v", tc.frame, m.Kind, tc.kind)
			}
			if (m.ID == nil) != (tc.id == "") || string(m.ID) != tc.id {
				t.Errorf("Decode(%s).ID = %q (nil: %v), want %q", tc.frame, m.ID, m.ID == nil, tc.id)
			}
			if tc.code == 0 && (m.Kind == request || m.Kind == notification) && m.Method != tc.method {
				t.Errorf("Decode(%s).Method = %q, want %q", tc.frame, m.Method, tc.method)
			}
			if (m.Params == nil) != (tc.params == "") || string(m.Params) != tc.params {
				t.Errorf("Decode(%s).Params = %q (nil: %v), want %q", tc.frame, m.Params, m.Params == nil, tc.params)
			}
		})
	}
}

// TestDecodeResponseMembers checks that a response's result and error are kept raw.
func TestDecodeResponseMembers(t *testing.T) {
	m, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"result": {"resultType":"complete"} }`))
	if err != nil || string(m.Result) != `{"resultType":"complete"}` || m.Error != nil {
		t.Errorf("result response: %+v, %v", m, err)
	}
	m, err = jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`))
	if err != nil || string(m.Error) != `{"code":-32601,"message":"x"}` || m.Result != nil {
		t.Errorf("error response: %+v, %v", m, err)
	}
}

// TestDecodeAliasesFrame checks the documented aliasing: the id and params are slices of the
// frame, not copies.
func TestDecodeAliasesFrame(t *testing.T) {
	frame := []byte(`{"jsonrpc":"2.0","id":"abc","method":"x","params":{"k":1}}`)
	m, err := jsonrpc.Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	copy(frame[strings.Index(string(frame), `"abc"`):], `"xyz"`)
	if string(m.ID) != `"xyz"` {
		t.Errorf("ID = %s after changing the frame, want it to alias the frame", m.ID)
	}
}

// TestDecodeInternedMethodsDoNotAllocate checks that decoding a request for an interned method
// name (a protocol's own: runtime.NewServer interns its profile's) allocates nothing.
func TestDecodeInternedMethodsDoNotAllocate(t *testing.T) {
	jsonrpc.Intern("tools/call")
	if !jsonrpc.Interned("tools/call") || jsonrpc.Interned("tools/calls") {
		t.Fatal("Interned does not say which names were interned")
	}
	frame := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := jsonrpc.Decode(frame); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Decode allocated %v times per request, want 0", allocs)
	}
}

// TestDecodeErrorAsError checks the error object that answers a decoding failure (DIGEST A11).
func TestDecodeErrorAsError(t *testing.T) {
	_, err := jsonrpc.Decode([]byte("{"))
	var de *jsonrpc.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("Decode({) = %v, want a *DecodeError", err)
	}
	e := de.AsError()
	if e.Code != jsonrpc.CodeParseError || !strings.HasPrefix(e.Message, "Parse error: ") {
		t.Errorf("parse error answers with %+v", e)
	}
	if !strings.HasPrefix(de.Error(), "jsonrpc: ") {
		t.Errorf("Error() = %q", de.Error())
	}
	_, err = jsonrpc.Decode([]byte("42"))
	if !errors.As(err, &de) {
		t.Fatalf("Decode(42) = %v, want a *DecodeError", err)
	}
	e = de.AsError()
	if e.Code != jsonrpc.CodeInvalidRequest || !strings.HasPrefix(e.Message, "Invalid request: ") {
		t.Errorf("invalid request answers with %+v", e)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[jsonrpc.Kind]string{
		jsonrpc.KindInvalid: "invalid", jsonrpc.KindRequest: "request",
		jsonrpc.KindNotification: "notification", jsonrpc.KindResponse: "response", 99: "invalid",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

// nested returns n arrays nested inside one another around v.
func nested(n int, v string) string {
	return strings.Repeat("[", n) + v + strings.Repeat("]", n)
}

func TestValid(t *testing.T) {
	cases := []struct {
		name string
		data string
	}{
		{"empty", ""},
		{"space", "  "},
		{"number", "1"},
		{"negative fraction exponent", "-0.5e-10"},
		{"leading zero", "01"},
		{"plus sign", "+1"},
		{"dot first", ".5"},
		{"exponent without digits", "1e"},
		{"exponent sign without digits", "1e+"},
		{"string", `"a"`},
		{"unterminated string", `"a`},
		{"string with escapes", `"\"\\\/\b\f\n\r\t\u00e9"`},
		{"string with bad escape", `"\a"`},
		{"string with tab", "\"a\tb\""},
		{"string with DEL", "\"\x7f\""},
		{"string with invalid UTF-8", "\"\xff\xfe\""},
		{"literals", `[true,false,null]`},
		{"capitalised literal", `True`},
		{"object", `{"a":{"b":[1,{}]}}`},
		{"object with number key", `{1:2}`},
		{"array trailing comma", `[1,]`},
		{"array leading comma", `[,1]`},
		{"two values", `1 2`},
		{"surrounding white space", " \t\r\n{}\n"},
		{"vertical tab is not white space", "\v{}"},
		{"form feed is not white space", "{}\f"},
		{"NUL after value", "{}\x00"},
		{"depth 10000 (encoding/json's limit)", nested(10000, "1")},
		{"depth 10001 (over encoding/json's limit)", nested(10001, "1")},
		{"object depth 10000", strings.Repeat(`{"a":`, 9999) + "{}" + strings.Repeat("}", 9999)},
		{"object depth 10001", strings.Repeat(`{"a":`, 10000) + "{}" + strings.Repeat("}", 10000)},
	}
	for _, tc := range cases {
		t.Run("Valid agrees with encoding/json: "+tc.name, func(t *testing.T) {
			if got, want := jsonrpc.Valid([]byte(tc.data)), json.Valid([]byte(tc.data)); got != want {
				t.Errorf("Valid(%.60q) = %v, encoding/json says %v", tc.data, got, want)
			}
		})
	}
}

// TestDecodeDepth checks that Decode applies encoding/json's nesting limit, counting the
// envelope as the first level.
func TestDecodeDepth(t *testing.T) {
	for _, n := range []int{9999, 10000} {
		frame := `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + nested(n, "1") + `}`
		_, err := jsonrpc.Decode([]byte(frame))
		wantOK := json.Valid([]byte(frame))
		var de *jsonrpc.DecodeError
		switch {
		case wantOK && err != nil:
			t.Errorf("params nested %d deep: %v, but encoding/json accepts it", n, err)
		case !wantOK && (!errors.As(err, &de) || de.Code != jsonrpc.CodeParseError):
			t.Errorf("params nested %d deep: %v, want a parse error as encoding/json rejects it", n, err)
		}
	}
}

func TestIsBatch(t *testing.T) {
	for frame, want := range map[string]bool{
		"[]": true, " \r\n[1]": true, "[": true, "{}": false, "": false, "  ": false, `"["`: false,
	} {
		if got := jsonrpc.IsBatch([]byte(frame)); got != want {
			t.Errorf("IsBatch(%q) = %v, want %v", frame, got, want)
		}
	}
}

func TestSplitBatch(t *testing.T) {
	cases := []struct {
		name    string
		frame   string
		members []string
		code    int64
	}{
		{name: "DIGEST C9 empty batch has no members", frame: "[]", members: nil},
		{name: "DIGEST C9 empty batch with space", frame: " [ \n ] ", members: nil},
		{name: "DIGEST C9 members kept raw and in order", frame: `[{"jsonrpc":"2.0","id":1,"method":"a"}, {"jsonrpc":"2.0","method":"b"} ]`,
			members: []string{`{"jsonrpc":"2.0","id":1,"method":"a"}`, `{"jsonrpc":"2.0","method":"b"}`}},
		{name: "DIGEST C9 malformed members are still members", frame: `[1,"x",null,[2,[3]],{}]`,
			members: []string{"1", `"x"`, "null", "[2,[3]]", "{}"}},
		{name: "DIGEST C9 members with strings holding brackets and commas", frame: `[ "],[" , {"a":"]"} ]`,
			members: []string{`"],["`, `{"a":"]"}`}},
		{name: "DIGEST C9 not an array is a parse error", frame: `{}`, code: parseErr},
		{name: "DIGEST C9 empty frame is a parse error", frame: ``, code: parseErr},
		{name: "DIGEST C9 unterminated batch is a parse error", frame: `[{"jsonrpc":"2.0"},`, code: parseErr},
		{name: "DIGEST C9 batch with trailing text is a parse error", frame: `[1] 2`, code: parseErr},
		{name: "DIGEST C9 batch with a bad member is a parse error", frame: `[1,{]`, code: parseErr},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			members, err := jsonrpc.SplitBatch([]byte(tc.frame))
			if tc.code != 0 {
				var de *jsonrpc.DecodeError
				if !errors.As(err, &de) || de.Code != tc.code {
					t.Fatalf("SplitBatch(%q) = %q, %v; want a *DecodeError with code %d", tc.frame, members, err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("SplitBatch(%q): %v", tc.frame, err)
			}
			if len(members) != len(tc.members) {
				t.Fatalf("SplitBatch(%q) = %q, want %q", tc.frame, members, tc.members)
			}
			for i := range members {
				if string(members[i]) != tc.members[i] {
					t.Errorf("member %d = %q, want %q", i, members[i], tc.members[i])
				}
			}
		})
	}
}

func TestField(t *testing.T) {
	obj := `{ "name" : "echo", "arguments":{"name":"inner"}, "n":-1.5e3, "t":true, "z":null, "":"empty key", "a\"b":1, "list":[1,{"x":2}] }`
	cases := []struct {
		name string
		obj  string
		key  string
		want string // "" means nil
	}{
		{"string member, without the space around it", obj, "name", `"echo"`},
		{"object member kept raw", obj, "arguments", `{"name":"inner"}`},
		{"number member", obj, "n", "-1.5e3"},
		{"true member", obj, "t", "true"},
		{"null member is null, not absent", obj, "z", "null"},
		{"empty key", obj, "", `"empty key"`},
		{"array member", obj, "list", `[1,{"x":2}]`},
		{"missing member", obj, "missing", ""},
		{"nested members are not top-level members", obj, "x", ""},
		{"keys are compared exactly (case)", obj, "Name", ""},
		{"first of two duplicate members", `{"a":1,"a":2}`, "a", "1"},
		{"RFC 8259 escapes in keys are resolved", `{"n\u0061me":"x","b":1}`, "name", `"x"`},
		{"an escaped key matches only what it spells", `{"a\"b":1}`, `a"b`, "1"},
		{"first of two members that spell the same key", `{"\u0061":1,"a":2}`, "a", "1"},
		{"not an object: array", `[{"a":1}]`, "a", ""},
		{"not an object: string", `"a"`, "a", ""},
		{"not an object: nil", ``, "a", ""},
		{"empty object", `{}`, "a", ""},
		{"leading white space", " \n{\"a\":1}", "a", "1"},
		{"DIGEST A2 _meta of params", `{"_meta":{"progressToken":"t"},"x":1}`, "_meta", `{"progressToken":"t"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := jsonrpc.Field([]byte(tc.obj), tc.key)
			if (got == nil) != (tc.want == "") || string(got) != tc.want {
				t.Errorf("Field(%s, %q) = %q, want %q", tc.obj, tc.key, got, tc.want)
			}
		})
	}
}

// TestFieldDoesNotAllocate guards the fast path of the param lookups done for every request.
func TestFieldDoesNotAllocate(t *testing.T) {
	params := []byte(`{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":1}}`)
	allocs := testing.AllocsPerRun(100, func() {
		if jsonrpc.Field(params, "_meta") == nil {
			t.Fatal("no _meta")
		}
	})
	if allocs != 0 {
		t.Errorf("Field allocated %v times, want 0", allocs)
	}
}

func TestFields(t *testing.T) {
	obj := []byte(`{"name":"echo","arguments":{"a":1},"n\u0061me":"second","_meta":null}`)
	names := []string{"arguments", "missing", "name", "_meta"}
	out := []json.RawMessage{json.RawMessage("stale"), json.RawMessage("stale"), nil, nil}
	jsonrpc.Fields(obj, names, out)
	want := []string{`{"a":1}`, "", `"echo"`, "null"}
	for i := range names {
		if (out[i] == nil) != (want[i] == "") || string(out[i]) != want[i] {
			t.Errorf("Fields: %s = %q, want %q (first of repeated members; absent is nil)", names[i], out[i], want[i])
		}
		if got := jsonrpc.Field(obj, names[i]); string(got) != string(out[i]) {
			t.Errorf("Fields and Field disagree on %s: %q, %q", names[i], out[i], got)
		}
	}
	jsonrpc.Fields([]byte(`[1]`), names, out)
	for i := range out {
		if out[i] != nil {
			t.Errorf("Fields of an array set %s = %q", names[i], out[i])
		}
	}
}

func TestEachMember(t *testing.T) {
	type member struct{ key, value string }
	collect := func(obj string, stopAfter int) []member {
		var got []member
		jsonrpc.EachMember([]byte(obj), func(key, value []byte) bool {
			got = append(got, member{string(key), string(value)})
			return len(got) != stopAfter
		})
		return got
	}
	cases := []struct {
		name      string
		obj       string
		stopAfter int
		want      []member
	}{
		{"members in order, values raw", ` { "b" : [1, 2] , "a":"x" ,"c":{"d":null}} `, 0,
			[]member{{"b", "[1, 2]"}, {"a", `"x"`}, {"c", `{"d":null}`}}},
		{"RFC 8259 escapes in keys resolved", `{"\u0069d":1,"a\nb":2,"\ud83d\ude00":3}`, 0,
			[]member{{"id", "1"}, {"a\nb", "2"}, {"😀", "3"}}},
		{"repeated keys all visited", `{"a":1,"a":2}`, 0, []member{{"a", "1"}, {"a", "2"}}},
		{"stops when fn returns false", `{"a":1,"b":2,"c":3}`, 2, []member{{"a", "1"}, {"b", "2"}}},
		{"empty object", `{}`, 0, nil},
		{"not an object", `[{"a":1}]`, 0, nil},
		{"empty input", ``, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := collect(tc.obj, tc.stopAfter)
			if len(got) != len(tc.want) {
				t.Fatalf("EachMember(%s) = %q, want %q", tc.obj, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("member %d = %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestFirstKey(t *testing.T) {
	for obj, want := range map[string]string{
		`{"resultType":"complete","x":1}`: "resultType",
		` { "_meta" : {} }`:               "_meta",
		`{}`:                              "",
		`[]`:                              "",
		``:                                "",
		`"x"`:                             "",
		`{"\u0061":1}`:                    `\u0061`, // documented: not unquoted
	} {
		if got := jsonrpc.FirstKey([]byte(obj)); got != want {
			t.Errorf("FirstKey(%s) = %q, want %q", obj, got, want)
		}
	}
}

func TestIsObject(t *testing.T) {
	for raw, want := range map[string]bool{`{}`: true, ` {"a":1}`: true, `[]`: false, `null`: false, ``: false, `"{"`: false} {
		if got := jsonrpc.IsObject([]byte(raw)); got != want {
			t.Errorf("IsObject(%q) = %v, want %v", raw, got, want)
		}
	}
}

// TestIsRequestID checks the id rule (DIGEST A1, C1) on raw values taken from valid JSON.
func TestIsRequestID(t *testing.T) {
	for raw, want := range map[string]bool{
		`1`: true, `-7`: true, `0`: true, `12345678901234567890`: true, `"x"`: true, `""`: true, `"\u0000"`: true,
		`null`: false, `1.5`: false, `1e2`: false, `-1E-2`: false, `true`: false, `{}`: false, `[]`: false, ``: false,
	} {
		if got := jsonrpc.IsRequestID([]byte(raw)); got != want {
			t.Errorf("IsRequestID(%q) = %v, want %v", raw, got, want)
		}
	}
}

func TestIDs(t *testing.T) {
	if got := jsonrpc.IntID(-12).String(); got != "-12" {
		t.Errorf("IntID(-12) = %s", got)
	}
	if got := jsonrpc.StringID("a\"b\n<").String(); got != `"a\"b\n\u003c"` {
		t.Errorf("StringID = %s", got)
	}
	if !jsonrpc.IntID(1).Equal(jsonrpc.ID("1")) {
		t.Error("IntID(1) != ID(1)")
	}
	// DIGEST C1: same JSON type and value; 1 and "1" are different ids.
	if jsonrpc.IntID(1).Equal(jsonrpc.StringID("1")) {
		t.Error(`1 equals "1"`)
	}
	if string(jsonrpc.Null) != "null" {
		t.Errorf("Null = %s", jsonrpc.Null)
	}
}

func TestUnquote_AsEncodingJSONDoes(t *testing.T) {
	for _, v := range []string{`"plain"`, `""`, `"esc\"aped\n"`, `"\u00e9t\u00e9"`, `"é"`, "\"\xff\xfe\"", `"\ud800"`, `12`, `null`, `{"a":"b"}`, `["x"]`, `true`} {
		obj := []byte(`{"other":"x","k":` + v + `}`)
		got, ok := jsonrpc.Unquote(jsonrpc.Field(obj, "k"))
		var want string
		wantOK := json.Unmarshal([]byte(v), &want) == nil
		if ok != wantOK || got != want {
			t.Errorf("Unquote(%s) = %q, %v; encoding/json gives %q, %v", v, got, ok, want, wantOK)
		}
	}
	if s, ok := jsonrpc.Unquote(nil); ok || s != "" {
		t.Errorf("Unquote(nil) = %q, %v; want \"\", false", s, ok)
	}
}
