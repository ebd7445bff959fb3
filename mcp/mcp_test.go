package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

type echoIn struct {
	Text string `json:"text"`
}

func newServer(t *testing.T) *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "test", Version: "0.1"}, &mcp.ServerOptions{CacheTTL: time.Minute})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult(in.Text), nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fails", Description: "a tool whose API call fails"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return nil, errors.New("upstream said no")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "protocol-error"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return nil, jsonrpc.Errorf(-32603, "broken")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		for _, p := range []float64{1, 2, 2, 1, 3} { // the repeated and falling values must be dropped
			req.Progress(p, 3, "")
		}
		return mcp.TextResult("done"), nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "token"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return mcp.TextResult(string(req.ProgressToken())), nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return s
}

type client struct {
	t    *testing.T
	conn *runtime.Conn
}

func connect(t *testing.T, s *mcp.Server) *client {
	conn := s.Runtime(runtime.WithLogger(zap.NewNop())).Connect(context.Background())
	t.Cleanup(func() { conn.Close() })
	return &client{t: t, conn: conn}
}

func (c *client) send(frame string) {
	c.t.Helper()
	if err := c.conn.Send(context.Background(), []byte(frame)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) recv() map[string]json.RawMessage {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := c.conn.Receive(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(f, &m); err != nil {
		c.t.Fatalf("bad frame %q", f)
	}
	return m
}

// call sends a request and returns its response, skipping notifications.
func (c *client) call(id int, method, params string) map[string]json.RawMessage {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	for {
		m := c.recv()
		if m["id"] != nil && string(m["id"]) == fmt.Sprint(id) {
			return m
		}
	}
}

func code(m map[string]json.RawMessage) int64 {
	var e jsonrpc.Error
	json.Unmarshal(m["error"], &e)
	return e.Code
}

func result(t *testing.T, m map[string]json.RawMessage) map[string]any {
	t.Helper()
	if m["result"] == nil {
		t.Fatalf("want a result, got %s", m["error"])
	}
	var r map[string]any
	json.Unmarshal(m["result"], &r)
	return r
}

func TestCheckOrder_ShapeMetaVersionMethod(t *testing.T) {
	// DIGEST A2/A4/A5, and the order shape → _meta → version → method.
	cases := []struct {
		rule, method, params string
		code                 int64
	}{
		{"params must be an object (shape first)", "tools/list", `[1]`, -32602},
		{"_meta must be an object", "tools/list", `{"_meta":5}`, -32602},
		{"A2: missing required clientCapabilities is -32602", "tools/list",
			`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, -32602},
		{"A2 before A4: missing _meta wins over an unsupported version", "tools/list",
			`{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}`, -32602},
		{"A4: unsupported version is -32022", "nope/nope",
			`{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`, -32022},
		{"A4: version before method", "initialize",
			`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2030-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`, -32022},
		{"A5: ping was removed in 2026-07-28", "ping", `{` + modernMeta + `}`, -32601},
		{"A5: initialize with modern _meta is removed", "initialize", `{` + modernMeta + `}`, -32601},
		{"A5: logging/setLevel was removed", "logging/setLevel", `{"level":"info",` + modernMeta + `}`, -32601},
		{"A4: unknown method is -32601", "tools/nothing", `{` + modernMeta + `}`, -32601},
		{"no _meta and no legacy session is -32602", "tools/list", `{}`, -32602},
		{"A14: unknown tool is -32602", "tools/call", `{"name":"nope",` + modernMeta + `}`, -32602},
		{"A14: invalid cursor is -32602", "tools/list", `{"cursor":"bogus",` + modernMeta + `}`, -32602},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			c := connect(t, newServer(t))
			m := c.call(1, tc.method, tc.params)
			if got := code(m); got != tc.code {
				t.Fatalf("code %d, want %d: %s", got, tc.code, m["error"])
			}
		})
	}
}

func TestUnsupportedVersion_NamesSupported(t *testing.T) {
	c := connect(t, newServer(t))
	m := c.call(1, "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2024-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`)
	var e struct {
		Data struct {
			Supported []string
			Requested string
		}
	}
	json.Unmarshal(m["error"], &e)
	if len(e.Data.Supported) == 0 || e.Data.Supported[0] != "2026-07-28" || e.Data.Requested != "2024-01-01" {
		t.Fatalf("A4: -32022 must carry data.supported and data.requested: %s", m["error"])
	}
}

func TestDiscover_CacheableWithServerInfo(t *testing.T) {
	c := connect(t, newServer(t))
	r := result(t, c.call(1, "server/discover", `{`+modernMeta+`}`))
	if r["resultType"] != "complete" {
		t.Errorf("A1: resultType = %v", r["resultType"])
	}
	if v, _ := r["supportedVersions"].([]any); len(v) != 1 || v[0] != "2026-07-28" {
		t.Errorf("A4: supportedVersions = %v", r["supportedVersions"])
	}
	if r["ttlMs"] != float64(60000) || r["cacheScope"] != "public" {
		t.Errorf("A4: ttlMs/cacheScope = %v/%v", r["ttlMs"], r["cacheScope"])
	}
	caps, _ := r["capabilities"].(map[string]any)
	if _, ok := caps["tools"]; !ok {
		t.Errorf("A4: tools capability not advertised: %v", caps)
	}
	meta, _ := r["_meta"].(map[string]any)
	if info, _ := meta["io.modelcontextprotocol/serverInfo"].(map[string]any); info["name"] != "test" {
		t.Errorf("A2: serverInfo missing from _meta: %v", r["_meta"])
	}
}

func TestToolsList_DeterministicAndCacheable(t *testing.T) {
	c := connect(t, newServer(t))
	first := c.call(1, "tools/list", `{`+modernMeta+`}`)
	second := c.call(2, "tools/list", `{"cursor":"",`+modernMeta+`}`)
	if string(first["result"]) != string(second["result"]) {
		t.Fatal("A14: tools/list order is not deterministic")
	}
	r := result(t, first)
	tools := r["tools"].([]any)
	var names []string
	for _, tl := range tools {
		tm := tl.(map[string]any)
		names = append(names, tm["name"].(string))
		if tm["inputSchema"].(map[string]any)["type"] != "object" {
			t.Errorf("A14: inputSchema of %v is not an object schema", tm["name"])
		}
	}
	if strings.Join(names, ",") != "block,echo,fails,progress,protocol-error,token" {
		t.Errorf("tools not in name order: %v", names)
	}
	if r["ttlMs"] == nil || r["cacheScope"] == nil || r["resultType"] != "complete" {
		t.Errorf("A4: cacheable fields missing: %v", r)
	}
}

func TestToolsCall_Results(t *testing.T) {
	c := connect(t, newServer(t))
	r := result(t, c.call(1, "tools/call", `{"name":"echo","arguments":{"text":"hi"},`+modernMeta+`}`))
	content := r["content"].([]any)[0].(map[string]any)
	if content["type"] != "text" || content["text"] != "hi" || r["resultType"] != "complete" {
		t.Errorf("echo result: %v", r)
	}
	if _, ok := r["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"]; !ok {
		t.Errorf("A2: serverInfo missing from tools/call result")
	}

	// A11: a tool's own failure is an isError result, not a JSON-RPC error.
	r = result(t, c.call(2, "tools/call", `{"name":"fails",`+modernMeta+`}`))
	if r["isError"] != true || !strings.Contains(fmt.Sprint(r["content"]), "upstream said no") {
		t.Errorf("A11: tool failure: %v", r)
	}
	// A14: arguments that fail the schema: an isError result naming the field.
	r = result(t, c.call(3, "tools/call", `{"name":"echo","arguments":{"text":5},`+modernMeta+`}`))
	if r["isError"] != true || !strings.Contains(fmt.Sprint(r["content"]), "text") {
		t.Errorf("A14: schema failure: %v", r)
	}
	r = result(t, c.call(4, "tools/call", `{"name":"echo","arguments":{},`+modernMeta+`}`))
	if r["isError"] != true || !strings.Contains(fmt.Sprint(r["content"]), "text") {
		t.Errorf("A14: missing required field: %v", r)
	}
	r = result(t, c.call(5, "tools/call", `{"name":"echo","arguments":"text",`+modernMeta+`}`))
	if r["isError"] != true {
		t.Errorf("A14: arguments that are not an object: %v", r)
	}
	// A handler may still choose a protocol error.
	if m := c.call(6, "tools/call", `{"name":"protocol-error",`+modernMeta+`}`); code(m) != -32603 {
		t.Errorf("jsonrpc.Error from a tool: %s", m["error"])
	}
}

func TestProgress_OnlyWithTokenAndStrictlyIncreasing(t *testing.T) {
	// DIGEST A7.
	c := connect(t, newServer(t))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"tok","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	var got []float64
	for {
		m := c.recv()
		if m["id"] != nil {
			break
		}
		var p struct {
			ProgressToken json.RawMessage
			Progress      float64
		}
		json.Unmarshal(m["params"], &p)
		if string(p.ProgressToken) != `"tok"` {
			t.Errorf("progress token %s, want \"tok\"", p.ProgressToken)
		}
		got = append(got, p.Progress)
	}
	if fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("progress values %v, want [1 2 3]", got)
	}
	// Without a token, nothing but the response.
	m := c.call(2, "tools/call", `{"name":"progress",`+modernMeta+`}`)
	if m["result"] == nil {
		t.Fatal(m["error"])
	}
	// A handler sees the token as it was sent, or nil.
	for id, tc := range map[int]struct{ meta, want string }{
		3: {`"_meta":{"progressToken":7,` + modernMeta[len(`"_meta":{`):], `7`},
		4: {modernMeta, ``},
	} {
		m := c.call(id, "tools/call", `{"name":"token",`+tc.meta+`}`)
		if !strings.Contains(string(m["result"]), `"text":"`+strings.ReplaceAll(tc.want, `"`, `\"`)+`"`) {
			t.Errorf("ProgressToken with %s: %s, want %q", tc.meta, m["result"], tc.want)
		}
	}
}

func TestCancel_NoResponse(t *testing.T) {
	// DIGEST A8: after notifications/cancelled, no response for that request.
	c := connect(t, newServer(t))
	c.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"block",` + modernMeta + `}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"user"}}`)
	m := c.call(2, "tools/call", `{"name":"echo","arguments":{"text":"after"},`+modernMeta+`}`)
	if m["result"] == nil {
		t.Fatal("server not responsive after a cancel")
	}
	c.conn.CloseInput()
	for {
		f, err := c.conn.Receive(context.Background())
		if err != nil {
			break
		}
		t.Errorf("output after cancel: %s", f)
	}
}

func TestLegacy_InitializeNegotiatesAndOpensSession(t *testing.T) {
	// DIGEST B1.
	for _, tc := range []struct{ asked, want string }{
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-03-26"},
		{"2025-11-25", "2025-11-25"},
		{"2024-11-05", "2025-11-25"}, // unsupported: answer with the latest we speak
	} {
		t.Run(tc.asked, func(t *testing.T) {
			c := connect(t, newServer(t))
			if m := c.call(1, "tools/list", `{}`); code(m) != -32602 {
				t.Fatalf("before initialize, a request without _meta: %s", m["error"])
			}
			if m := c.call(2, "ping", `{}`); string(m["result"]) != "{}" {
				t.Fatalf("legacy ping before initialize: %s", m["result"])
			}
			r := result(t, c.call(3, "initialize", fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}`, tc.asked)))
			if r["protocolVersion"] != tc.want {
				t.Fatalf("negotiated %v, want %s", r["protocolVersion"], tc.want)
			}
			if r["serverInfo"].(map[string]any)["name"] != "test" {
				t.Errorf("serverInfo: %v", r["serverInfo"])
			}
			c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			r = result(t, c.call(4, "tools/call", `{"name":"echo","arguments":{"text":"legacy"}}`))
			if _, has := r["resultType"]; has {
				t.Errorf("B3: legacy results carry no modern-only fields: %v", r)
			}
			if m := c.call(5, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{}}`); code(m) != -32600 {
				t.Errorf("a second initialize: %s", m["error"])
			}
			// B3: modern requests are still served statelessly beside the legacy session.
			r = result(t, c.call(6, "tools/list", `{`+modernMeta+`}`))
			if r["resultType"] != "complete" {
				t.Errorf("modern request in a legacy connection: %v", r)
			}
		})
	}
}

func TestLegacy_InitializeNeedsProtocolVersion(t *testing.T) {
	c := connect(t, newServer(t))
	if m := c.call(1, "initialize", `{"capabilities":{}}`); code(m) != -32602 {
		t.Fatalf("initialize without protocolVersion: %s", m["error"])
	}
	// The failed handshake opened nothing.
	if m := c.call(2, "tools/list", `{}`); code(m) != -32602 {
		t.Fatalf("after a failed initialize: %s", m["error"])
	}
}
