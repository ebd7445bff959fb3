package jsonrpc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/relayrt/relay/jsonrpc"
)

// FuzzDecode checks the codec against encoding/json, the reference reader of JSON:
//   - Decode never panics;
//   - Valid(data) == json.Valid(data) for every input;
//   - Decode reports a parse error exactly when encoding/json calls the frame invalid (DIGEST A11);
//   - Decode agrees with refDecode, a reference built on encoding/json from the rules of DIGEST
//     A1 and C1, on the kind, id, method, params, result, error and error code;
//   - a message Decode accepts is valid JSON, and the result built for its id with AppendResult
//     is valid JSON whose id is the same JSON value (DIGEST C1: echo the id with the same type
//     and value);
//   - SplitBatch, Field, Fields, EachMember and FirstKey return what encoding/json sees as the
//     members of an array or object.
//
// The seed corpus is testdata/fuzz/FuzzDecode; decodeCases adds the unit-test frames.
func FuzzDecode(f *testing.F) {
	for _, tc := range decodeCases() {
		f.Add([]byte(tc.frame))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := jsonrpc.Valid(data), json.Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", data, got, want)
		}
		m, err := jsonrpc.Decode(data)
		var de *jsonrpc.DecodeError
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("Decode(%q) error %v is a %T, not a *DecodeError", data, err, err)
		}
		if err != nil && de.Code != jsonrpc.CodeParseError && de.Code != jsonrpc.CodeInvalidRequest {
			t.Fatalf("Decode(%q) error code %d", data, de.Code)
		}
		if got, want := err != nil && de.Code == jsonrpc.CodeParseError, !json.Valid(data); got != want {
			t.Fatalf("Decode(%q): parse error %v, but encoding/json says invalid %v (err %v)", data, got, want, err)
		}
		if err == nil && !json.Valid(data) {
			t.Fatalf("Decode accepted %q, which is not valid JSON", data)
		}

		if ref, ok := refDecode(data); ok {
			compareRef(t, data, m, err, ref)
		}

		if json.Valid(data) {
			var want string
			wantErr := json.Unmarshal(data, &want)
			if got, ok := jsonrpc.Unquote(data); ok != (wantErr == nil) || got != want {
				t.Fatalf("Unquote(%q) = %q, %v; encoding/json gives %q, %v", data, got, ok, want, wantErr)
			}
		}
		if err == nil && m.ID != nil {
			checkEcho(t, data, m)
			checkReplaceID(t, data, m)
		}
		if jsonrpc.IsBatch(data) {
			checkSplitBatch(t, data)
		}
		if json.Valid(data) && jsonrpc.IsObject(data) {
			checkFields(t, data)
		}
	})
}

// checkEcho builds a result for m's id and checks that encoding/json reads the same id back.
func checkEcho(t *testing.T, data []byte, m jsonrpc.Message) {
	out := jsonrpc.AppendResult(nil, m.ID, []byte("1"))
	if !json.Valid(out) {
		t.Fatalf("AppendResult for the id of %q is not valid JSON: %q", data, out)
	}
	orig, ok := topMembers(data)
	if !ok {
		return // a key that is not UTF-8
	}
	var want, got any
	if err := unmarshalNumber(orig.last["id"], &want); err != nil {
		t.Fatalf("original id %q: %v", orig.last["id"], err)
	}
	var echoed struct{ ID json.RawMessage }
	if err := json.Unmarshal(out, &echoed); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if err := unmarshalNumber(echoed.ID, &got); err != nil {
		t.Fatalf("echoed id %q: %v", echoed.ID, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("id %#v of %q echoed as %#v in %q", want, data, got, out)
	}
}

func unmarshalNumber(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

// checkSplitBatch compares SplitBatch with encoding/json's reading of the array.
func checkSplitBatch(t *testing.T, data []byte) {
	members, err := jsonrpc.SplitBatch(data)
	var ref []json.RawMessage
	refErr := json.Unmarshal(data, &ref)
	if (err == nil) != (refErr == nil) {
		t.Fatalf("SplitBatch(%q) error %v, encoding/json error %v", data, err, refErr)
	}
	if err != nil {
		var de *jsonrpc.DecodeError
		if !errors.As(err, &de) || de.Code != jsonrpc.CodeParseError {
			t.Fatalf("SplitBatch(%q) error %v, want a parse error", data, err)
		}
		return
	}
	if len(members) != len(ref) {
		t.Fatalf("SplitBatch(%q) has %d members, encoding/json %d", data, len(members), len(ref))
	}
	for i := range members {
		if !bytes.Equal(members[i], ref[i]) {
			t.Fatalf("SplitBatch(%q) member %d = %q, encoding/json %q", data, i, members[i], ref[i])
		}
	}
}

// checkFields compares Field, Fields, EachMember and FirstKey with encoding/json's reading of
// a valid object. Keys are compared with escapes resolved; Field returns the first of repeated
// members.
func checkFields(t *testing.T, data []byte) {
	obj, ok := topMembers(data)
	if !ok {
		return
	}
	names := make([]string, 0, len(obj.first)+1)
	for k, v := range obj.first {
		if got := jsonrpc.Field(data, k); !bytes.Equal(got, v) {
			t.Fatalf("Field(%q, %q) = %q, encoding/json %q", data, k, got, v)
		}
		names = append(names, k)
	}
	names = append(names, "\x00not a key")
	out := make([]json.RawMessage, len(names))
	jsonrpc.Fields(data, names, out)
	for i, k := range names {
		if want := obj.first[k]; !bytes.Equal(out[i], want) || (out[i] == nil) != (want == nil) {
			t.Fatalf("Fields(%q) %q = %q, encoding/json %q", data, k, out[i], want)
		}
	}
	i := 0
	jsonrpc.EachMember(data, func(key, value []byte) bool {
		if i >= len(obj.keys) || string(key) != obj.keys[i] || !bytes.Equal(value, obj.values[i]) {
			t.Fatalf("EachMember(%q) member %d = %q: %q; encoding/json has %q", data, i, key, value, obj.keys)
		}
		i++
		return true
	})
	if i != len(obj.keys) {
		t.Fatalf("EachMember(%q) visited %d members, encoding/json has %d", data, i, len(obj.keys))
	}
	want := ""
	if len(obj.rawKeys) > 0 {
		want = obj.rawKeys[0]
	}
	if got := jsonrpc.FirstKey(data); got != want {
		t.Fatalf("FirstKey(%q) = %q, want %q", data, got, want)
	}
}

// members is a JSON object as encoding/json reads it: its members in order, and the first and
// the last value of each key.
type members struct {
	keys    []string // with escapes resolved
	rawKeys []string // as written, without the quotes
	values  []json.RawMessage
	first   map[string]json.RawMessage
	last    map[string]json.RawMessage
	count   map[string]int
}

// topMembers reads the top-level members of a valid JSON object with encoding/json. ok is
// false when data is not an object or a key is not UTF-8 (encoding/json replaces bad bytes in
// a key with U+FFFD, while the codec compares the bytes; DIGEST A1 requires UTF-8).
func topMembers(data []byte) (obj members, ok bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return obj, false
	}
	obj = members{first: map[string]json.RawMessage{}, last: map[string]json.RawMessage{}, count: map[string]int{}}
	for d.More() {
		before := d.InputOffset()
		tok, err := d.Token()
		if err != nil {
			return obj, false
		}
		raw := data[before:d.InputOffset()]
		raw = raw[bytes.IndexByte(raw, '"'):]
		if !utf8.Valid(raw) {
			return obj, false
		}
		key := tok.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return obj, false
		}
		obj.keys = append(obj.keys, key)
		obj.rawKeys = append(obj.rawKeys, string(raw[1:len(raw)-1]))
		obj.values = append(obj.values, v)
		if _, seen := obj.first[key]; !seen {
			obj.first[key] = v
		}
		obj.last[key] = v
		obj.count[key]++
	}
	if _, err := d.Token(); err != nil {
		return obj, false
	}
	if _, err := d.Token(); err != io.EOF {
		return obj, false
	}
	return obj, true
}

// refMessage is what refDecode makes of a frame.
type refMessage struct {
	code   int64 // 0 for a message Decode must accept
	kind   jsonrpc.Kind
	id     []byte
	method string
	params []byte
	result []byte
	error  []byte
}

// refDecode decodes a frame by the rules alone, with encoding/json doing the reading. ok is
// false for a frame it does not judge: an object with a key that is not UTF-8.
func refDecode(data []byte) (ref refMessage, ok bool) {
	if !json.Valid(data) {
		return refMessage{code: jsonrpc.CodeParseError}, true
	}
	if !jsonrpc.IsObject(data) {
		return refMessage{code: jsonrpc.CodeInvalidRequest}, true
	}
	obj, ok := topMembers(data)
	if !ok {
		return ref, false
	}
	has := func(k string) bool { return obj.count[k] > 0 }
	bad := func() { ref.code = jsonrpc.CodeInvalidRequest }

	// Classification (DIGEST A1): a method makes a request (with an id) or a notification;
	// otherwise result or error make a response.
	switch {
	case has("method") && has("id"):
		ref.kind = jsonrpc.KindRequest
	case has("method"):
		ref.kind = jsonrpc.KindNotification
	case has("result") || has("error"):
		ref.kind = jsonrpc.KindResponse
	default:
		bad()
	}
	for _, k := range []string{"jsonrpc", "id", "method", "params", "result", "error"} {
		if obj.count[k] > 1 {
			bad() // a repeated envelope key
		}
	}
	var version any
	if _ = json.Unmarshal(obj.last["jsonrpc"], &version); version != "2.0" {
		bad()
	}
	if has("id") {
		raw := obj.last["id"]
		var v any
		_ = unmarshalNumber(raw, &v)
		switch v := v.(type) {
		case string:
			ref.id = raw
		case json.Number:
			if _, isInt := new(big.Int).SetString(string(v), 10); isInt {
				ref.id = raw
			} else {
				bad()
			}
		case nil:
			if ref.kind == jsonrpc.KindResponse {
				ref.id = raw
			} else {
				bad()
			}
		default:
			bad()
		}
	}
	ref.params = obj.last["params"]
	if string(ref.params) == "null" {
		ref.params = nil
	}
	ref.result, ref.error = obj.last["result"], obj.last["error"]
	switch ref.kind {
	case jsonrpc.KindResponse:
		if (has("result") && has("error")) || !has("id") {
			bad()
		}
	case jsonrpc.KindRequest, jsonrpc.KindNotification:
		if has("result") || has("error") {
			bad()
		}
		var method any
		_ = json.Unmarshal(obj.last["method"], &method)
		if name, isString := method.(string); isString {
			ref.method = name
		} else {
			bad()
		}
	}
	return ref, true
}

func compareRef(t *testing.T, data []byte, m jsonrpc.Message, err error, ref refMessage) {
	t.Helper()
	var code int64
	var de *jsonrpc.DecodeError
	if errors.As(err, &de) {
		code = de.Code
	}
	switch {
	case code != ref.code:
		t.Fatalf("Decode(%q): code %d (%v), reference %d", data, code, err, ref.code)
	case m.Kind != ref.kind:
		t.Fatalf("Decode(%q): kind %v, reference %v", data, m.Kind, ref.kind)
	case !bytes.Equal(m.ID, ref.id) || (m.ID == nil) != (ref.id == nil):
		t.Fatalf("Decode(%q): id %q, reference %q", data, m.ID, ref.id)
	case !bytes.Equal(m.Params, ref.params) || (m.Params == nil) != (ref.params == nil):
		t.Fatalf("Decode(%q): params %q, reference %q", data, m.Params, ref.params)
	}
	if ref.code != 0 {
		return
	}
	if !bytes.Equal(m.Result, ref.result) || !bytes.Equal(m.Error, ref.error) {
		t.Fatalf("Decode(%q): result %q error %q, reference %q %q", data, m.Result, m.Error, ref.result, ref.error)
	}
	// encoding/json replaces invalid UTF-8 in strings; the method of a frame that is not UTF-8
	// (DIGEST A1 requires UTF-8) is compared only as far as that goes.
	if m.Kind != jsonrpc.KindResponse && m.Method != ref.method && (utf8.ValidString(m.Method) || utf8.Valid(data)) {
		t.Fatalf("Decode(%q): method %q, reference %q", data, m.Method, ref.method)
	}
}

// checkReplaceID checks that a proxy's renaming of a decoded message's id changes that id
// and nothing else of what Decode sees.
func checkReplaceID(t *testing.T, data []byte, m jsonrpc.Message) {
	out := jsonrpc.ReplaceID(data, m.ID, jsonrpc.StringID("renamed"))
	got, err := jsonrpc.Decode(out)
	if err != nil {
		t.Fatalf("ReplaceID(%q) = %q, which does not decode: %v", data, out, err)
	}
	if string(got.ID) != `"renamed"` || got.Kind != m.Kind || got.Method != m.Method ||
		string(got.Params) != string(m.Params) || string(got.Result) != string(m.Result) || string(got.Error) != string(m.Error) {
		t.Fatalf("ReplaceID(%q) = %q, decoded as %+v; want %+v with the id \"renamed\"", data, out, got, m)
	}
	owned := append(make([]byte, 0, len(data)+8), data...)
	mo, _ := jsonrpc.Decode(owned)
	if in := jsonrpc.ReplaceIDInPlace(owned, mo.ID, jsonrpc.StringID("renamed")); string(in) != string(out) {
		t.Fatalf("ReplaceIDInPlace(%q) = %q, ReplaceID = %q", data, in, out)
	}
}
