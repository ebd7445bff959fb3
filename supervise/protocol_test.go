//go:build unix

package supervise

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/rcp"
	"github.com/relayrt/relay/stdio"
)

// The proxy follows the protocol it is given, not MCP's method names: for RCP/1
// (rcp.Rules), a new child is given the host's initialize again and nothing that MCP would
// add after it (no notifications/initialized, no tools/list of the proxy's own), and a
// request that RCP does not count as read-only is answered with RCP's -32010 when its child
// dies (RCP/1 §7.1, §12).
func TestProxyFollowsRCPRules(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "child.log")
	h := tpStart(t, tpSpec(t, "trace", logPath), &ProxyOptions{Protocol: ProtocolOf(rcp.Rules())})
	if r := h.Call("initialize", map[string]any{"protocolVersion": 1, "capabilities": map[string]any{}}); r.Error != nil {
		t.Fatalf("initialize: %v", r)
	}
	first := tcCurrentChild(t, 0, 5*time.Second)
	// tools/call means nothing to RCP: not read-only, so not replayed.
	r := h.Call("tools/call", map[string]any{"name": "exit", "arguments": map[string]any{"code": 3}})
	if r.Error == nil || r.Error.Code != rcp.CodeBackendUnavailable {
		t.Fatalf("a request in flight at the crash = %v, want RCP's -32010", r)
	}
	tcCurrentChild(t, first, 5*time.Second)
	if r := h.Call("ping", nil); r.Error != nil { // read-only: served by the new child
		t.Fatalf("ping after the restart: %v", r)
	}
	if err := h.close(10 * time.Second); err != nil {
		t.Errorf("Proxy = %v", err)
	}
	log := tpLog(t, logPath)
	if n := log["got initialize"]; n != 2 {
		t.Errorf("the children got %d initialize requests, want 2 (the host's, and its replay)", n)
	}
	for _, mcpOnly := range []string{"got notifications/initialized", "got tools/list", "got server/discover"} {
		if n := log[mcpOnly]; n != 0 {
			t.Errorf("the children got %q %d times from an RCP proxy, want never", mcpOnly, n)
		}
	}
}

// A line of the host's over the size limit is answered with the protocol's error and id null
// (the reader dropped it, id and all: JSON-RPC 2.0 §5), and the next request is served as if
// nothing had happened: nothing the host sends goes unanswered.
func TestProxyAnswersAHostLineOverTheLimit(t *testing.T) {
	h := tpStart(t, tpSpec(t, "echo", ""), nil)
	huge := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`), bytes.Repeat([]byte("x"), stdio.DefaultMaxFrame)...)
	h.Write(append(huge, `"}}`...))
	if r := h.Tool("echo", map[string]any{"text": "after"}); r.Text() != "after" {
		t.Fatalf("the request after the long line = %v", r)
	}
	stray := h.Stray()
	if len(stray) != 1 || !strings.Contains(stray[0], `"id":null`) || !strings.Contains(stray[0], `"code":-32600`) {
		t.Fatalf("answers to no request = %q, want one -32600 with id null", stray)
	}
	if err := h.stop(10 * time.Second); err != nil {
		t.Errorf("Proxy = %v", err)
	}
}

func TestProgressToken_FoundHoweverItsKeysAreSpelled(t *testing.T) {
	for params, want := range map[string]string{
		`{"name":"echo","arguments":{"text":"hi"}}`:                  "",
		`{"name":"echo","_meta":{"progressToken":7}}`:                "7",
		`{"\u005fmeta":{"progressToken":"t"},"name":"echo"}`:         `"t"`,
		`{"_meta":{"\u0070rogressToken":1}}`:                         "1",
		`{"arguments":{"text":"_meta progressToken"},"name":"echo"}`: "",
		`{"arguments":{"_meta":{"progressToken":2}}}`:                "",
		`{"_meta":{"protocolVersion":"2026-07-28"},"name":"echo"}`:   "",
	} {
		if got := string(mcpProtocol.progressToken([]byte(params))); got != want {
			t.Errorf("progressToken(%s) = %q, want %q", params, got, want)
		}
	}
}
