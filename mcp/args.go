package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/relayrt/relay/jsonrpc"
)

// flatArgs validates the arguments of a tool whose schema was derived from a flat struct:
// every property a string, integer, number or boolean, no others allowed. For such a schema one
// pass over the top-level members, then decoding into the struct (which checks each value's
// type), is exactly schema validation, at a fraction of the cost of decoding the arguments
// into a generic value first. Any other schema takes the general path.
type flatArgs struct {
	types    map[string]string
	required []string
	fields   map[string]flatField // how to decode each property straight into the struct; nil: use encoding/json
}

// flatField is where a property lands in the arguments struct.
type flatField struct {
	index int
	kind  reflect.Kind
}

func flatSchema(s *jsonschema.Schema) *flatArgs {
	if s.Type != "object" || s.AdditionalProperties == nil {
		return nil
	}
	if ap, _ := json.Marshal(s.AdditionalProperties); string(ap) != "false" {
		return nil
	}
	f := &flatArgs{types: map[string]string{}, required: s.Required}
	for name, p := range s.Properties {
		plain := *p
		plain.Description = ""
		if b, _ := json.Marshal(&plain); !slices.Contains([]string{
			`{"type":"string"}`, `{"type":"integer"}`, `{"type":"number"}`, `{"type":"boolean"}`,
		}, string(b)) {
			return nil
		}
		f.types[name] = p.Type
	}
	return f
}

// fieldsOf maps the JSON names of a flat struct's fields to their place, as encoding/json
// names them; nil when the struct has anything this decoder does not handle (embedded
// fields, pointers, other kinds), which then falls back to encoding/json.
func fieldsOf(t reflect.Type) map[string]flatField {
	if t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]flatField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		switch f.Type.Kind() {
		case reflect.String, reflect.Bool, reflect.Float32, reflect.Float64,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			return nil
		}
		if f.Type.Name() != f.Type.Kind().String() { // a named type may have its own UnmarshalJSON
			return nil
		}
		out[name] = flatField{index: i, kind: f.Type.Kind()}
	}
	return out
}

// minSharedString is the length from which a string argument shares the request's memory
// instead of being copied (see argString).
const minSharedString = 1 << 10

// argString returns a string argument's text, body, from arguments of n bytes. A long one that
// is most of the arguments is not copied: the string shares the request's memory, which
// nothing writes to once it has been read (transports hand the runtime a frame of its own), so
// the string is as immutable as any. A 64 KiB echo then allocates one 64 KiB buffer instead of
// two, and the collector's share of its CPU went from 22 % to 16 %. Keeping such a string
// keeps the request's frame, at most about twice the string: a shorter string, or one among
// larger arguments, is copied, so that a handler that keeps a name from a large request does
// not keep the request.
func argString(body []byte, n int) string {
	if len(body) >= minSharedString && 2*len(body) >= n {
		return unsafe.String(unsafe.SliceData(body), len(body))
	}
	return string(body)
}

// decode sets the struct v (a pointer) from args, which check has validated. It returns
// false when a value needs encoding/json after all (an escaped string, an out-of-range
// number), and the caller decodes the whole with encoding/json.
func (f *flatArgs) decode(args []byte, v any) bool {
	if f.fields == nil {
		return false
	}
	s := reflect.ValueOf(v).Elem()
	ok := true
	jsonrpc.EachMember(args, func(key, value []byte) bool {
		fd, known := f.fields[string(key)]
		if !known {
			ok = false
			return false
		}
		field := s.Field(fd.index)
		switch fd.kind {
		case reflect.String:
			body := value[1 : len(value)-1]
			if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
				ok = false // escapes to resolve, or bytes encoding/json would replace
				return false
			}
			field.SetString(argString(body, len(args)))
		case reflect.Bool:
			field.SetBool(value[0] == 't')
		case reflect.Float32, reflect.Float64:
			n, err := strconv.ParseFloat(string(value), field.Type().Bits())
			if err != nil || field.OverflowFloat(n) {
				ok = false
				return false
			}
			field.SetFloat(n)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || field.OverflowInt(n) {
				ok = false
				return false
			}
			field.SetInt(n)
		default: // unsigned
			n, err := strconv.ParseUint(string(value), 10, 64)
			if err != nil || field.OverflowUint(n) {
				ok = false
				return false
			}
			field.SetUint(n)
		}
		return true
	})
	return ok
}

// check validates the members of args (a JSON object) and names the first offending field.
func (f *flatArgs) check(args []byte) error {
	var err error
	seen := 0
	jsonrpc.EachMember(args, func(key, value []byte) bool {
		t, ok := f.types[string(key)]
		if !ok {
			err = fmt.Errorf("unexpected property %q", key)
			return false
		}
		if !matchesType(t, value) {
			err = fmt.Errorf("property %q must be of type %s", key, t)
			return false
		}
		if slices.Contains(f.required, string(key)) {
			seen++
		}
		return true
	})
	if err == nil && seen < len(f.required) {
		for _, r := range f.required {
			if jsonrpc.Field(args, r) == nil {
				return fmt.Errorf("missing required property %q", r)
			}
		}
	}
	return err
}

func matchesType(t string, v []byte) bool {
	switch c := v[0]; t {
	case "string":
		return c == '"'
	case "boolean":
		return c == 't' || c == 'f'
	case "number":
		return c == '-' || (c >= '0' && c <= '9')
	case "integer":
		return (c == '-' || (c >= '0' && c <= '9')) && !bytes.ContainsAny(v, ".eE")
	}
	return false
}
