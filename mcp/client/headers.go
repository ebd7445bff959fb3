package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
)

// headerParam is an argument of a tool that a 2026-07-28 client mirrors into an HTTP
// header (MCP 2026-07-28, Transports › Streamable HTTP › Mcp-Param-{Name}).
type headerParam struct {
	header string   // the Name of Mcp-Param-Name
	path   []string // property names from the arguments object down to the value
	typ    string   // "string", "integer" or "boolean"
}

// keepTools drops, from a page of tools/list, the tools whose x-mcp-header annotations
// break the rules (empty or not an HTTP token, used twice regardless of case, on a
// property that is not a string, an integer or a boolean), and remembers the others'.
func (c *Client) keepTools(items []json.RawMessage) []json.RawMessage {
	kept := items[:0:0]
	for _, raw := range items {
		var t struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(raw, &t) != nil {
			kept = append(kept, raw) // let the caller's decoding report it
			continue
		}
		hp, ok := schemaHeaders(t.InputSchema)
		if !ok {
			continue
		}
		c.mu.Lock()
		c.headers[t.Name] = hp
		c.mu.Unlock()
		kept = append(kept, raw)
	}
	return kept
}

// schemaHeaders collects the x-mcp-header properties of a schema, reachable from its root
// through "properties" only; ok is false when one breaks the rules.
func schemaHeaders(schema json.RawMessage) (out []headerParam, ok bool) {
	seen := map[string]bool{}
	var walk func(s json.RawMessage, path []string) bool
	walk = func(s json.RawMessage, path []string) bool {
		var node struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(s, &node) != nil {
			return true
		}
		for name, p := range node.Properties {
			at := append(append([]string(nil), path...), name)
			var prop struct {
				Header *string         `json:"x-mcp-header"`
				Type   json.RawMessage `json:"type"`
			}
			if json.Unmarshal(p, &prop) != nil {
				continue
			}
			if prop.Header != nil {
				h := *prop.Header
				var typ string
				json.Unmarshal(prop.Type, &typ) // a list of types is not one of the three
				if !isToken(h) || seen[strings.ToLower(h)] || (typ != "string" && typ != "integer" && typ != "boolean") {
					return false
				}
				seen[strings.ToLower(h)] = true
				out = append(out, headerParam{header: h, path: at, typ: typ})
			}
			if !walk(p, at) {
				return false
			}
		}
		return true
	}
	if !walk(schema, nil) {
		return nil, false
	}
	return out, true
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c > 0x7e || c <= 0x20 || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// paramHeaders returns the Mcp-Param-* headers of a call's arguments: a string as it is
// (or encoded), an integer in decimal, a boolean as true or false; an absent or null value
// has no header.
func paramHeaders(hp []headerParam, args json.RawMessage) map[string]string {
	if len(hp) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, p := range hp {
		v := lookup(args, p.path)
		if v == nil {
			continue
		}
		switch x := v.(type) {
		case string:
			out["Mcp-Param-"+p.header] = encodeHeaderValue(x)
		case bool:
			out["Mcp-Param-"+p.header] = strconv.FormatBool(x)
		case json.Number:
			if i, err := x.Int64(); err == nil {
				out["Mcp-Param-"+p.header] = strconv.FormatInt(i, 10)
			} else if f, err := x.Float64(); err == nil && f == float64(int64(f)) {
				out["Mcp-Param-"+p.header] = strconv.FormatInt(int64(f), 10)
			} else {
				out["Mcp-Param-"+p.header] = x.String()
			}
		}
	}
	return out
}

func lookup(args json.RawMessage, path []string) any {
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	for _, name := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[name]
	}
	return v
}

// encodeHeaderValue returns s as a header value: as it is when it is plain visible ASCII
// with no leading or trailing whitespace, and otherwise (or when it looks like the
// sentinel itself) as =?base64?…?= of its UTF-8 (MCP 2026-07-28, Transports › Streamable
// HTTP › encoding of header values).
func encodeHeaderValue(s string) string {
	plain := !(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")) &&
		strings.TrimSpace(s) == s
	for i := 0; plain && i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			plain = false
		}
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}
