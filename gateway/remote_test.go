package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

type noteIn struct {
	Text string `json:"text"`
}

// A remote upstream over Streamable HTTP ({"url", "headers"}): its tools are merged with a
// local one's and its calls routed to it, and a URI both list is served by the first in
// config order, with a warning.
func TestGateway_RemoteUpstreamOverHTTP(t *testing.T) {
	remote := mcp.NewServer(mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "note", Description: "Returns its text, marked remote."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
			return mcp.TextResult("remote: " + in.Text), nil
		})
	remote.AddResource(&mcp.Resource{URI: "test://static-text", Name: "shadowed"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, Text: "the remote's copy"}}}, nil
	})
	url := serveHTTP(t, remote)
	f := startGateway(t, config(
		entry("everything", everythingBin(t), `"relay": {"prefix": "ev"}`),
		fmt.Sprintf(`"far": {"url": %q, "headers": {"X-Relay-Test": "1"}, "type": "http"}`, url),
	))
	eachClient(t, f, func(t *testing.T, c *client.Client) {
		if names := toolNames(t, c); !slices.Contains(names, "far__note") || !slices.Contains(names, "ev__test_simple_text") {
			t.Errorf("tools/list: %v", names)
		}
		r, err := c.CallTool(context.Background(), "far__note", noteIn{Text: "hi"})
		if err != nil || text(r) != "remote: hi" {
			t.Errorf("far__note: %q %v", text(r), err)
		}
		res, err := c.ReadResource(context.Background(), "test://static-text")
		if err != nil || res.Contents[0].Text == "the remote's copy" {
			t.Errorf("a URI two upstreams list is served by the first: %+v %v", res, err)
		}
	})
	if f.logs.FilterMessageSnippet("same resource URI").Len() != 1 {
		t.Errorf("the duplicate URI was not warned of once: %v", f.logs.All())
	}
}
