package jsonrpc_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/relayrt/relay/jsonrpc"
)

// decodeObject decodes an encoder's output with encoding/json, numbers kept as json.Number,
// failing the test when it is not exactly one valid JSON object.
func decodeObject(t *testing.T, out []byte) map[string]any {
	t.Helper()
	if !json.Valid(out) {
		t.Fatalf("output is not valid JSON: %s", out)
	}
	if bytes.IndexByte(out, '\n') >= 0 {
		t.Fatalf("DIGEST A12: output spans lines: %q", out)
	}
	d := json.NewDecoder(bytes.NewReader(out))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	return m
}

// awkward is a string that needs every kind of escaping.
const awkward = "quote\" backslash\\ newline\n tab\t nul\x00 html<>& é 😀 \u2028 invalid\xff"

func TestAppendResult(t *testing.T) {
	cases := []struct {
		name   string
		id     jsonrpc.ID
		result string
		wantID any
	}{
		{"DIGEST C1 id echoed byte for byte: 12345678901234567890", jsonrpc.ID("12345678901234567890"), `{"resultType":"complete"}`, json.Number("12345678901234567890")},
		{"DIGEST C1 id echoed byte for byte: -3", jsonrpc.IntID(-3), `{}`, json.Number("-3")},
		{"DIGEST C1 id echoed byte for byte: empty string", jsonrpc.ID(`""`), `null`, ""},
		{"DIGEST C1 id echoed byte for byte: string with escapes", jsonrpc.ID(`"a\"b\u00e9"`), `[1,2]`, `a"bé`},
		{"DIGEST C1 id echoed byte for byte: StringID with awkward text", jsonrpc.StringID(awkward), `"ok"`, string([]rune(awkward))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("keep:")
			out := jsonrpc.AppendResult(prefix, tc.id, []byte(tc.result))
			if !bytes.HasPrefix(out, prefix) {
				t.Fatalf("AppendResult did not append: %q", out)
			}
			m := decodeObject(t, out[len(prefix):])
			if m["jsonrpc"] != "2.0" {
				t.Errorf("jsonrpc = %v", m["jsonrpc"])
			}
			if !reflect.DeepEqual(m["id"], tc.wantID) {
				t.Errorf("id = %#v, want %#v", m["id"], tc.wantID)
			}
			if !bytes.Contains(out, append([]byte(`"id":`), tc.id...)) {
				t.Errorf("id bytes not echoed as they came: %s", out)
			}
			if _, ok := m["result"]; !ok {
				t.Errorf("no result: %s", out)
			}
			back, err := jsonrpc.Decode(out[len(prefix):])
			if err != nil || back.Kind != jsonrpc.KindResponse || !back.ID.Equal(tc.id) || string(back.Result) != tc.result {
				t.Errorf("Decode(AppendResult) = %+v, %v", back, err)
			}
		})
	}
}

func TestAppendError(t *testing.T) {
	cases := []struct {
		name     string
		id       jsonrpc.ID
		err      *jsonrpc.Error
		wantID   any
		hasID    bool
		wantData any
	}{
		{name: "DIGEST A1 MCP: nil id leaves the member out", id: nil,
			err: jsonrpc.Errorf(jsonrpc.CodeParseError, "Parse error"), hasID: false},
		{name: "DIGEST C1 RCP: Null id writes null", id: jsonrpc.Null,
			err: jsonrpc.Errorf(jsonrpc.CodeParseError, "Parse error"), hasID: true, wantID: nil},
		{name: "DIGEST C1 id echoed byte for byte: 12345678901234567890", id: jsonrpc.ID("12345678901234567890"),
			err: jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found"), hasID: true, wantID: json.Number("12345678901234567890")},
		{name: "DIGEST A1 message with every kind of escaping is valid JSON", id: jsonrpc.StringID("x"),
			err: jsonrpc.Errorf(jsonrpc.CodeInvalidParams, awkward), hasID: true, wantID: "x"},
		{name: "DIGEST A11 data is encoded", id: jsonrpc.IntID(1),
			err:   &jsonrpc.Error{Code: -32022, Message: "Unsupported protocol version", Data: map[string]any{"supported": []string{"2026-07-28"}, "requested": "1999"}},
			hasID: true, wantID: json.Number("1"), wantData: map[string]any{"supported": []any{"2026-07-28"}, "requested": "1999"}},
		{name: "DIGEST A11 raw data is sent as it is", id: jsonrpc.IntID(1),
			err:   &jsonrpc.Error{Code: -32602, Message: "x", Data: json.RawMessage(`{"limitBytes":64}`)},
			hasID: true, wantID: json.Number("1"), wantData: map[string]any{"limitBytes": json.Number("64")}},
		{name: "DIGEST C1 data that cannot be encoded (NaN) is left out, not written broken", id: jsonrpc.IntID(1),
			err:   &jsonrpc.Error{Code: -32603, Message: "x", Data: math.NaN()},
			hasID: true, wantID: json.Number("1")},
		{name: "DIGEST A11 data that cannot be encoded (channel) is left out", id: jsonrpc.IntID(1),
			err:   &jsonrpc.Error{Code: -32603, Message: "x", Data: make(chan int)},
			hasID: true, wantID: json.Number("1")},
		{name: "DIGEST A11 invalid raw data is left out", id: jsonrpc.IntID(1),
			err:   &jsonrpc.Error{Code: -32603, Message: "x", Data: json.RawMessage(`{`)},
			hasID: true, wantID: json.Number("1")},
		{name: "DIGEST A11 extreme codes", id: jsonrpc.IntID(1),
			err: jsonrpc.Errorf(math.MinInt64, ""), hasID: true, wantID: json.Number("1")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := jsonrpc.AppendError(nil, tc.id, tc.err)
			m := decodeObject(t, out)
			id, hasID := m["id"]
			if hasID != tc.hasID || !reflect.DeepEqual(id, tc.wantID) {
				t.Errorf("id = %#v (present %v), want %#v (present %v): %s", id, hasID, tc.wantID, tc.hasID, out)
			}
			e, ok := m["error"].(map[string]any)
			if !ok {
				t.Fatalf("error is %#v", m["error"])
			}
			if got, want := e["code"], json.Number(jsonrpc.IntID(tc.err.Code).String()); got != want {
				t.Errorf("code = %v, want %v", got, want)
			}
			if got := e["message"]; got != string([]rune(tc.err.Message)) {
				t.Errorf("message = %q, want %q", got, tc.err.Message)
			}
			data, hasData := e["data"]
			if hasData != (tc.wantData != nil) || !reflect.DeepEqual(data, tc.wantData) {
				t.Errorf("data = %#v, want %#v", data, tc.wantData)
			}
			if _, ok := m["result"]; ok {
				t.Errorf("error response has a result: %s", out)
			}
		})
	}
}

func TestAppendRequestAndNotification(t *testing.T) {
	cases := []struct {
		name   string
		out    []byte
		kind   jsonrpc.Kind
		id     string
		method string
		params string
	}{
		{"request with params", jsonrpc.AppendRequest(nil, jsonrpc.IntID(7), "sampling/createMessage", []byte(`{"a":1}`)), jsonrpc.KindRequest, "7", "sampling/createMessage", `{"a":1}`},
		{"request without params leaves them out", jsonrpc.AppendRequest(nil, jsonrpc.StringID("r-1"), "roots/list", nil), jsonrpc.KindRequest, `"r-1"`, "roots/list", ""},
		{"DIGEST A1 notification has no id", jsonrpc.AppendNotification(nil, "notifications/progress", []byte(`{"progress":1}`)), jsonrpc.KindNotification, "", "notifications/progress", `{"progress":1}`},
		{"DIGEST A1 notification without params", jsonrpc.AppendNotification(nil, "notifications/initialized", nil), jsonrpc.KindNotification, "", "notifications/initialized", ""},
		{"method name that needs escaping", jsonrpc.AppendNotification(nil, awkward, nil), jsonrpc.KindNotification, "", string([]rune(awkward)), ""},
		{"empty method name", jsonrpc.AppendNotification(nil, "", []byte(`{}`)), jsonrpc.KindNotification, "", "", "{}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := decodeObject(t, tc.out)
			if m["jsonrpc"] != "2.0" || m["method"] != tc.method {
				t.Errorf("decoded %#v, want method %q", m, tc.method)
			}
			if _, ok := m["id"]; ok != (tc.id != "") {
				t.Errorf("id present = %v, want %v: %s", ok, tc.id != "", tc.out)
			}
			if _, ok := m["params"]; ok != (tc.params != "") {
				t.Errorf("params present = %v, want %v: %s", ok, tc.params != "", tc.out)
			}
			back, err := jsonrpc.Decode(tc.out)
			if err != nil {
				t.Fatalf("Decode(%s): %v", tc.out, err)
			}
			if back.Kind != tc.kind || string(back.ID) != tc.id || back.Method != tc.method || string(back.Params) != tc.params {
				t.Errorf("Decode(%s) = %+v", tc.out, back)
			}
		})
	}
}

func TestErrorIsAGoError(t *testing.T) {
	var err error = jsonrpc.Errorf(-32601, "Method not found")
	if got := err.Error(); got != "Method not found (JSON-RPC error -32601)" {
		t.Errorf("Error() = %q", got)
	}
}
