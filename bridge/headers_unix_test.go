//go:build unix

package bridge_test

// Unix only: startRelay's cleanup stops relay bridge with SIGTERM, which Windows cannot send.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/relayrt/relay/mcp"
)

// TestMirroredHeadersAreCheckedThroughTheBridge: examples/everything's test_custom_headers
// marks region with x-mcp-header "Region", so a 2026-07-28 client over HTTP mirrors it in
// Mcp-Param-Region (MCP 2026-07-28, Transports › Streamable HTTP). The bridge learns that from
// the child's tools/list: a header that differs from the body is refused with 400 and
// -32020, as examples/everything -http refuses it; a matching one is served.
func TestMirroredHeadersAreCheckedThroughTheBridge(t *testing.T) {
	r := startRelay(t, []string{"--pool", "1"}, everythingBin(t))
	post := func(region string) (int, []byte) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
			"name": "test_custom_headers", "arguments": map[string]any{"region": "eu"},
			"_meta": map[string]any{mcp.MetaProtocolVersion: mcp.Version20260728, mcp.MetaClientCapabilities: map[string]any{}}}})
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, r.url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.Version20260728)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "test_custom_headers")
		req.Header.Set("Mcp-Param-Region", region)
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, raw
	}
	if status, raw := post("us"); status != http.StatusBadRequest || !bytes.Contains(raw, []byte("-32020")) {
		t.Errorf("Mcp-Param-Region us for region eu: HTTP %d %s; want 400 and -32020", status, raw)
	}
	if status, raw := post("eu"); status != http.StatusOK || !bytes.Contains(raw, []byte(`"result"`)) {
		t.Errorf("Mcp-Param-Region eu for region eu: HTTP %d %s; want the result", status, raw)
	}
}
