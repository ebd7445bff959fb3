package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/relayrt/relay/mcp"
)

// DecodeContent, a client's reader of content blocks, keeps a block of a type it does not
// know, whole; the server's readers (DecodeSamplingContent) still refuse one, naming it.
func TestDecodeContentKeepsAnUnknownTypeAndSamplingRefusesIt(t *testing.T) {
	raw := json.RawMessage(`{"type":"hologram","frames":3}`)
	c, err := mcp.DecodeContent(raw)
	u, ok := c.(*mcp.UnknownContent)
	if err != nil || !ok || u.Type != "hologram" || string(u.Raw) != string(raw) {
		t.Fatalf("DecodeContent: %#v, %v; want *UnknownContent with the block", c, err)
	}
	out, _ := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{u}})
	if !strings.Contains(string(out), `{"type":"hologram"}`) {
		t.Errorf("written: %s, want the block's type", out)
	}
	if _, err := mcp.DecodeSamplingContent(json.RawMessage(`{"type":"tool_result","toolUseId":"1","content":[` + string(raw) + `]}`)); err == nil ||
		!strings.Contains(err.Error(), "hologram") {
		t.Fatalf("DecodeSamplingContent: %v, want an error naming the type", err)
	}
	if _, err := mcp.DecodeContent(json.RawMessage(`{"type":"resource"}`)); err == nil {
		t.Fatal(`a "resource" block without its resource was read`)
	}
}
