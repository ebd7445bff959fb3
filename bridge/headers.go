package bridge

import (
	"context"
	"encoding/json"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// The arguments a 2026-07-28 client mirrors in Mcp-Param-* headers (MCP 2026-07-28,
// Transports › Streamable HTTP) are those the children's tools mark with x-mcp-header in
// their input schemas. The bridge learns them from a child's tools/list at its start, so
// that httpx checks the headers against the body as it does for a server of its own.

// learnHeaders lists the tools of child c (every page) and returns their mirrored arguments.
func (b *Bridge) learnHeaders(ctx context.Context, c *childConn, params json.RawMessage) map[string][]mcp.HeaderParam {
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
			if h, err := mcp.MirroredArgs(t.Name, t.InputSchema); err == nil && len(h) > 0 {
				headers[t.Name] = h
			}
		}
		if list.NextCursor == "" {
			break
		}
		params = jsonrpc.SetMember(params, "cursor", mustJSON(list.NextCursor))
	}
	return headers
}

// ToolHeaders returns the mirrored arguments of a child's tool, for
// httpx.NewMCPProfileHandler.
func (b *Bridge) ToolHeaders(tool string) []mcp.HeaderParam { return b.now().headers[tool] }
