package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// HeaderParam is a tool argument that a 2026-07-28 client mirrors into an HTTP header: a
// property of the tool's input schema that carries "x-mcp-header": Name is sent as
// Mcp-Param-Name, so that gateways can route on it without reading the body.
type HeaderParam struct {
	Header string   // the Name in Mcp-Param-Name
	Path   []string // property names from the arguments object down to the value
	Type   string   // "string", "integer" or "boolean"
}

// ToolHeaderParams returns the mirrored arguments of a tool (nil for an unknown tool).
func (s *Server) ToolHeaderParams(tool string) []HeaderParam {
	if t := s.reg.Load().tools[tool]; t != nil {
		return t.headers
	}
	return nil
}

// MirroredArgs reads the arguments a tool's input schema (as tools/list gives it) marks with
// x-mcp-header, by the rules AddTool checks for a tool of this package's: for a program that
// learns another server's tools, such as a bridge that checks the headers, or a client that
// sends them. An error says which rule the schema breaks; a client leaves such a tool out.
func MirroredArgs(tool string, inputSchema json.RawMessage) ([]HeaderParam, error) {
	if len(inputSchema) == 0 {
		return nil, nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(inputSchema, &s); err != nil {
		return nil, fmt.Errorf("tool %q: the input schema is not a JSON Schema: %w", tool, err)
	}
	return headerParams(tool, &s)
}

// headerParams collects and checks the x-mcp-header properties of a schema: reachable from
// the root through properties only, on string, integer or boolean properties, names that
// are HTTP tokens and unique regardless of case.
func headerParams(tool string, schema *jsonschema.Schema) ([]HeaderParam, error) {
	var out []HeaderParam
	seen := map[string]bool{}
	var walk func(s *jsonschema.Schema, path []string) error
	walk = func(s *jsonschema.Schema, path []string) error {
		for _, name := range sortedKeys(s.Properties) {
			p := s.Properties[name]
			at := append(append([]string(nil), path...), name)
			if h, ok := p.Extra["x-mcp-header"]; ok {
				header, _ := h.(string)
				switch {
				case !isToken(header):
					return fmt.Errorf("tool %q: x-mcp-header of %s must be a non-empty HTTP token", tool, strings.Join(at, "."))
				case seen[strings.ToLower(header)]:
					return fmt.Errorf("tool %q: x-mcp-header %q is used twice", tool, header)
				case p.Type != "string" && p.Type != "integer" && p.Type != "boolean":
					return fmt.Errorf("tool %q: x-mcp-header %q is on a %q property; only string, integer and boolean are allowed", tool, header, p.Type)
				}
				seen[strings.ToLower(header)] = true
				out = append(out, HeaderParam{Header: header, Path: at, Type: p.Type})
			}
			if err := walk(p, at); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(schema, nil)
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c > 0x7e || c <= 0x20 || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return false
		}
	}
	return true
}
