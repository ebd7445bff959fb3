//go:build linux

package bridge_test

// Linux only: the test waits for the bridge's children through /proc (children_linux_test.go).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
)

// TestA9_ListenThroughTheBridge: a 2026-07-28 client's subscriptions/listen reaches a child
// of the pool and its notifications come back on the client's stream, tagged with the
// client's own listen id (DIGEST A9: the acknowledgement first, then every notification with
// io.modelcontextprotocol/subscriptionId). examples/everything changes its watched resource
// every 50 ms here.
func TestA9_ListenThroughTheBridge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts relay bridge and its children")
	}
	relay := startRelay(t, []string{"--pool", "2"}, everythingBin(t), "-watch", "50ms")
	waitChildren(t, relay.pid(), 2, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 77, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": map[string]any{"resourceSubscriptions": []string{"test://watched-resource"}},
		"_meta":         map[string]any{mcp.MetaProtocolVersion: mcp.Version20260728, mcp.MetaClientCapabilities: map[string]any{}},
	}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, relay.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.Version20260728)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := relay.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("listen: HTTP %d %s, want a 200 SSE stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := bufio.NewScanner(resp.Body)
	next := func() (method, subscription string) {
		t.Helper()
		for events.Scan() {
			data, ok := strings.CutPrefix(events.Text(), "data: ")
			if !ok {
				continue
			}
			var m struct {
				Method string
				Params struct {
					Meta map[string]json.RawMessage `json:"_meta"`
				}
			}
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("an SSE event that is not JSON: %q", data)
			}
			return m.Method, string(m.Params.Meta["io.modelcontextprotocol/subscriptionId"])
		}
		t.Fatalf("the listen stream ended: %v", events.Err())
		return "", ""
	}
	if method, sub := next(); method != "notifications/subscriptions/acknowledged" || sub != "77" {
		t.Fatalf("A9: the first event is %s with subscription %s; want the acknowledgement for 77", method, sub)
	}
	for range 2 {
		if method, sub := next(); method != "notifications/resources/updated" || sub != "77" {
			t.Fatalf("A9: got %s with subscription %s; want notifications/resources/updated for 77", method, sub)
		}
	}
	// A9: on a graceful end (SIGTERM to the bridge) the listen request is answered with a
	// complete result naming the subscription, and then the stream closes.
	relay.cmd.Process.Signal(syscall.SIGTERM)
	var final string
	for events.Scan() {
		if data, ok := strings.CutPrefix(events.Text(), "data: "); ok && strings.Contains(data, `"result"`) {
			final = data
		}
	}
	var rep struct {
		ID     json.RawMessage
		Result struct {
			ResultType string                     `json:"resultType"`
			Meta       map[string]json.RawMessage `json:"_meta"`
		}
	}
	json.Unmarshal([]byte(final), &rep)
	if string(rep.ID) != "77" || rep.Result.ResultType != "complete" || string(rep.Result.Meta[mcp.MetaSubscriptionID]) != "77" {
		t.Errorf("A9: the listen stream ended with %q; want a complete result for subscription 77", final)
	}
	if err := relay.stop(t, 15*time.Second); err != nil {
		t.Errorf("relay bridge exited with %v after SIGTERM", err)
	}
}
