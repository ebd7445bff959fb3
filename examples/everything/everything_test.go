package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The fixture of CONFORMANCE.md §1, as the lists must show it.
var (
	fixtureTools = []string{
		"confirm_delete",
		"failing_job",
		"greet",
		"json_schema_2020_12_tool",
		"multi_input",
		"protocol_error_job",
		"slow_compute",
		"test_audio_content",
		"test_custom_headers",
		"test_elicitation",
		"test_elicitation_sep1034_defaults",
		"test_elicitation_sep1330_enums",
		"test_embedded_resource",
		"test_error_handling",
		"test_image_content",
		"test_input_required_result_capabilities",
		"test_input_required_result_elicitation",
		"test_input_required_result_list_roots",
		"test_input_required_result_multi_round",
		"test_input_required_result_multiple_inputs",
		"test_input_required_result_request_state",
		"test_input_required_result_sampling",
		"test_input_required_result_tampered_state",
		"test_logging_tool",
		"test_missing_capability",
		"test_multiple_content_types",
		"test_reconnection",
		"test_sampling",
		"test_simple_text",
		"test_streaming_elicitation",
		"test_tool_with_logging",
		"test_tool_with_progress",
		"test_tool_with_task",
		"test_trigger_prompt_change",
		"test_trigger_tool_change",
	}
	// Each skill's SKILL.md is listed too (skills.go), and sorts first.
	fixtureResources = []string{"skill://acme/billing/refunds/SKILL.md", "skill://pdf-processing/SKILL.md",
		uriStaticBinary, uriStaticText, uriWatched}
	fixturePrompts = []string{
		"test_input_required_result_prompt",
		"test_prompt_with_arguments",
		"test_prompt_with_embedded_resource",
		"test_prompt_with_image",
		"test_simple_prompt",
	}
)

// era is one protocol generation a client can speak.
type era struct {
	name   string
	modern bool
}

var eras = []era{
	{"legacy-2025-11-25", false}, // initialize handshake (DIGEST B1)
	{"modern-2026-07-28", true},  // per-request _meta (DIGEST A2, A3)
}

// msg is any JSON-RPC message.
type msg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

func (m msg) isRequest() bool { return m.ID != nil && m.Method != "" }

// reply is the response to a call, and the notifications received while waiting for it.
type reply struct {
	msg
	notes []msg
}

// client is a hand-written MCP client over the runtime's in-memory connection.
type client struct {
	t      *testing.T
	s      *mcp.Server
	conn   *runtime.Conn
	era    era
	caps   map[string]any
	nextID int
	// answer serves the server's requests to the client (initialize generation only); nil
	// fails the test when one arrives.
	answer func(m msg) any
	// asked records the server's requests, in order.
	asked []msg
}

// open connects a new client of the given era to a new fixture server. A legacy client
// initializes (2025-11-25), sends initialized and sets the log level to debug; a modern one
// sends its version, capabilities and log level with every request.
func open(t *testing.T, e era, caps map[string]any) *client {
	t.Helper()
	return openServer(t, newServer(), e, caps)
}

func openServer(t *testing.T, s *mcp.Server, e era, caps map[string]any) *client {
	t.Helper()
	if caps == nil {
		caps = map[string]any{}
	}
	conn := s.Runtime(runtime.WithLogger(zap.NewNop())).Connect(context.Background())
	t.Cleanup(func() { conn.Close() })
	c := &client{t: t, s: s, conn: conn, era: e, caps: caps, nextID: 1}
	if e.modern {
		return c
	}
	r := c.mustResult("initialize", map[string]any{
		"protocolVersion": mcp.Version20251125,
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "everything-test", "version": "1.0.0"},
	})
	if r["protocolVersion"] != mcp.Version20251125 {
		t.Fatalf("B1: initialize must echo a supported version; got %v", r["protocolVersion"])
	}
	serverCaps, _ := r["capabilities"].(map[string]any)
	for _, want := range []string{"tools", "resources", "prompts", "completions", "logging"} {
		if _, ok := serverCaps[want]; !ok {
			t.Errorf("B1: capability %q not declared in initialize: %v", want, serverCaps)
		}
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	if r := c.call("ping", nil); string(r.Result) != "{}" {
		t.Fatalf("B1: ping answers {}; got %s %v", r.Result, r.Error)
	}
	if r := c.call("logging/setLevel", map[string]any{"level": "debug"}); string(r.Result) != "{}" {
		t.Fatalf("B1: logging/setLevel answers {}; got %s %v", r.Result, r.Error)
	}
	return c
}

func (c *client) send(v any) {
	c.t.Helper()
	frame, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.conn.Send(context.Background(), frame); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) recv() msg {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := c.conn.Receive(ctx)
	if err != nil {
		c.t.Fatalf("receive: %v", err)
	}
	var m msg
	if err := json.Unmarshal(f, &m); err != nil {
		c.t.Fatalf("the server wrote a frame that is not JSON-RPC: %q", f)
	}
	if m.JSONRPC != "2.0" {
		c.t.Fatalf("A1: every message is JSON-RPC 2.0: %q", f)
	}
	return m
}

// withMeta returns params with the era's request metadata merged into params._meta.
func (c *client) withMeta(params map[string]any) map[string]any {
	out := maps.Clone(params)
	if out == nil {
		out = map[string]any{}
	}
	meta := map[string]any{}
	if m, ok := out["_meta"].(map[string]any); ok {
		maps.Copy(meta, m)
	}
	if c.era.modern {
		meta[mcp.MetaProtocolVersion] = mcp.Version20260728
		meta[mcp.MetaClientCapabilities] = c.caps
		meta[mcp.MetaLogLevel] = "debug"
	}
	if len(meta) > 0 {
		out["_meta"] = meta
	}
	return out
}

// start sends a request without waiting and returns its id.
func (c *client) start(method string, params map[string]any) int {
	c.t.Helper()
	id := c.nextID
	c.nextID++
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": c.withMeta(params)})
	return id
}

// wait reads frames until the response to id, answering the server's requests on the way.
func (c *client) wait(id int) reply {
	c.t.Helper()
	var notes []msg
	for {
		m := c.recv()
		switch {
		case m.isRequest():
			if c.era.modern {
				c.t.Fatalf("A1/A6: a server never sends a 2026-07-28 client a request; got %s", m.Method)
			}
			c.asked = append(c.asked, m)
			if c.answer == nil {
				c.t.Fatalf("unexpected request from the server: %s %s", m.Method, m.Params)
			}
			c.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": c.answer(m)})
		case m.Method != "":
			notes = append(notes, m)
		case string(m.ID) == fmt.Sprint(id):
			return reply{m, notes}
		default:
			c.t.Fatalf("a response to no request in flight: %s", m.ID)
		}
	}
}

func (c *client) call(method string, params map[string]any) reply {
	c.t.Helper()
	return c.wait(c.start(method, params))
}

// mustResult calls and decodes a successful result, checking the era's result rules.
func (c *client) mustResult(method string, params map[string]any) map[string]any {
	c.t.Helper()
	r := c.call(method, params)
	return c.decode(method, r)
}

func (c *client) decode(method string, r reply) map[string]any {
	c.t.Helper()
	if r.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, r.Error.Code, r.Error.Message)
	}
	var out map[string]any
	if err := json.Unmarshal(r.Result, &out); err != nil {
		c.t.Fatalf("%s: result is not an object: %s", method, r.Result)
	}
	c.checkEra(method, out)
	return out
}

// checkEra checks what every result of the era must (or must not) carry.
func (c *client) checkEra(method string, r map[string]any) {
	c.t.Helper()
	if !c.era.modern {
		if method != "initialize" && method != "ping" && method != "logging/setLevel" {
			if _, has := r["resultType"]; has {
				c.t.Errorf("B3: %s: a legacy result carries no resultType: %v", method, r)
			}
		}
		return
	}
	if rt := r["resultType"]; rt != "complete" && rt != "input_required" {
		c.t.Errorf("A1: %s: resultType %v", method, rt)
	}
	meta, _ := r["_meta"].(map[string]any)
	if info, _ := meta[mcp.MetaServerInfo].(map[string]any); info["name"] != "relay-everything" {
		c.t.Errorf("A2: %s: serverInfo missing from the result's _meta: %v", method, r["_meta"])
	}
	cacheable := slices.Contains([]string{"tools/list", "prompts/list", "resources/list",
		"resources/templates/list", "resources/read"}, method)
	_, hasTTL := r["ttlMs"]
	_, hasScope := r["cacheScope"]
	switch {
	case r["resultType"] == "input_required" && (hasTTL || hasScope):
		c.t.Errorf("A4: %s: an input_required result is never cacheable: %v", method, r)
	case r["resultType"] == "complete" && cacheable && (!hasTTL || !hasScope):
		c.t.Errorf("A4: %s: ttlMs and cacheScope are required: %v", method, r)
	}
}

// content is one content block, as tools and prompts return them.
type content struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
	Resource *struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text"`
		Blob     string `json:"blob"`
	} `json:"resource"`
}

type toolResult struct {
	Content []content `json:"content"`
	IsError bool      `json:"isError"`
}

func (c *client) callTool(name string, args map[string]any, meta map[string]any) (toolResult, reply) {
	c.t.Helper()
	params := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	r := c.call("tools/call", params)
	c.decode("tools/call "+name, r)
	var tr toolResult
	json.Unmarshal(r.Result, &tr)
	return tr, r
}

// String shortens base64 data, for failure messages.
func (tr toolResult) String() string {
	var parts []string
	for _, b := range tr.Content {
		if b.Data != "" {
			b.Data = fmt.Sprintf("(%d base64 chars)", len(b.Data))
		}
		raw, _ := json.Marshal(b)
		parts = append(parts, string(raw))
	}
	return fmt.Sprintf("isError=%v content=[%s]", tr.IsError, strings.Join(parts, ","))
}

func (tr toolResult) text() string {
	var parts []string
	for _, b := range tr.Content {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func decodeB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("data is not base64: %v", err)
	}
	return b
}

func isPNG(b []byte) bool { return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) }
func isWAV(b []byte) bool {
	return len(b) > 44 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WAVE" && string(b[12:16]) == "fmt "
}

func forEra(t *testing.T, f func(t *testing.T, e era)) {
	for _, e := range eras {
		t.Run(e.name, func(t *testing.T) { f(t, e) })
	}
}

func names(t *testing.T, items any, key string) []string {
	t.Helper()
	list, ok := items.([]any)
	if !ok {
		t.Fatalf("not a list: %v", items)
	}
	var out []string
	for _, it := range list {
		m := it.(map[string]any)
		out = append(out, fmt.Sprint(m[key]))
	}
	return out
}

func TestA14_B1_ListsShowTheFixture(t *testing.T) {
	forEra(t, func(t *testing.T, e era) {
		c := open(t, e, nil)

		r := c.mustResult("tools/list", nil)
		if got := names(t, r["tools"], "name"); !slices.Equal(got, fixtureTools) {
			t.Errorf("tools: %v\nwant %v", got, fixtureTools)
		}
		for _, it := range r["tools"].([]any) {
			tl := it.(map[string]any)
			schema, _ := tl["inputSchema"].(map[string]any)
			if tl["description"] == "" || tl["description"] == nil || schema["type"] != "object" {
				t.Errorf("A14: tool %v needs a description and an object inputSchema: %v", tl["name"], tl)
			}
			if tl["name"] != "json_schema_2020_12_tool" {
				continue
			}
			defs, _ := schema["$defs"].(map[string]any)
			if schema["$schema"] != "https://json-schema.org/draft/2020-12/schema" || defs["address"] == nil ||
				schema["additionalProperties"] != false {
				t.Errorf("A14: json_schema_2020_12_tool must keep $schema, $defs.address and additionalProperties:false: %v", schema)
			}
			address, _ := defs["address"].(map[string]any)
			if address["$anchor"] != "addressDef" || schema["allOf"] == nil || schema["if"] == nil ||
				schema["then"] == nil || schema["else"] == nil {
				t.Errorf("SEP-2106: json_schema_2020_12_tool must keep $anchor, allOf, if, then and else: %v", schema)
			}
		}

		r = c.mustResult("resources/list", nil)
		if got := names(t, r["resources"], "uri"); !slices.Equal(got, fixtureResources) {
			t.Errorf("resources: %v, want %v", got, fixtureResources)
		}
		for _, it := range r["resources"].([]any) {
			if res := it.(map[string]any); res["name"] == nil || res["mimeType"] == nil {
				t.Errorf("resource without name or mimeType: %v", res)
			}
		}
		r = c.mustResult("resources/templates/list", nil)
		if got := names(t, r["resourceTemplates"], "uriTemplate"); !slices.Equal(got, []string{uriTemplate}) {
			t.Errorf("templates: %v", got)
		}

		r = c.mustResult("prompts/list", nil)
		if got := names(t, r["prompts"], "name"); !slices.Equal(got, fixturePrompts) {
			t.Errorf("prompts: %v, want %v", got, fixturePrompts)
		}
		for _, it := range r["prompts"].([]any) {
			if p := it.(map[string]any); p["description"] == nil {
				t.Errorf("prompt without description: %v", p)
			}
		}
	})
}

func TestA14_B1_ToolsCallReturnTheFixtureOutputs(t *testing.T) {
	forEra(t, func(t *testing.T, e era) {
		c := open(t, e, nil)

		tr, _ := c.callTool("test_simple_text", nil, nil)
		if len(tr.Content) != 1 || tr.Content[0].Type != "text" || tr.Content[0].Text == "" || tr.IsError {
			t.Errorf("test_simple_text: %+v", tr)
		}

		tr, _ = c.callTool("test_image_content", nil, nil)
		if len(tr.Content) != 1 || tr.Content[0].Type != "image" || tr.Content[0].MimeType != "image/png" ||
			!isPNG(decodeB64(t, tr.Content[0].Data)) {
			t.Errorf("test_image_content: %+v", tr)
		}

		tr, _ = c.callTool("test_audio_content", nil, nil)
		if len(tr.Content) != 1 || tr.Content[0].Type != "audio" || tr.Content[0].MimeType != "audio/wav" ||
			!isWAV(decodeB64(t, tr.Content[0].Data)) {
			t.Errorf("test_audio_content: %+v", tr)
		}

		tr, _ = c.callTool("test_embedded_resource", nil, nil)
		if len(tr.Content) != 1 || tr.Content[0].Type != "resource" || tr.Content[0].Resource == nil ||
			tr.Content[0].Resource.URI != uriEmbedded || tr.Content[0].Resource.MimeType != "text/plain" ||
			tr.Content[0].Resource.Text == "" {
			t.Errorf("test_embedded_resource: %+v", tr)
		}

		tr, _ = c.callTool("test_multiple_content_types", nil, nil)
		var kinds []string
		for _, b := range tr.Content {
			kinds = append(kinds, b.Type)
		}
		if !slices.Contains(kinds, "text") || !slices.Contains(kinds, "image") || !slices.Contains(kinds, "resource") {
			t.Errorf("test_multiple_content_types: kinds %v", kinds)
		}

		tr, _ = c.callTool("test_error_handling", nil, nil)
		if !tr.IsError || len(tr.Content) == 0 || tr.Content[0].Text == "" {
			t.Errorf("A11: a tool failure is a result with isError and text: %+v", tr)
		}

		tr, _ = c.callTool("json_schema_2020_12_tool", map[string]any{"name": "Ada", "email": "ada@example.com",
			"address": map[string]any{"street": "1 Main St", "city": "Springfield"}}, nil)
		if tr.IsError || !strings.Contains(tr.text(), "Springfield") {
			t.Errorf("json_schema_2020_12_tool with valid arguments: %+v", tr)
		}
		tr, _ = c.callTool("json_schema_2020_12_tool", map[string]any{"name": "Ada", "email": "ada@example.com", "extra": 1}, nil)
		if !tr.IsError || !strings.Contains(tr.text(), "extra") {
			t.Errorf("A14: additionalProperties:false must reject an extra argument with isError: %+v", tr)
		}
		for _, args := range []map[string]any{
			{"name": "Ada"}, // allOf/anyOf: a phone or an email
			{"name": "Ada", "contactMethod": "phone", "email": "ada@example.com"}, // if/then: the phone
		} {
			if tr, _ = c.callTool("json_schema_2020_12_tool", args, nil); !tr.IsError {
				t.Errorf("SEP-2106: arguments that break allOf or if/then must be refused with isError: %v: %+v", args, tr)
			}
		}
		if tr, _ = c.callTool("json_schema_2020_12_tool", map[string]any{"name": "Ada", "contactMethod": "phone", "phone": "555-0100"}, nil); tr.IsError {
			t.Errorf("json_schema_2020_12_tool with a phone: %+v", tr)
		}

		tr, _ = c.callTool("test_reconnection", nil, nil)
		if tr.IsError || tr.text() == "" {
			t.Errorf("test_reconnection: %+v", tr)
		}

		// A14: an unknown tool is a protocol error.
		if r := c.call("tools/call", map[string]any{"name": "no_such_tool"}); r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("A14: unknown tool: %+v", r.Error)
		}
	})
}

func TestA10_B1_LoggingSendsThreeMessagesDuringTheCall(t *testing.T) {
	forEra(t, func(t *testing.T, e era) {
		c := open(t, e, nil) // debug: legacy by logging/setLevel, modern by _meta logLevel
		tr, r := c.callTool("test_tool_with_logging", nil, nil)
		if tr.IsError {
			t.Fatalf("test_tool_with_logging: %+v", tr)
		}
		var logs int
		for _, n := range r.notes {
			if n.Method != "notifications/message" {
				continue
			}
			var p struct {
				Level string `json:"level"`
				Data  any    `json:"data"`
			}
			json.Unmarshal(n.Params, &p)
			if p.Level == "" || p.Data == nil {
				t.Errorf("A10: notifications/message needs level and data: %s", n.Params)
			}
			logs++
		}
		if logs < 3 {
			t.Errorf("A10: want ≥3 notifications/message before the response, got %d", logs)
		}
	})
	t.Run("modern-without-logLevel-sends-none", func(t *testing.T) {
		c := open(t, eras[1], nil)
		params := map[string]any{"name": "test_tool_with_logging", "_meta": map[string]any{
			mcp.MetaProtocolVersion: mcp.Version20260728, mcp.MetaClientCapabilities: map[string]any{}}}
		id := c.nextID
		c.nextID++
		c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
		if r := c.wait(id); len(r.notes) != 0 {
			t.Errorf("A10: log messages only when the request carries logLevel: %v", r.notes)
		}
	})
}

func TestA7_ProgressZeroFiftyHundredOfHundred(t *testing.T) {
	forEra(t, func(t *testing.T, e era) {
		c := open(t, e, nil)
		tr, r := c.callTool("test_tool_with_progress", nil, map[string]any{"progressToken": "tok-1"})
		if tr.IsError {
			t.Fatalf("test_tool_with_progress: %+v", tr)
		}
		var got []string
		for _, n := range r.notes {
			if n.Method != "notifications/progress" {
				continue
			}
			var p struct {
				Token    any     `json:"progressToken"`
				Progress float64 `json:"progress"`
				Total    float64 `json:"total"`
			}
			json.Unmarshal(n.Params, &p)
			if p.Token != "tok-1" {
				t.Errorf("A7: progressToken %v, want tok-1", p.Token)
			}
			got = append(got, fmt.Sprintf("%g/%g", p.Progress, p.Total))
		}
		if strings.Join(got, " ") != "0/100 50/100 100/100" {
			t.Errorf("A7: progress %v, want 0/100 50/100 100/100", got)
		}
		// Without a token: no progress at all.
		_, r = c.callTool("test_tool_with_progress", nil, nil)
		for _, n := range r.notes {
			if n.Method == "notifications/progress" {
				t.Errorf("A7: progress without a progressToken: %s", n.Params)
			}
		}
	})
}

func TestA4_B1_ResourcesReadEveryResourceAndTemplate(t *testing.T) {
	forEra(t, func(t *testing.T, e era) {
		c := open(t, e, nil)
		read := func(uri string) (string, string, string) {
			t.Helper()
			r := c.mustResult("resources/read", map[string]any{"uri": uri})
			contents, _ := r["contents"].([]any)
			if len(contents) != 1 {
				t.Fatalf("%s: contents %v", uri, r["contents"])
			}
			rc := contents[0].(map[string]any)
			if rc["uri"] != uri {
				t.Errorf("%s: contents uri %v", uri, rc["uri"])
			}
			text, _ := rc["text"].(string)
			blob, _ := rc["blob"].(string)
			mime, _ := rc["mimeType"].(string)
			return text, blob, mime
		}
		if text, _, mime := read(uriStaticText); text != staticText || mime != "text/plain" {
			t.Errorf("static-text: %q %q", text, mime)
		}
		if text, blob, mime := read(uriStaticBinary); text != "" || mime != "image/png" || !isPNG(decodeB64(t, blob)) {
			t.Errorf("static-binary: blob %q mime %q", blob, mime)
		}
		if text, _, _ := read(uriWatched); !strings.Contains(text, "revision") {
			t.Errorf("watched-resource: %q", text)
		}
		if text, _, mime := read("test://template/123/data"); !strings.Contains(text, `"123"`) || mime != "application/json" {
			t.Errorf("template: %q %q", text, mime)
		}
		// A11 / B1: not found is -32602 in 2026-07-28 and -32002 before it.
		want := int64(-32002)
		if e.modern {
			want = jsonrpc.CodeInvalidParams
		}
		if r := c.call("resources/read", map[string]any{"uri": "test://nothing"}); r.Error == nil || r.Error.Code != want {
			t.Errorf("resource not found: %+v, want code %d", r.Error, want)
		}
	})
}

func TestA14_B1_PromptsGetEveryPrompt(t *testing.T) {
	forEra(t, func(t *testing.T, e era) {
		c := open(t, e, nil)
		get := func(name string, args map[string]any) []map[string]any {
			t.Helper()
			params := map[string]any{"name": name}
			if args != nil {
				params["arguments"] = args
			}
			r := c.mustResult("prompts/get", params)
			raw, _ := json.Marshal(r["messages"])
			var msgs []map[string]any
			json.Unmarshal(raw, &msgs)
			if len(msgs) == 0 {
				t.Fatalf("%s: no messages: %v", name, r)
			}
			for _, m := range msgs {
				if m["role"] != "user" && m["role"] != "assistant" || m["content"] == nil {
					t.Errorf("%s: a message needs role and content: %v", name, m)
				}
			}
			return msgs
		}
		kind := func(m map[string]any) string { return fmt.Sprint(m["content"].(map[string]any)["type"]) }

		if msgs := get("test_simple_prompt", nil); kind(msgs[0]) != "text" {
			t.Errorf("test_simple_prompt: %v", msgs)
		}
		msgs := get("test_prompt_with_arguments", map[string]any{"arg1": "first-value", "arg2": "second-value"})
		all, _ := json.Marshal(msgs)
		if !strings.Contains(string(all), "first-value") || !strings.Contains(string(all), "second-value") {
			t.Errorf("test_prompt_with_arguments: both values must be in the messages: %s", all)
		}
		msgs = get("test_prompt_with_embedded_resource", map[string]any{"resourceUri": "test://example-resource"})
		res, _ := msgs[0]["content"].(map[string]any)["resource"].(map[string]any)
		if kind(msgs[0]) != "resource" || res["uri"] != "test://example-resource" || res["text"] == nil {
			t.Errorf("test_prompt_with_embedded_resource: %v", msgs)
		}
		msgs = get("test_prompt_with_image", nil)
		img := msgs[0]["content"].(map[string]any)
		if kind(msgs[0]) != "image" || img["mimeType"] != "image/png" || !isPNG(decodeB64(t, fmt.Sprint(img["data"]))) {
			t.Errorf("test_prompt_with_image: %v", msgs)
		}
		// A missing required argument is -32602.
		if r := c.call("prompts/get", map[string]any{"name": "test_prompt_with_arguments", "arguments": map[string]any{"arg1": "x"}}); r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("missing arg2: %+v", r.Error)
		}
	})
}

func TestB1_A4_CompletionOfPromptArgument(t *testing.T) {
	forEra(t, func(t *testing.T, e era) {
		c := open(t, e, nil)
		complete := func(ref map[string]any, arg, value string) []string {
			t.Helper()
			r := c.mustResult("completion/complete", map[string]any{
				"ref": ref, "argument": map[string]any{"name": arg, "value": value}})
			comp, _ := r["completion"].(map[string]any)
			raw, _ := json.Marshal(comp["values"])
			var values []string
			if err := json.Unmarshal(raw, &values); err != nil || values == nil {
				t.Fatalf("completion.values must be an array: %v", r)
			}
			return values
		}
		prompt := map[string]any{"type": "ref/prompt", "name": "test_prompt_with_arguments"}
		if got := complete(prompt, "arg1", ""); len(got) == 0 {
			t.Errorf("arg1 with nothing typed: no values")
		}
		if got := complete(prompt, "arg1", "par"); !slices.Equal(got, []string{"paris", "park", "party"}) {
			t.Errorf("arg1 'par': %v", got)
		}
		if got := complete(prompt, "arg1", "zzz"); len(got) != 0 {
			t.Errorf("arg1 'zzz': %v", got)
		}
		tmpl := map[string]any{"type": "ref/resource", "uri": uriTemplate}
		if got := complete(tmpl, "id", "12"); !slices.Equal(got, []string{"123"}) {
			t.Errorf("template id '12': %v", got)
		}
	})
}

// The interactive tools, what the client answers, and what the final text must contain.
var interactive = []struct {
	tool, method string
	args         map[string]any
	answer       any
	want         []string
	check        func(t *testing.T, params map[string]any)
}{
	{
		tool: "test_sampling", method: "sampling/createMessage",
		args:   map[string]any{"prompt": "What is the capital of France?"},
		answer: map[string]any{"role": "assistant", "model": "test-model", "stopReason": "endTurn", "content": map[string]any{"type": "text", "text": "Paris is the capital."}},
		want:   []string{"Paris is the capital."},
		check: func(t *testing.T, p map[string]any) {
			raw, _ := json.Marshal(p["messages"])
			if !strings.Contains(string(raw), "What is the capital of France?") || p["maxTokens"] == nil {
				t.Errorf("sampling request must carry the prompt and maxTokens: %v", p)
			}
		},
	},
	{
		tool: "test_missing_capability", method: "sampling/createMessage",
		answer: map[string]any{"role": "assistant", "model": "test-model", "stopReason": "endTurn", "content": map[string]any{"type": "text", "text": "Hello."}},
		want:   []string{"The client's model said: Hello."},
		check: func(t *testing.T, p map[string]any) {
			if p["messages"] == nil || p["maxTokens"] == nil {
				t.Errorf("sampling request must carry messages and maxTokens: %v", p)
			}
		},
	},
	{
		tool: "test_streaming_elicitation", method: "elicitation/create",
		answer: map[string]any{"action": "accept", "content": map[string]any{"ok": true}},
		want:   []string{"action=accept", `"ok":true`},
		check: func(t *testing.T, p map[string]any) {
			if props := schemaProps(t, p); p["message"] != "Continue?" || props["ok"] == nil {
				t.Errorf("elicitation request must ask to continue, for a boolean ok: %v", p)
			}
		},
	},
	{
		tool: "test_input_required_result_elicitation", method: "elicitation/create",
		answer: map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}},
		want:   []string{"Hello, Alice!"},
		check: func(t *testing.T, p map[string]any) {
			if props := schemaProps(t, p); p["message"] != "What is your name?" || props["name"] == nil {
				t.Errorf("elicitation request must ask for a name: %v", p)
			}
		},
	},
	{
		tool: "test_input_required_result_sampling", method: "sampling/createMessage",
		answer: map[string]any{"role": "assistant", "model": "test-model", "stopReason": "endTurn", "content": map[string]any{"type": "text", "text": "Paris."}},
		want:   []string{"The client's model answered: Paris."},
		check: func(t *testing.T, p map[string]any) {
			if raw, _ := json.Marshal(p["messages"]); !strings.Contains(string(raw), "capital of France") || p["maxTokens"] != float64(100) {
				t.Errorf("sampling request must ask for the capital of France, in 100 tokens: %v", p)
			}
		},
	},
	{
		tool: "test_input_required_result_list_roots", method: "roots/list",
		answer: map[string]any{"roots": []any{map[string]any{"uri": "file:///test/root", "name": "Test Root"}}},
		want:   []string{"The client's roots: file:///test/root"},
		check:  func(t *testing.T, p map[string]any) {},
	},
	{
		tool: "test_input_required_result_tampered_state", method: "elicitation/create",
		answer: map[string]any{"action": "accept", "content": map[string]any{"ok": true}},
		want:   []string{"action=accept", `"ok":true`},
		check: func(t *testing.T, p map[string]any) {
			if props := schemaProps(t, p); props["ok"] == nil {
				t.Errorf("elicitation request must ask for a boolean ok: %v", p)
			}
		},
	},
	{
		tool: "test_elicitation", method: "elicitation/create",
		args:   map[string]any{"message": "Please provide your information"},
		answer: map[string]any{"action": "accept", "content": map[string]any{"username": "ada", "email": "ada@example.com"}},
		want:   []string{"accept", "ada@example.com", `"username":"ada"`},
		check: func(t *testing.T, p map[string]any) {
			props := schemaProps(t, p)
			if p["message"] != "Please provide your information" || props["username"] == nil || props["email"] == nil {
				t.Errorf("elicitation request must carry the message and ask for username and email: %v", p)
			}
		},
	},
	{
		tool: "test_elicitation_sep1034_defaults", method: "elicitation/create",
		answer: map[string]any{"action": "accept", "content": map[string]any{"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true}},
		want:   []string{"accept", "John Doe", `"age":30`, "95.5"},
		check: func(t *testing.T, p map[string]any) {
			props := schemaProps(t, p)
			wantDefaults := map[string]any{"name": "John Doe", "age": float64(30), "score": 95.5, "status": "active", "verified": true}
			for k, v := range wantDefaults {
				prop, _ := props[k].(map[string]any)
				if prop["default"] != v {
					t.Errorf("SEP-1034: %s default %v, want %v", k, prop["default"], v)
				}
			}
			if age, _ := props["age"].(map[string]any); age["type"] != "integer" {
				t.Errorf("SEP-1034: age must be an integer: %v", age)
			}
			if st, _ := props["status"].(map[string]any); st["enum"] == nil {
				t.Errorf("SEP-1034: status must be an enum: %v", st)
			}
		},
	},
	{
		tool: "test_elicitation_sep1330_enums", method: "elicitation/create",
		answer: map[string]any{"action": "accept", "content": map[string]any{
			"untitledSingle": "option1", "titledSingle": "value2", "legacyEnum": "opt3",
			"untitledMulti": []string{"option1", "option3"}, "titledMulti": []string{"value1"}}},
		want: []string{"accept", `"titledSingle":"value2"`, `"untitledMulti":["option1","option3"]`},
		check: func(t *testing.T, p map[string]any) {
			props := schemaProps(t, p)
			field := func(name string) map[string]any { f, _ := props[name].(map[string]any); return f }
			items := func(name string) map[string]any { i, _ := field(name)["items"].(map[string]any); return i }
			switch {
			case field("untitledSingle")["enum"] == nil:
				t.Errorf("SEP-1330: untitledSingle needs enum: %v", field("untitledSingle"))
			case field("titledSingle")["oneOf"] == nil:
				t.Errorf("SEP-1330: titledSingle needs oneOf: %v", field("titledSingle"))
			case field("legacyEnum")["enumNames"] == nil || field("legacyEnum")["enum"] == nil:
				t.Errorf("SEP-1330: legacyEnum needs enum and enumNames: %v", field("legacyEnum"))
			case field("untitledMulti")["type"] != "array" || items("untitledMulti")["enum"] == nil:
				t.Errorf("SEP-1330: untitledMulti needs items.enum: %v", field("untitledMulti"))
			case field("titledMulti")["type"] != "array" || items("titledMulti")["anyOf"] == nil:
				t.Errorf("SEP-1330: titledMulti needs items.anyOf: %v", field("titledMulti"))
			}
			one, _ := field("titledSingle")["oneOf"].([]any)
			if len(one) == 0 || one[0].(map[string]any)["const"] == nil || one[0].(map[string]any)["title"] == nil {
				t.Errorf("SEP-1330: oneOf items need const and title: %v", one)
			}
		},
	},
}

func schemaProps(t *testing.T, params map[string]any) map[string]any {
	t.Helper()
	schema, _ := params["requestedSchema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	if schema["type"] != "object" || props == nil {
		t.Fatalf("requestedSchema must be an object schema with properties: %v", params["requestedSchema"])
	}
	return props
}

// bothAsks declares every capability a server may ask with: sampling, elicitation and roots.
var bothAsks = map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "roots": map[string]any{}}

func TestB1_B3_LegacyToolsAskTheClientWithServerRequests(t *testing.T) {
	for _, tc := range interactive {
		t.Run(tc.tool, func(t *testing.T) {
			c := open(t, eras[0], bothAsks)
			var got map[string]any
			c.answer = func(m msg) any {
				if m.Method != tc.method {
					t.Errorf("server asked %s, want %s", m.Method, tc.method)
				}
				json.Unmarshal(m.Params, &got)
				return tc.answer
			}
			tr, _ := c.callTool(tc.tool, tc.args, nil)
			if len(c.asked) != 1 {
				t.Fatalf("B1: want one server request during the call, got %d", len(c.asked))
			}
			tc.check(t, got)
			if tr.IsError {
				t.Fatalf("result: %+v", tr)
			}
			for _, w := range tc.want {
				if !strings.Contains(tr.text(), w) {
					t.Errorf("the result must report what the client answered (%q): %q", w, tr.text())
				}
			}
		})
	}
	t.Run("client-error-is-a-tool-error", func(t *testing.T) {
		c := open(t, eras[0], bothAsks)
		var id json.RawMessage
		cid := c.start("tools/call", map[string]any{"name": "test_sampling", "arguments": map[string]any{"prompt": "x"}})
		for id == nil {
			m := c.recv()
			if m.isRequest() {
				id = m.ID
			}
		}
		c.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -1, "message": "User rejected sampling"}})
		r := c.wait(cid)
		var tr toolResult
		json.Unmarshal(r.Result, &tr)
		if r.Error != nil || !tr.IsError || !strings.Contains(tr.text(), "User rejected sampling") {
			t.Errorf("a client that refuses is a tool failure (isError): %s %+v", r.Result, r.Error)
		}
	})
}

// inputRequired is a 2026-07-28 input_required result.
type inputRequired struct {
	ResultType    string              `json:"resultType"`
	InputRequests map[string]question `json:"inputRequests"`
	RequestState  string              `json:"requestState"`
}

// question is one of an input_required result's inputRequests.
type question struct {
	Method string         `json:"method"`
	Params map[string]any `json:"params"`
}

func (c *client) firstRound(tool string, args map[string]any) inputRequired {
	c.t.Helper()
	r := c.call("tools/call", map[string]any{"name": tool, "arguments": args})
	c.decode("tools/call "+tool, r)
	var ir inputRequired
	json.Unmarshal(r.Result, &ir)
	if ir.ResultType != "input_required" || len(ir.InputRequests) != 1 || ir.RequestState == "" {
		c.t.Fatalf("A6: the first round must be input_required with one input request and a requestState: %s", r.Result)
	}
	return ir
}

func TestA6_ModernToolsAnswerInputRequiredThenCompleteOnRetry(t *testing.T) {
	for _, tc := range interactive {
		t.Run(tc.tool, func(t *testing.T) {
			c := open(t, eras[1], bothAsks)
			ir := c.firstRound(tc.tool, tc.args)
			var key string
			for k, req := range ir.InputRequests {
				key = k
				if req.Method != tc.method {
					t.Fatalf("A6: input request method %s, want %s", req.Method, tc.method)
				}
				tc.check(t, req.Params)
			}
			// The retry: a new id, the same arguments, the answers and the state echoed.
			r := c.call("tools/call", map[string]any{
				"name": tc.tool, "arguments": tc.args,
				"inputResponses": map[string]any{key: tc.answer},
				"requestState":   ir.RequestState,
			})
			res := c.decode("tools/call retry", r)
			if res["resultType"] != "complete" {
				t.Fatalf("A6: the retry must complete: %s", r.Result)
			}
			var tr toolResult
			json.Unmarshal(r.Result, &tr)
			for _, w := range tc.want {
				if !strings.Contains(tr.text(), w) {
					t.Errorf("the result must report what the client answered (%q): %q", w, tr.text())
				}
			}
		})
	}
}

func TestA6_ForgedOrMisboundRequestStateIsInvalidParams(t *testing.T) {
	c := open(t, eras[1], bothAsks)
	args := map[string]any{"prompt": "hello"}
	ir := c.firstRound("test_sampling", args)
	answer := map[string]any{"sampling-0": interactive[0].answer}

	body, sig, _ := strings.Cut(ir.RequestState, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(body)
	tampered := bytes.Replace(payload, []byte(`"t":"test_sampling"`), []byte(`"t":"test_elicitation"`), 1)
	cases := map[string]struct {
		tool  string
		args  map[string]any
		state string
	}{
		"garbage":             {"test_sampling", args, "not-a-state"},
		"payload-altered":     {"test_sampling", args, base64.RawURLEncoding.EncodeToString(tampered) + "." + sig},
		"signature-altered":   {"test_sampling", args, body + "." + base64.RawURLEncoding.EncodeToString([]byte("forged-signature-forged-signatur"))},
		"other-arguments":     {"test_sampling", map[string]any{"prompt": "something else"}, ir.RequestState},
		"other-tool":          {"test_elicitation", map[string]any{"message": "hello"}, ir.RequestState},
		"from-another-server": {"test_sampling", args, newServerState(t, args)},
		"not-a-string":        {"test_sampling", args, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			params := map[string]any{"name": tc.tool, "arguments": tc.args, "inputResponses": answer, "requestState": tc.state}
			if name == "not-a-string" {
				params["requestState"] = 42
			}
			r := c.call("tools/call", params)
			if r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("A6: a requestState that fails verification must be rejected with -32602; got %s %+v", r.Result, r.Error)
			}
		})
	}
	// The genuine state still works after all that.
	r := c.call("tools/call", map[string]any{"name": "test_sampling", "arguments": args,
		"inputResponses": answer, "requestState": ir.RequestState})
	if c.decode("retry", r)["resultType"] != "complete" {
		t.Errorf("A6: the genuine retry: %s", r.Result)
	}
}

// newServerState returns a requestState issued by a different server process (another key).
func newServerState(t *testing.T, args map[string]any) string {
	other := open(t, eras[1], bothAsks)
	return other.firstRound("test_sampling", args).RequestState
}

func TestA2_ModernAskWithoutDeclaredCapabilityIsMissingCapability(t *testing.T) {
	c := open(t, eras[1], map[string]any{}) // declares neither sampling nor elicitation
	for _, tc := range interactive {
		r := c.call("tools/call", map[string]any{"name": tc.tool, "arguments": tc.args})
		if r.Error == nil || r.Error.Code != mcp.CodeMissingRequiredClientCapability {
			t.Errorf("A2: %s without the capability: want -32021, got %s %+v", tc.tool, r.Result, r.Error)
			continue
		}
		raw, _ := json.Marshal(r.Error.Data)
		if !strings.Contains(string(raw), "requiredCapabilities") {
			t.Errorf("A2: -32021 carries data.requiredCapabilities: %s", raw)
		}
	}
}

// startWatch runs the watched resource's changer every d until the test ends.
func startWatch(t *testing.T, s *mcp.Server, d time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); watch(ctx, s, d) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func isUpdate(m msg, uri string) bool {
	if m.Method != "notifications/resources/updated" {
		return false
	}
	var p struct {
		URI string `json:"uri"`
	}
	json.Unmarshal(m.Params, &p)
	return p.URI == uri
}

func TestB1_LegacySubscribeWatchedResourceThenUnsubscribe(t *testing.T) {
	s := newServer()
	c := openServer(t, s, eras[0], nil)
	if r := c.call("resources/subscribe", map[string]any{"uri": uriWatched}); string(r.Result) != "{}" {
		t.Fatalf("resources/subscribe: %s %+v", r.Result, r.Error)
	}
	before := watchedRevision.Load()
	stop := startWatch(t, s, 10*time.Millisecond)
	for {
		if m := c.recv(); isUpdate(m, uriWatched) {
			break
		} else if m.Method == "" {
			t.Fatalf("unexpected frame: %+v", m)
		}
	}
	stop()
	r := c.mustResult("resources/read", map[string]any{"uri": uriWatched})
	if raw, _ := json.Marshal(r); watchedRevision.Load() <= before || !strings.Contains(string(raw), fmt.Sprintf("revision %d", watchedRevision.Load())) {
		t.Errorf("the watched resource must show its new revision: %s", raw)
	}

	if r := c.call("resources/unsubscribe", map[string]any{"uri": uriWatched}); string(r.Result) != "{}" {
		t.Fatalf("resources/unsubscribe: %s %+v", r.Result, r.Error)
	}
	time.Sleep(50 * time.Millisecond)
	c.call("ping", nil) // drains updates sent before the unsubscribe took effect
	s.ResourceUpdated(uriWatched)
	time.Sleep(100 * time.Millisecond)
	for _, n := range c.call("ping", nil).notes {
		if isUpdate(n, uriWatched) {
			t.Errorf("an update after unsubscribe: %s", n.Params)
		}
	}
}

func TestA9_ModernListenForWatchedResource(t *testing.T) {
	s := newServer()
	c := openServer(t, s, eras[1], nil)
	id := c.start("subscriptions/listen", map[string]any{"notifications": map[string]any{
		"resourceSubscriptions": []string{uriWatched}}})
	subID := func(m msg) string {
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		json.Unmarshal(m.Params, &p)
		return string(p.Meta["io.modelcontextprotocol/subscriptionId"])
	}
	ack := c.recv()
	if ack.Method != "notifications/subscriptions/acknowledged" || subID(ack) != fmt.Sprint(id) {
		t.Fatalf("A9: the first message must be the acknowledgement with the subscription id: %+v", ack)
	}
	if !strings.Contains(string(ack.Params), uriWatched) {
		t.Errorf("A9: the acknowledgement names the honoured subscriptions: %s", ack.Params)
	}
	startWatch(t, s, 10*time.Millisecond)
	m := c.recv()
	if !isUpdate(m, uriWatched) || subID(m) != fmt.Sprint(id) {
		t.Fatalf("A9: want notifications/resources/updated with the subscription id: %+v", m)
	}
	// A9: on a graceful end the server answers the listen request with a complete result.
	c.conn.CloseInput()
	for {
		m := c.recv()
		if m.Method != "" {
			continue
		}
		if string(m.ID) != fmt.Sprint(id) || m.Error != nil {
			t.Fatalf("A9: the listen request's final answer: %+v", m)
		}
		var res map[string]any
		json.Unmarshal(m.Result, &res)
		if res["resultType"] != "complete" {
			t.Errorf("A9: the listen request ends with a complete result: %s", m.Result)
		}
		break
	}
}

func TestA8_CancelledCallGetsNoResponseAndServerStaysResponsive(t *testing.T) {
	t.Run("modern-during-sleep", func(t *testing.T) {
		c := open(t, eras[1], nil)
		id := c.start("tools/call", map[string]any{"name": "test_reconnection"})
		c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": id, "reason": "test"}})
		if tr, _ := c.callTool("test_simple_text", nil, nil); tr.text() == "" {
			t.Errorf("not responsive after a cancel: %+v", tr)
		}
		expectNoResponse(t, c, id)
	})
	t.Run("legacy-while-the-server-awaits-sampling", func(t *testing.T) {
		c := open(t, eras[0], bothAsks)
		id := c.start("tools/call", map[string]any{"name": "test_sampling", "arguments": map[string]any{"prompt": "x"}})
		asked := c.recv()
		if asked.Method != "sampling/createMessage" {
			t.Fatalf("want the server's sampling request, got %+v", asked)
		}
		c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": id, "reason": "test"}})
		if r := c.call("ping", nil); string(r.Result) != "{}" {
			t.Errorf("ping after a cancel: %+v", r)
		}
		if tr, _ := c.callTool("test_simple_text", nil, nil); tr.text() == "" {
			t.Errorf("not responsive after a cancel: %+v", tr)
		}
		// A late answer to the abandoned sampling request is dropped quietly.
		c.send(map[string]any{"jsonrpc": "2.0", "id": asked.ID, "result": interactive[0].answer})
		expectNoResponse(t, c, id)
	})
}

// expectNoResponse ends the input and checks that nothing the server still writes answers id.
func expectNoResponse(t *testing.T, c *client, id int) {
	t.Helper()
	c.conn.CloseInput()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		f, err := c.conn.Receive(ctx)
		if err != nil {
			return
		}
		var m msg
		json.Unmarshal(f, &m)
		if string(m.ID) == fmt.Sprint(id) {
			t.Errorf("A8: a response for a cancelled request: %s", f)
		}
	}
}
