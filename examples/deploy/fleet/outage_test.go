//go:build unix

package fleet

import (
	"strings"
	"testing"
	"time"
)

// TestInitializeWhileRedisIsDown_NoSessionID: an initialize that reaches an instance while
// Redis is down is refused, HTTP 200 with the JSON-RPC error -32000 "Server busy: the
// session's state could not be kept … retry" (retryable), and names no session: a client
// that took an Mcp-Session-Id from it (Relay's own takes it from any answer) would send its
// next requests with an id whose record was never written, get 503 and then 404 once Redis
// is back, and initialize again. It failed so before initialize named its session only in an
// answer that is not an error.
func TestInitializeWhileRedisIsDown_NoSessionID(t *testing.T) {
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
