//go:build unix

package bridge_test

// Unix only: startRelay's cleanup stops relay bridge with SIGTERM, which Windows cannot send.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestB3_LegacySessionIsPinnedToOneChild opens several initialize-generation sessions through
// `relay bridge --pool 3` (children that answer whoami with their pid) and sends each session
// many concurrent calls: every call of a session reaches the same child, and the sessions
// together use more than one child.
func TestB3_LegacySessionIsPinnedToOneChild(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(childEnv, "1")
	r := startRelay(t, []string{"--pool", "3"}, self)
	post := func(sid, body string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			sc := bufio.NewScanner(bytes.NewReader(raw))
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"id"`) {
					raw = []byte(data)
				}
			}
		}
		return resp, string(raw)
	}
	children := map[string]bool{}
	for session := range 6 {
		resp, _ := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pin","version":"1"}}}`)
		sid := resp.Header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("session %d: no Mcp-Session-Id", session)
		}
		post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		var mu sync.Mutex
		seen := map[string]bool{}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				_, body := post(sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"whoami","arguments":{"ms":20}}}`, i+1))
				var rep struct {
					Result struct{ Content []struct{ Text string } }
				}
				if json.Unmarshal([]byte(body), &rep) != nil || len(rep.Result.Content) != 1 {
					t.Errorf("session %d call %d: %s", session, i, body)
					return
				}
				mu.Lock()
				seen[rep.Result.Content[0].Text] = true
				mu.Unlock()
			})
		}
		wg.Wait()
		if len(seen) != 1 {
			t.Fatalf("session %d reached children %v; a legacy session is pinned to one", session, seen)
		}
		for pid := range seen {
			children[pid] = true
		}
	}
	if len(children) < 2 {
		t.Errorf("six sessions all went to child %v; new sessions go to the least-loaded child", children)
	}
}
