package jsonrpc

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzSetMember checks SetMember against decoding into a map and setting the key there.
func FuzzSetMember(f *testing.F) {
	for _, seed := range []struct{ obj, key, value string }{
		{`{}`, "id", `1`}, {`{"id":"a","x":[1,{"id":2}]}`, "id", `"b"`}, {` { "a" : 1 } `, "id", `null`},
		{`[1,2]`, "k", `true`}, {`{"a":{"b":1}}`, "_meta", `{"p":1}`},
	} {
		f.Add(seed.obj, seed.key, seed.value)
	}
	f.Fuzz(func(t *testing.T, obj, key, value string) {
		if !Valid([]byte(obj)) || !Valid([]byte(value)) {
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(obj), &m) != nil || m == nil {
			m = map[string]json.RawMessage{}
		}
		var dup int
		EachMember([]byte(obj), func(k, _ []byte) bool {
			if string(k) == key {
				dup++
			}
			return true
		})
		if dup > 1 {
			return // which of two equal keys wins is a matter of taste; encoding/json takes the last
		}
		m[key] = json.RawMessage(value)
		got := SetMember([]byte(obj), key, []byte(value))
		var gotMap, wantMap map[string]any
		want, _ := json.Marshal(m)
		if err := json.Unmarshal(got, &gotMap); err != nil {
			t.Fatalf("SetMember(%s, %q, %s) = %s: not JSON: %v", obj, key, value, got, err)
		}
		json.Unmarshal(want, &wantMap)
		if !reflect.DeepEqual(gotMap, wantMap) {
			t.Fatalf("SetMember(%s, %q, %s) = %s, want %s", obj, key, value, got, want)
		}
	})
}
