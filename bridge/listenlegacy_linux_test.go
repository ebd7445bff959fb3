package bridge_test

// Linux only: the test waits for the bridge's children through /proc (children_linux_test.go).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
)

// TestA9_ListenOnLegacyChildren: a 2026-07-28 client's subscriptions/listen through `relay
// bridge --pool 1 --spares 1` in front of a child of the initialize generation, which has no
// such method. The listen gets a child of its own (the spare; the next is spawned), the
// bridge subscribes it to the resource named and acknowledges first, with what the child can
// deliver: the tools' list changes (declared) and the resource, not the prompts' (the child
// did not declare them). Then only those reach the stream, tagged with the listen's id: the
// child's prompts changes and log messages do not (MCP 2026-07-28, Basic › Patterns ›
// Subscriptions). When the client goes away, the listen's child is stopped.
func TestA9_ListenOnLegacyChildren(t *testing.T) {
	r := startRelay(t, []string{"--pool", "1", "--spares", "1"}, legacyChildCommand(t))
	waitChildren(t, r.pid(), 2, 30*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 88, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": map[string]any{"toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": []string{"test://a"}},
		"_meta":         map[string]any{mcp.MetaProtocolVersion: mcp.Version20260728, mcp.MetaClientCapabilities: map[string]any{}},
	}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.Version20260728)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("listen: HTTP %d %s %s, want a 200 SSE stream", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	type note struct {
		Method string
		Params struct {
			URI           string
			Notifications map[string]json.RawMessage
			Meta          map[string]json.RawMessage `json:"_meta"`
		}
	}
	events := bufio.NewScanner(resp.Body)
	next := func() note {
		t.Helper()
		for events.Scan() {
			data, ok := strings.CutPrefix(events.Text(), "data: ")
			if !ok {
				continue
			}
			var n note
			if err := json.Unmarshal([]byte(data), &n); err != nil {
				t.Fatalf("an SSE event that is not JSON: %q", data)
			}
			if string(n.Params.Meta[mcp.MetaSubscriptionID]) != "88" {
				t.Errorf("%s without the listen's id 88: %s", n.Method, data)
			}
			return n
		}
		t.Fatalf("the listen stream ended: %v", events.Err())
		return note{}
	}
	ack := next()
	if ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("the first event is %s; want the acknowledgement", ack.Method)
	}
	if got := ack.Params.Notifications; string(got["toolsListChanged"]) != "true" || got["promptsListChanged"] != nil ||
		string(got["resourceSubscriptions"]) != `["test://a"]` {
		t.Errorf("acknowledged %v; want toolsListChanged and test://a, not promptsListChanged (not declared)", got)
	}
	seen := map[string]int{}
	for range 8 {
		n := next()
		seen[n.Method]++
		if n.Method == "notifications/resources/updated" && n.Params.URI != "test://a" {
			t.Errorf("an update of %q", n.Params.URI)
		}
	}
	if seen["notifications/resources/updated"] == 0 || seen["notifications/tools/list_changed"] == 0 {
		t.Errorf("events %v; want updates of test://a and the tools' list changes", seen)
	}
	for m := range seen {
		if !slices.Contains([]string{"notifications/resources/updated", "notifications/tools/list_changed"}, m) {
			t.Errorf("%s reached the listen stream (%v)", m, seen)
		}
	}
	waitChildren(t, r.pid(), 3, 30*time.Second) // the pool's, the listen's, and a new spare
	resp.Body.Close()
	cancel() // the client goes away: the listen's child is stopped
	waitChildren(t, r.pid(), 2, 30*time.Second)
}
