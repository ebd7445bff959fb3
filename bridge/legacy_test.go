//go:build linux

package bridge_test

// Linux only: the test waits for the bridge's children through /proc (children_linux_test.go).

// An initialize-generation client, on plain net/http, through `relay bridge` to a child that
// speaks only the initialize generation.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// legacyChildEnv turns the test binary into a legacy-only stdio MCP server (see
// runLegacyChild). It is checked in init, before TestMain and its BRIDGE_TEST_CHILD child.
const legacyChildEnv = "BRIDGE_TEST_LEGACY_CHILD"

func init() {
	if os.Getenv(legacyChildEnv) != "" {
		os.Exit(runLegacyChild())
	}
}

// runLegacyChild serves newline-delimited JSON-RPC on stdin and stdout the way a server of
// the initialize generation does: server/discover is an unknown method (-32601), nothing but
// initialize and ping is served before initialize, and it has four tools: echo; whoami (its
// pid); seen (the params of the initialize it was given, and every method it was sent, in
// order); sleep (ms milliseconds, in which it answers nothing else); and ask (it asks its
// client for a sampling of text, and answers with the sampled text). It has no resource:
// resources/read answers -32002, as 2025-11-25 says of a resource that does not exist; but
// resources/subscribe is accepted, and every 50 ms the child then says each subscribed
// resource was updated, and also that its tools and prompts changed (it declares only the
// tools' listChanged) and a log message.
func runLegacyChild() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 16<<20)
	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex // the ticker below writes too
	write := func(v any) {
		b, _ := json.Marshal(v)
		outMu.Lock()
		defer outMu.Unlock()
		out.Write(append(b, '\n'))
		out.Flush()
	}
	var subsMu sync.Mutex
	var subs []string
	go func() { // ends with the process
		for range time.Tick(50 * time.Millisecond) {
			subsMu.Lock()
			uris := slices.Clone(subs)
			subsMu.Unlock()
			if len(uris) == 0 {
				continue
			}
			for _, uri := range uris {
				write(map[string]any{"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": map[string]any{"uri": uri}})
			}
			for _, m := range []string{"notifications/tools/list_changed", "notifications/prompts/list_changed"} {
				write(map[string]any{"jsonrpc": "2.0", "method": m})
			}
			write(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "error", "data": "a log"}})
		}
	}()
	initialized := false
	var initParams json.RawMessage
	var methods []string
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(in.Bytes(), &msg); err != nil || msg.Method == "" {
			continue // a response, or garbage: nothing to answer
		}
		methods = append(methods, msg.Method)
		if msg.ID == nil {
			continue // notifications/initialized and the like
		}
		var result any
		var rpcErr map[string]any
		switch {
		case msg.Method == "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(msg.Params, &p)
			version := "2025-11-25"
			if p.ProtocolVersion == "2025-06-18" || p.ProtocolVersion == "2025-03-26" {
				version = p.ProtocolVersion
			}
			initialized = true
			if initParams == nil {
				initParams = msg.Params
			}
			result = map[string]any{
				"protocolVersion": version,
				"capabilities": map[string]any{"tools": map[string]any{"listChanged": true},
					"resources": map[string]any{"subscribe": true}},
				"serverInfo": map[string]any{"name": "legacy-child", "version": "0.1.0"},
			}
		case msg.Method == "ping":
			result = map[string]any{}
		case !initialized:
			rpcErr = map[string]any{"code": -32600, "message": "not initialized: " + msg.Method}
		case msg.Method == "tools/list":
			result = map[string]any{"tools": []any{map[string]any{
				"name":        "echo",
				"description": "Answer with text.",
				"inputSchema": map[string]any{"type": "object",
					"properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}},
				"annotations": map[string]any{"readOnlyHint": true, "idempotentHint": true},
			}}}
		case msg.Method == "tools/call":
			var p struct {
				Name      string `json:"name"`
				Arguments struct {
					Text string `json:"text"`
					MS   int    `json:"ms"`
				} `json:"arguments"`
				Meta map[string]json.RawMessage `json:"_meta"`
			}
			json.Unmarshal(msg.Params, &p)
			text := func(s string) map[string]any {
				return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
			}
			switch {
			case p.Name == "whoami":
				result = text(fmt.Sprint(os.Getpid()))
			case p.Name == "seen":
				seen, _ := json.Marshal(map[string]any{"initialize": initParams, "methods": methods})
				result = text(string(seen))
			case p.Name == "ask": // asks its client for a sampling, and answers with its text
				write(map[string]any{"jsonrpc": "2.0", "id": "ask-1", "method": "sampling/createMessage", "params": map[string]any{
					"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": p.Arguments.Text}}}, "maxTokens": 10}})
				var reply struct {
					ID     json.RawMessage
					Result struct{ Content struct{ Text string } }
					Error  *struct{ Message string }
				}
				for in.Scan() {
					if json.Unmarshal(in.Bytes(), &reply) == nil && string(reply.ID) == `"ask-1"` {
						break
					}
				}
				if reply.Error != nil {
					result = text("refused: " + reply.Error.Message)
				} else {
					result = text("sampled: " + reply.Result.Content.Text)
				}
			case p.Name == "sleep":
				time.Sleep(time.Duration(p.Arguments.MS) * time.Millisecond)
				result = text("slept")
			case p.Name != "echo":
				rpcErr = map[string]any{"code": -32602, "message": "unknown tool " + p.Name}
			case p.Meta["io.modelcontextprotocol/protocolVersion"] != nil:
				// A legacy server would not know it; the bridge must strip it.
				rpcErr = map[string]any{"code": -32602, "message": "unexpected 2026-07-28 _meta"}
			default:
				result = map[string]any{"content": []any{map[string]any{"type": "text", "text": p.Arguments.Text}}}
			}
		case msg.Method == "resources/subscribe":
			var p struct{ URI string }
			json.Unmarshal(msg.Params, &p)
			subsMu.Lock()
			subs = append(subs, p.URI)
			subsMu.Unlock()
			result = map[string]any{}
		case msg.Method == "resources/read": // no resource exists: 2025-11-25's not found
			var p struct{ URI string }
			json.Unmarshal(msg.Params, &p)
			rpcErr = map[string]any{"code": -32002, "message": "Resource not found", "data": map[string]any{"uri": p.URI}}
		default: // server/discover included
			rpcErr = map[string]any{"code": -32601, "message": "Method not found: " + msg.Method}
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": msg.ID}
		if rpcErr != nil {
			reply["error"] = rpcErr
		} else {
			reply["result"] = result
		}
		write(reply)
	}
	return 0
}

// legacyPost sends one message of an initialize-generation session and returns the status,
// the Mcp-Session-Id header and the JSON-RPC response (nil when the body holds none).
func legacyPost(t *testing.T, r *relayProc, session, version, body string) (int, string, map[string]json.RawMessage) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, r.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	frame := bytes.TrimSpace(raw)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		frame = nil
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.Contains(data, `"id"`) {
				frame = []byte(strings.TrimSpace(data))
			}
		}
	}
	var msg map[string]json.RawMessage
	if len(frame) > 0 {
		if err := json.Unmarshal(frame, &msg); err != nil {
			t.Fatalf("HTTP %d, not JSON: %.300q", resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), msg
}

func TestLegacyClientThroughTheBridgeToALegacyChild(t *testing.T) {
	t.Setenv(legacyChildEnv, "1") // inherited by relay, and by the children it starts
	child, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := startRelay(t, []string{"--pool", "2"}, child)
	waitChildren(t, r.pid(), 3, 10*time.Second) // the pool's two, and a spare

	status, session, msg := legacyPost(t, r, "", "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"legacy-test","version":"1"}}}`)
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct{ Name string }
		Capabilities    map[string]json.RawMessage
	}
	if status != http.StatusOK || msg["result"] == nil || json.Unmarshal(msg["result"], &init) != nil {
		t.Fatalf("initialize: HTTP %d, %s", status, fmtMsg(msg))
	}
	if session == "" {
		t.Fatalf("initialize answered without an Mcp-Session-Id: %s", fmtMsg(msg))
	}
	if init.ProtocolVersion != "2025-11-25" || init.ServerInfo.Name != "legacy-child" || init.Capabilities["tools"] == nil {
		t.Errorf("initialize result %s: want 2025-11-25, the child's serverInfo and tools capability", msg["result"])
	}
	version := init.ProtocolVersion

	if status, _, msg := legacyPost(t, r, session, version, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d %s, want 202", status, fmtMsg(msg))
	}

	status, _, msg = legacyPost(t, r, session, version, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	var list struct{ Tools []struct{ Name string } }
	if status != http.StatusOK || json.Unmarshal(msg["result"], &list) != nil || len(list.Tools) != 1 || list.Tools[0].Name != "echo" {
		t.Fatalf("tools/list: HTTP %d, %s; want the child's one tool, echo", status, fmtMsg(msg))
	}

	// Several calls, all answered by the session's own child.
	for i := range 6 {
		text := fmt.Sprintf("hello %d", i)
		status, _, msg = legacyPost(t, r, session, version, fmt.Sprintf(
			`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`, 10+i, text))
		var res struct {
			Content []struct{ Type, Text string }
			IsError bool
		}
		if status != http.StatusOK || json.Unmarshal(msg["result"], &res) != nil || res.IsError ||
			len(res.Content) != 1 || res.Content[0].Text != text {
			t.Fatalf("tools/call %d: HTTP %d, %s; want the text %q", i, status, fmtMsg(msg), text)
		}
		if string(msg["id"]) != fmt.Sprint(10+i) {
			t.Fatalf("tools/call answered id %s, want %d", msg["id"], 10+i)
		}
	}
}

func fmtMsg(m map[string]json.RawMessage) string {
	b, _ := json.Marshal(m)
	return string(b)
}
