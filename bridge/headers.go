package bridge

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// The arguments a 2026-07-28 client mirrors in Mcp-Param-* headers (MCP 2026-07-28,
// Transports › Streamable HTTP) are those the children's tools mark with x-mcp-header in
// their input schemas. The bridge learns them from a child's tools/list at its start, so
// that httpx checks the headers against the body as it does for a server of its own.

// learnHeaders lists the tools of child c (every page) and keeps their mirrored arguments.
func (b *Bridge) learnHeaders(ctx context.Context, c *childConn, params json.RawMessage) {
	headers := map[string][]mcp.HeaderParam{}
	for range 100 { // pages
		res, rpcErr, err := c.call(ctx, nil, "tools/list", params, nil)
		if err != nil || rpcErr != nil {
			break
		}
		var list struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if json.Unmarshal(res, &list) != nil {
			break
		}
		for _, t := range list.Tools {
			if h, ok := mirrored(t.InputSchema); ok && len(h) > 0 {
				headers[t.Name] = h
			}
		}
		if list.NextCursor == "" {
			break
		}
		params = jsonrpc.SetMember(params, "cursor", mustJSON(list.NextCursor))
	}
	b.headers = headers
}

// ToolHeaders returns the mirrored arguments of a child's tool, for
// httpx.NewMCPProfileHandler.
func (b *Bridge) ToolHeaders(tool string) []mcp.HeaderParam { return b.headers[tool] }

// mirrored collects the x-mcp-header properties of an input schema as the mcp package
// does for its own tools: reachable from the root through properties only, on string,
// integer or boolean properties, names that are HTTP tokens, unique regardless of case. A
// schema that breaks a rule mirrors nothing (false).
func mirrored(schema json.RawMessage) ([]mcp.HeaderParam, bool) {
	var out []mcp.HeaderParam
	seen := map[string]bool{}
	var walk func(s json.RawMessage, path []string) bool
	walk = func(s json.RawMessage, path []string) bool {
		var props map[string]json.RawMessage
		json.Unmarshal(jsonrpc.Field(s, "properties"), &props)
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			p := props[name]
			at := append(slices.Clip(path), name)
			if raw := jsonrpc.Field(p, "x-mcp-header"); raw != nil {
				var header, typ string
				json.Unmarshal(raw, &header)
				json.Unmarshal(jsonrpc.Field(p, "type"), &typ)
				if !isToken(header) || seen[strings.ToLower(header)] || (typ != "string" && typ != "integer" && typ != "boolean") {
					return false
				}
				seen[strings.ToLower(header)] = true
				out = append(out, mcp.HeaderParam{Header: header, Path: at, Type: typ})
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
