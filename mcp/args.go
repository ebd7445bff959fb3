package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

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
