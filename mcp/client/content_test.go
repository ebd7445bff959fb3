package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// A content block of a type the client does not know (a later revision's, an extension's)
// is kept as *mcp.UnknownContent, with its type and its JSON, and the blocks around it are
// read as usual: one block the client cannot read does not cost the caller the result, nor
// does it pass for an empty text.
func TestCallToolKeepsABlockOfAnUnknownType(t *testing.T) {
	var s scripted
	url := s.start(t, func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		if method == "server/discover" {
			discovered(w, id)
			return
		}
		reply(w, 200, map[string]any{"id": id, "result": map[string]any{"content": []any{
			map[string]any{"type": "text", "text": "before"},
			map[string]any{"type": "hologram", "frames": 3, "_meta": map[string]any{"k": "v"}},
			map[string]any{"type": "image", "data": "AQID", "mimeType": "image/png"},
		}}})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.HTTP(url))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "show", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 3 {
		t.Fatalf("%d blocks, want 3", len(res.Content))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "before" {
		t.Errorf("block 0: %#v", res.Content[0])
	}
	u, ok := res.Content[1].(*mcp.UnknownContent)
	if !ok || u.Type != "hologram" || !strings.Contains(string(u.Raw), `"frames":3`) || u.Meta["k"] != "v" {
		t.Errorf("block 1: %#v, want *mcp.UnknownContent hologram with its JSON", res.Content[1])
	}
	if ic, ok := res.Content[2].(*mcp.ImageContent); !ok || string(ic.Data) != "\x01\x02\x03" {
		t.Errorf("block 2: %#v", res.Content[2])
	}
}

// A block of a known type that breaks the schema (a "resource" block without its resource)
// is the server's error, and says which block.
func TestCallToolRefusesAMalformedBlock(t *testing.T) {
	var s scripted
	url := s.start(t, func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		if method == "server/discover" {
			discovered(w, id)
			return
		}
		reply(w, 200, map[string]any{"id": id, "result": map[string]any{"content": []any{
			map[string]any{"type": "text", "text": "fine"}, map[string]any{"type": "resource"},
		}}})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.HTTP(url))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CallTool(ctx, "show", map[string]any{}); err == nil || !strings.Contains(err.Error(), "block 1") {
		t.Fatalf("CallTool: %v, want an error naming block 1", err)
	}
}
