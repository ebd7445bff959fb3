package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/relayrt/relay/mcp"
)

// test_custom_headers is the tool of the 0.2 suite's http-custom-header-server-validation
// scenario (MCP 2026-07-28, Transports › Streamable HTTP, mirrored headers; SEP-2243). Its
// input schema marks three arguments with x-mcp-header, so a 2026-07-28 client over HTTP
// mirrors them into Mcp-Param-Region, Mcp-Param-Priority and Mcp-Param-Verbose, for gateways
// to route on without reading the body. The mcp package reads the marks when the tool is
// added (Server.ToolHeaderParams), and the HTTP transport checks every mirrored header against
// the body before the tool runs: a header that is missing while the body has the value, that
// differs from it, or whose =?base64?...?= form does not decode is refused with 400 and
// -32020. The tool itself reports the arguments it got and the headers they travelled in.

// headersTool is the tool's name.
const headersTool = "test_custom_headers"

var headersSchema = mustSchema(`{
	"type": "object",
	"properties": {
		"region": {"type": "string", "description": "Where to run; mirrored in Mcp-Param-Region", "x-mcp-header": "Region"},
		"priority": {"type": "integer", "description": "How urgent; mirrored in Mcp-Param-Priority", "x-mcp-header": "Priority"},
		"verbose": {"type": "boolean", "description": "Say more; mirrored in Mcp-Param-Verbose", "x-mcp-header": "Verbose"},
		"query": {"type": "string", "description": "Travels in the body only"}
	},
	"required": ["region"]
}`)

type headersArgs struct {
	Region   string `json:"region"`
	Priority *int   `json:"priority,omitempty"`
	Verbose  *bool  `json:"verbose,omitempty"`
	Query    string `json:"query,omitempty"`
}

func addHeaderTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: headersTool,
		Description: "Reports its arguments; region, priority and verbose are mirrored in Mcp-Param-* headers (x-mcp-header).",
		InputSchema: headersSchema},
		func(ctx context.Context, req *mcp.CallToolRequest, in headersArgs) (*mcp.CallToolResult, error) {
			values := map[string]string{"region": fmt.Sprintf("%q", in.Region)}
			if in.Priority != nil {
				values["priority"] = fmt.Sprint(*in.Priority)
			}
			if in.Verbose != nil {
				values["verbose"] = fmt.Sprint(*in.Verbose)
			}
			var parts []string
			for _, p := range s.ToolHeaderParams(headersTool) {
				arg := strings.Join(p.Path, ".")
				if v, ok := values[arg]; ok {
					parts = append(parts, fmt.Sprintf("%s=%s (Mcp-Param-%s)", arg, v, p.Header))
				}
			}
			if in.Query != "" {
				parts = append(parts, fmt.Sprintf("query=%q (body only)", in.Query))
			}
			return mcp.TextResult("Arguments: " + strings.Join(parts, ", ")), nil
		})
}
