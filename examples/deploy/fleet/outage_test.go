//go:build unix

package fleet

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestInitializeWhileRedisIsDown_NoSessionID shows a fleet bug (not yet fixed, so skipped
// unless RELAY_FLEET_KNOWN_BUGS=1): an initialize that reaches an instance while Redis is
// down is rightly refused, HTTP 200 with the JSON-RPC error -32000 "Server busy: the
// session's state could not be kept … retry" (retryable), but the answer also carries an
// Mcp-Session-Id header, for a session whose record was never written. A client that takes
// the header (Relay's own client takes it from any answer) then sends its next requests with
// that id: 503 while Redis is down, then 404 "the session has ended or never existed" on
// every instance once it is back, and it must initialize again. Under load
// (TestRedisRestartUnderLoad_NothingPersisted) that is a third or fourth session id for one
// client instead of two. A refused initialize should name no session.
func TestInitializeWhileRedisIsDown_NoSessionID(t *testing.T) {
	if os.Getenv("RELAY_FLEET_KNOWN_BUGS") != "1" {
		t.Skip("known fleet bug: a refused initialize names a session (Mcp-Session-Id); RELAY_FLEET_KNOWN_BUGS=1 runs it")
	}
	ctx := ctxFor(t, 2*time.Minute)
	f := startFleet(t)
	f.redis.Stop()
	status, sid, body := rawPost(ctx, t, f.url, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	t.Logf("initialize while Redis is down: %d, Mcp-Session-Id %q: %s", status, sid, body)
	if !strings.Contains(body, `"code":-32000`) || !strings.Contains(body, `"retryable":true`) {
		t.Errorf("initialize while Redis is down: %d %s; want the retryable error -32000", status, body)
	}
	f.redis.Restart()
	if sid != "" {
		after, body := rawCall(ctx, t, f.url, sid)
		t.Errorf("the refused initialize named session %q; its first call once Redis is back: %d %s", sid, after, body)
	}
}
