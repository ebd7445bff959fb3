package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestProgress: a request with _meta.progressToken gets notifications/progress carrying that
// exact token, with strictly increasing progress, all before its response and none after it
// (DIGEST A7). The token is compared as raw bytes, so a large integer must not be rounded.
func TestProgress(t *testing.T) {
	t.Parallel()
	for _, token := range []string{`"tok-ü-1"`, `12345678901234567890`, `0`} {
		t.Run(token, func(t *testing.T) {
			t.Parallel()
			c := start(t)
			c.send(`{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"sleep","arguments":{"ms":100},` +
				`"_meta":{"progressToken":` + token + `,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
			c.response(`"p"`)
			// A second request proves that, by the time its answer arrives, any notification
			// that was going to leak after the first response would have been written.
			c.send(sleepLine(`"later"`, 50))
			c.response(`"later"`)
			c.closeStdin()
			if code := c.wait(); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			var (
				notes    int
				last     float64
				answered bool
			)
			for _, m := range c.snapshot() {
				if m.isResponse() {
					if string(m.ID) == `"p"` {
						answered = true
						if got := toolText(t, m, true); got != "slept 100 ms" {
							t.Errorf("result %q", got)
						}
					}
					continue
				}
				if m.Method != "notifications/progress" {
					t.Errorf("unexpected notification %s", m)
					continue
				}
				var p struct {
					Token    json.RawMessage `json:"progressToken"`
					Progress *float64        `json:"progress"`
				}
				if err := json.Unmarshal(m.Params, &p); err != nil || p.Progress == nil {
					t.Errorf("bad progress params: %s", m)
					continue
				}
				if string(p.Token) != token {
					t.Errorf("progressToken = %s, want exactly %s (DIGEST A7)", p.Token, token)
				}
				if answered {
					t.Errorf("progress after the response (DIGEST A7: notifications stop once the response is sent): %s", m)
				}
				if notes > 0 && *p.Progress <= last {
					t.Errorf("progress %v after %v: must strictly increase (DIGEST A7)", *p.Progress, last)
				}
				last = *p.Progress
				notes++
			}
			if notes == 0 {
				t.Errorf("no notifications/progress for a request with a progressToken (DIGEST A7)")
			}
			if !answered {
				t.Errorf("no response")
			}
		})
	}
}

// TestNoProgressWithoutToken: without a progressToken the client did not opt in, so no
// progress is sent (DIGEST A7).
func TestNoProgressWithoutToken(t *testing.T) {
	t.Parallel()
	c := start(t)
	c.send(sleepLine(`1`, 100))
	c.response(`1`)
	c.closeStdin()
	c.wait()
	for _, m := range c.snapshot() {
		if m.isNotification() {
			t.Errorf("notification without a progressToken: %s", m)
		}
	}
}

// TestLegacyClient: a 2025-06-18 client handshakes with initialize, gets its version echoed
// and the server's identity, then uses tools/list, tools/call and ping without _meta (DIGEST
// A4: a server that also serves legacy clients; legacy ping answers {}).
func TestLegacyClient(t *testing.T) {
	t.Parallel()
	c := start(t)
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"legacy-client","version":"0.1"}}}`)
	init := c.response(`0`)
	var ir struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if init.Error != nil || json.Unmarshal(init.Result, &ir) != nil {
		t.Fatalf("initialize: %s", init)
	}
	if ir.ProtocolVersion != "2025-06-18" {
		t.Errorf("protocolVersion = %q, want the requested 2025-06-18 echoed", ir.ProtocolVersion)
	}
	if ir.ServerInfo.Name != "relay-echo" || ir.ServerInfo.Version == "" {
		t.Errorf("serverInfo = %+v", ir.ServerInfo)
	}
	if ir.Capabilities["tools"] == nil {
		t.Errorf("capabilities lack tools: %s", init)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	list := c.response(`1`)
	var lr struct {
		Tools []struct {
			Name        string `json:"name"`
			InputSchema struct {
				Type string `json:"type"`
			} `json:"inputSchema"`
		} `json:"tools"`
	}
	if list.Error != nil || json.Unmarshal(list.Result, &lr) != nil {
		t.Fatalf("tools/list: %s", list)
	}
	var names []string
	for _, tl := range lr.Tools {
		names = append(names, tl.Name)
		if tl.InputSchema.Type != "object" {
			t.Errorf("tool %s: inputSchema.type = %q, want object", tl.Name, tl.InputSchema.Type)
		}
	}
	if strings.Join(names, ",") != "echo,sleep" {
		t.Errorf("tools = %v, want echo and sleep", names)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"legacy hello"}}}`)
	if got := toolText(t, c.response(`2`), false); got != "legacy hello" {
		t.Errorf("tools/call: %q", got)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if p := c.response(`3`); p.Error != nil || string(p.Result) != `{}` {
		t.Errorf("ping: %s, want result {}", p)
	}
	// A 2026-07-28 request on the same connection is still served from its own _meta (DIGEST A3).
	c.send(echoLine(`4`, "modern on a legacy connection"))
	if got := toolText(t, c.response(`4`), true); got != "modern on a legacy connection" {
		t.Errorf("modern call: %q", got)
	}
	c.closeStdin()
	if code := c.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if n := len(c.snapshot()); n != 5 {
		t.Errorf("%d messages, want 5 (notifications/initialized is never answered, DIGEST A1)", n)
	}
}

// TestToolArgumentsFailSchema: arguments that do not match the tool's input schema are a tool
// execution error inside the result, isError true, naming the bad argument (DIGEST A11: tool
// failures, including bad input values, go inside CallToolResult; section F.4 decided this way).
func TestToolArgumentsFailSchema(t *testing.T) {
	t.Parallel()
	c := start(t)
	c.send(callLine(`1`, "echo", `{"text":5}`))
	m := c.response(`1`)
	if m.Error != nil {
		t.Fatalf("want a result with isError, got a JSON-RPC error: %s", m)
	}
	var r toolResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatal(err)
	}
	if !r.IsError {
		t.Errorf("isError is not true: %s", m)
	}
	if r.ResultType != "complete" {
		t.Errorf("resultType %q (DIGEST A1)", r.ResultType)
	}
	if len(r.Content) == 0 || !regexp.MustCompile(`\btext\b`).MatchString(r.Content[0].Text) {
		t.Errorf("the error does not name the argument \"text\": %s", m)
	}
	// An unknown tool, by contrast, is a protocol error (DIGEST A14: -32602).
	c.send(callLine(`2`, "nope", `{}`))
	expectError(t, c.response(`2`), -32602, `2`)
}
