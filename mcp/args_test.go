package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"
)

type flatIn struct {
	Text  string  `json:"text"`
	N     int     `json:"n,omitempty"`
	F     float64 `json:"f,omitempty"`
	B     bool    `json:"b,omitempty"`
	Title string  `json:"title,omitempty" jsonschema:"a description does not make it less flat"`
}

// agree checks that the fast path and full JSON Schema validation reach the same verdict.
func agree(t testing.TB, flat *flatArgs, full *jsonschema.Resolved, args []byte) {
	var inst any
	if json.Unmarshal(args, &inst) != nil {
		return
	}
	if _, ok := inst.(map[string]any); !ok {
		return // tools/call refuses non-object arguments before either runs
	}
	fastErr := flat.check(args)
	if fastErr == nil {
		var in flatIn // the struct decode is part of the fast path: it checks ranges
		if err := json.Unmarshal(args, &in); err != nil {
			fastErr = err
		} else if flat.fields != nil {
			var direct flatIn
			if flat.decode(args, &direct) && direct != in {
				t.Errorf("the direct decode of %s gives %+v; encoding/json %+v", args, direct, in)
			}
		}
	}
	fullErr := full.Validate(inst)
	if fullErr == nil {
		var in flatIn // the general path decodes too, and refuses 1e2 or 1.0 for an int
		fullErr = json.Unmarshal(args, &in)
	}
	if (fastErr == nil) != (fullErr == nil) {
		t.Errorf("verdicts differ on %s: fast=%v full=%v", args, fastErr, fullErr)
	}
}

func flatFixture(t testing.TB) (*flatArgs, *jsonschema.Resolved) {
	schema, err := jsonschema.For[flatIn](nil)
	if err != nil {
		t.Fatal(err)
	}
	flat := flatSchema(schema)
	if flat == nil {
		t.Fatal("a struct of scalars must take the fast path")
	}
	if flat.fields = fieldsOf(reflect.TypeFor[flatIn]()); flat.fields == nil {
		t.Fatal("a struct of scalars must decode directly")
	}
	full, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return flat, full
}

func TestFlatArgs_SameVerdictAsJSONSchema(t *testing.T) {
	flat, full := flatFixture(t)
	for _, args := range []string{
		`{"text":"hi"}`,
		`{"text":"hi","n":3,"f":1.5,"b":true,"title":"t"}`,
		`{}`,                          // missing required
		`{"text":5}`,                  // wrong type
		`{"text":null}`,               // null is not a string
		`{"text":"a","n":1.5}`,        // not an integer
		`{"text":"a","n":-2}`,         //
		`{"text":"a","extra":1}`,      // additionalProperties false
		`{"text":"a","b":"true"}`,     // string is not a boolean
		`{"text":"a","f":-1e3}`,       //
		`{"text":"a","n":{"x":1}}`,    // object is not an integer
		`{"text":"a","title":["x"]}`,  // array is not a string
		`{"te\u0078t":"escaped key"}`, // the key is "text"
		`{"text":"a","n":1e2}`,        // exponent form is not an integer here
	} {
		agree(t, flat, full, []byte(args))
	}
}

func TestFlatArgs_OnlyForFlatSchemas(t *testing.T) {
	type nested struct {
		Inner struct{ A string } `json:"inner"`
	}
	s, _ := jsonschema.For[nested](nil)
	if flatSchema(s) != nil {
		t.Error("a nested struct must take the general path")
	}
	type list struct {
		Items []string `json:"items"`
	}
	s, _ = jsonschema.For[list](nil)
	if flatSchema(s) != nil {
		t.Error("an array property must take the general path")
	}
}

// TestFlatArgs_LongStringsShareTheRequest: a long string that is most of the arguments is the
// request's own bytes, not a copy; a short one, or a long one among larger arguments, is a
// copy, so that keeping it does not keep the request.
func TestFlatArgs_LongStringsShareTheRequest(t *testing.T) {
	flat, _ := flatFixture(t)
	long := strings.Repeat("x", minSharedString)
	for _, tc := range []struct {
		name, args string
		shared     bool
	}{
		{"long, most of the arguments", `{"text":"` + long + `"}`, true},
		{"short", `{"text":"hi"}`, false},
		{"one byte short of long", `{"text":"` + long[1:] + `"}`, false},
		{"long, among larger arguments", `{"text":"` + long + `","title":"` + long + long + `"}`, false},
	} {
		args := []byte(tc.args)
		var in flatIn
		if !flat.decode(args, &in) {
			t.Fatalf("%s: not decoded on the flat path", tc.name)
		}
		start := bytes.Index(args, []byte(`"text":"`)) + len(`"text":"`)
		shared := unsafe.StringData(in.Text) == &args[start]
		if shared != tc.shared || in.Text != tc.args[start:start+len(in.Text)] {
			t.Errorf("%s: shares the request's bytes: %v, want %v (text %d bytes)", tc.name, shared, tc.shared, len(in.Text))
		}
	}
}

func FuzzFlatArgs(f *testing.F) {
	for _, seed := range []string{`{"text":"hi"}`, `{"text":5}`, `{"n":1.5,"text":""}`, `{"x":null}`, `{}`} {
		f.Add([]byte(seed))
	}
	flat, full := flatFixture(f)
	f.Fuzz(func(t *testing.T, args []byte) {
		agree(t, flat, full, args)
	})
}

func TestHeaderParams_DIGEST_A13_Constraints(t *testing.T) {
	schema := func(props string) *jsonschema.Schema {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(`{"type":"object","properties":`+props+`}`), &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	got, err := headerParams("t", schema(`{"region":{"type":"string","x-mcp-header":"Region"},
		"opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}},
		"n":{"type":"integer","x-mcp-header":"Count"}}`))
	if err != nil || len(got) != 3 || got[1].Header != "Dry-Run" || len(got[1].Path) != 2 {
		t.Fatalf("got %+v, %v", got, err)
	}
	for rule, props := range map[string]string{
		"names are unique regardless of case": `{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}`,
		"only string, integer or boolean":     `{"a":{"type":"number","x-mcp-header":"N"}}`,
		"the name is an HTTP token":           `{"a":{"type":"string","x-mcp-header":"bad name"}}`,
		"the name is not empty":               `{"a":{"type":"string","x-mcp-header":""}}`,
	} {
		if _, err := headerParams("t", schema(props)); err == nil {
			t.Errorf("%s: accepted %s", rule, props)
		}
	}
}

func TestTextResult_SameJSONAsTheGeneralEncoder(t *testing.T) {
	for _, r := range []*CallToolResult{
		TextResult("plain"),
		TextResult("quotes \" and \\ and\nnew lines, é, 🙂, \u2028, <html>"),
		ErrorResult("failed"),
		{Content: []Content{}},
		{Content: []Content{&TextContent{Text: "a"}, &TextContent{Text: ""}}},
	} {
		if !r.textOnly() {
			t.Fatalf("text-only result took the slow path: %+v", r)
		}
		fast := (&textResult{open: legacyOpen, r: r}).AppendJSON(nil)
		slow, _ := json.Marshal(r.wireForm())
		var a, b any
		json.Unmarshal(fast, &a)
		json.Unmarshal(slow, &b)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("fast %s\nslow %s", fast, slow)
		}
	}
	if (&CallToolResult{Content: []Content{&ImageContent{Data: []byte{1}}}}).textOnly() {
		t.Error("an image result must take the general encoder")
	}
}
