package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tests against examples/everything: the MCP conformance fixture (CONFORMANCE.md §1) served
// by Relay, driven over 2026-07-28 by the official Go SDK client.

// everything starts examples/everything, or skips the test when it does not build (yet).
func everything(t *testing.T, opts *mcp.ClientOptions, args ...string) *server {
	t.Helper()
	if everythingBin == "" {
		t.Skipf("skipping: examples/everything is not available: %v", everythingErr)
	}
	return start(t, everythingBin, opts, args...)
}

// A4: discovery advertises every feature the fixture implements, and the instructions.
func TestA4_EverythingDiscover(t *testing.T) {
	srv := everything(t, nil)
	res := srv.cs.InitializeResult()
	caps, _ := json.Marshal(res.Capabilities)
	t.Logf("go-sdk v1.8.0 negotiated protocol version %q with %+v, capabilities %s",
		res.ProtocolVersion, res.ServerInfo, caps)
	if res.ProtocolVersion != modernVersion {
		t.Errorf("negotiated %q, want %q", res.ProtocolVersion, modernVersion)
	}
	if res.ServerInfo == nil || res.ServerInfo.Name != "relay-everything" {
		t.Errorf("serverInfo = %+v", res.ServerInfo)
	}
	if res.Instructions == "" {
		t.Error("instructions missing from the discover result")
	}
	c := res.Capabilities
	if c == nil || c.Tools == nil || c.Prompts == nil || c.Resources == nil || c.Completions == nil {
		t.Fatalf("capabilities %s lack tools, prompts, resources or completions", caps)
	}
	if !c.Resources.Subscribe || !c.Resources.ListChanged {
		t.Errorf("resources capability %+v, want subscribe and listChanged", c.Resources)
	}
}

// fixtureTools are the tools CONFORMANCE.md §1 names.
var fixtureTools = []string{
	"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
	"test_multiple_content_types", "test_tool_with_logging", "test_error_handling",
	"test_tool_with_progress", "test_sampling", "test_elicitation",
	"test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums", "json_schema_2020_12_tool",
}

// A14: every fixture tool is listed with a name, a description and an object inputSchema,
// in a deterministic order; json_schema_2020_12_tool keeps its schema as written.
func TestA14_EverythingListTools(t *testing.T) {
	srv := everything(t, nil)
	var names []string
	var schema2020 map[string]any
	for tl, err := range srv.cs.Tools(stepCtx(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
		raw, _ := json.Marshal(tl.InputSchema)
		var s map[string]any
		decode(t, raw, &s)
		if tl.Description == "" || s["type"] != "object" {
			t.Errorf("tool %s: description %q, inputSchema %s", tl.Name, tl.Description, raw)
		}
		if tl.Name == "json_schema_2020_12_tool" {
			schema2020 = s
		}
	}
	for _, want := range fixtureTools {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s; got %v", want, names)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("tools/list order is not deterministic (sorted): %v", names)
	}
	if schema2020 != nil {
		defs, _ := schema2020["$defs"].(map[string]any)
		if schema2020["$schema"] != "https://json-schema.org/draft/2020-12/schema" || defs["address"] == nil ||
			schema2020["additionalProperties"] != false {
			t.Errorf("json_schema_2020_12_tool inputSchema lost $schema, $defs.address or additionalProperties: %v", schema2020)
		}
	}
}

// A14: each content kind of CallToolResult arrives as the SDK's typed content, and a tool
// failure is a result with isError (A11), not a protocol error.
func TestA14_EverythingCallTools(t *testing.T) {
	srv := everything(t, nil)
	call := func(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := srv.cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	t.Run("test_simple_text", func(t *testing.T) {
		res := call(t, "test_simple_text", nil)
		if text := textOf(t, res.Content); text == "" || res.IsError {
			t.Errorf("got %q, isError %v", text, res.IsError)
		}
	})
	t.Run("test_image_content", func(t *testing.T) {
		res := call(t, "test_image_content", nil)
		img, ok := only[*mcp.ImageContent](t, res.Content)
		if !ok {
			return
		}
		if img.MIMEType != "image/png" {
			t.Errorf("mimeType %q", img.MIMEType)
		}
		if cfg, err := png.DecodeConfig(bytes.NewReader(img.Data)); err != nil {
			t.Errorf("the image data (base64 on the wire) is not a PNG: %v", err)
		} else {
			t.Logf("a %dx%d PNG, %d bytes", cfg.Width, cfg.Height, len(img.Data))
		}
	})
	t.Run("test_audio_content", func(t *testing.T) {
		res := call(t, "test_audio_content", nil)
		au, ok := only[*mcp.AudioContent](t, res.Content)
		if !ok {
			return
		}
		if au.MIMEType != "audio/wav" {
			t.Errorf("mimeType %q, want exactly audio/wav", au.MIMEType)
		}
		if len(au.Data) < 44 || string(au.Data[:4]) != "RIFF" || string(au.Data[8:12]) != "WAVE" {
			t.Errorf("the audio data is not a RIFF/WAVE file (%d bytes)", len(au.Data))
		}
	})
	t.Run("test_embedded_resource", func(t *testing.T) {
		res := call(t, "test_embedded_resource", nil)
		er, ok := only[*mcp.EmbeddedResource](t, res.Content)
		if !ok {
			return
		}
		if r := er.Resource; r == nil || r.URI != "test://embedded-resource" || r.MIMEType != "text/plain" || r.Text == "" {
			t.Errorf("embedded resource %+v", er.Resource)
		}
	})
	t.Run("test_multiple_content_types", func(t *testing.T) {
		res := call(t, "test_multiple_content_types", nil)
		kinds := map[string]bool{}
		for _, c := range res.Content {
			switch c.(type) {
			case *mcp.TextContent:
				kinds["text"] = true
			case *mcp.ImageContent:
				kinds["image"] = true
			case *mcp.EmbeddedResource:
				kinds["resource"] = true
			}
		}
		if len(res.Content) < 2 || !kinds["text"] || !kinds["image"] || !kinds["resource"] {
			t.Errorf("want text, image and resource items, got %d items: %v", len(res.Content), kinds)
		}
	})
	t.Run("test_error_handling", func(t *testing.T) {
		res := call(t, "test_error_handling", nil)
		if !res.IsError {
			t.Fatal("isError is not set")
		}
		if len(res.Content) == 0 {
			t.Fatal("no content")
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text == "" {
			t.Errorf("content[0] = %#v, want text saying what failed", res.Content[0])
		}
	})
	t.Run("json_schema_2020_12_tool", func(t *testing.T) {
		// The schema asks for a phone or an email (SEP-2106's allOf/anyOf and if/then/else).
		res := call(t, "json_schema_2020_12_tool", map[string]any{
			"name": "Ada", "email": "ada@example.com", "address": map[string]any{"street": "1 Main St", "city": "Springfield"}})
		if res.IsError || !strings.Contains(textOf(t, res.Content), "Springfield") {
			t.Errorf("valid arguments: %s", textOf(t, res.Content))
		}
		// additionalProperties:false is enforced, as a tool error the model can see (A11).
		res = call(t, "json_schema_2020_12_tool", map[string]any{"name": "Ada", "email": "ada@example.com", "extra": 1})
		if !res.IsError {
			t.Errorf("an argument outside additionalProperties:false was accepted: %s", textOf(t, res.Content))
		}
		// Neither a phone nor an email: anyOf is enforced too.
		if res = call(t, "json_schema_2020_12_tool", map[string]any{"name": "Ada"}); !res.IsError {
			t.Errorf("arguments with neither a phone nor an email were accepted: %s", textOf(t, res.Content))
		}
	})
}

// only returns the single content item of a result as type C.
func only[C mcp.Content](t *testing.T, content []mcp.Content) (C, bool) {
	t.Helper()
	var zero C
	if len(content) != 1 {
		t.Errorf("want one content item, got %d", len(content))
		return zero, false
	}
	c, ok := content[0].(C)
	if !ok {
		t.Errorf("want %T, got %T", zero, content[0])
	}
	return c, ok
}

// A7: test_tool_with_progress reports 0, 50 and 100 of 100, strictly increasing, before
// its response.
func TestA7_EverythingProgress(t *testing.T) {
	rec := newProgressRecorder()
	srv := everything(t, &mcp.ClientOptions{ProgressNotificationHandler: rec.handler})
	p := &mcp.CallToolParams{Name: "test_tool_with_progress"}
	p.SetProgressToken("fixture-progress")
	res, err := srv.cs.CallTool(stepCtx(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("isError: %v", res.Content)
	}
	checkProgressOnWire(t, srv.wire.messages(t), "fixture-progress", 100)
	var got []float64
	for range 100 {
		if ps := rec.get("fixture-progress"); len(ps) >= 3 {
			for _, n := range ps {
				got = append(got, n.Progress)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !slices.Equal(got, []float64{0, 50, 100}) {
		t.Errorf("the SDK handler saw progress %v, want [0 50 100]", got)
	}
}

// A10: under 2026-07-28 log messages are opted into per request with
// _meta io.modelcontextprotocol/logLevel (logging/setLevel is removed, A5): with it,
// test_tool_with_logging sends its three messages during the call; without it, none.
func TestA10_EverythingLogging(t *testing.T) {
	var mu sync.Mutex
	var logs []*mcp.LoggingMessageParams
	srv := everything(t, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
		mu.Lock()
		logs = append(logs, req.Params)
		mu.Unlock()
	}})
	ctx := stepCtx(t)
	if _, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging"}); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "test_tool_with_logging", Meta: mcp.Meta{"io.modelcontextprotocol/logLevel": "debug"}}
	if _, err := srv.cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	// On the wire: none before the response to the first call (made without logLevel, and
	// finished before the second began), three before the response to the second.
	msgs := srv.wire.messages(t)
	calls := slices.DeleteFunc(sent(msgs), func(m wireMsg) bool { return m.Method != "tools/call" })
	if len(calls) != 2 {
		t.Fatalf("%d tools/call sent, want 2", len(calls))
	}
	phase, n := 0, 0
	for _, m := range msgs {
		switch {
		case !m.Sent && m.isResponse() && (string(m.ID) == string(calls[0].ID) || string(m.ID) == string(calls[1].ID)):
			phase++
		case !m.Sent && m.Method == "notifications/message":
			if phase != 1 {
				t.Errorf("a log message outside the second call (A10): %s", m.Raw)
			}
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d log messages on the wire, want 3", n)
	}
	for range 100 {
		mu.Lock()
		k := len(logs)
		mu.Unlock()
		if k >= 3 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 3 {
		t.Fatalf("the SDK handler saw %d log messages, want 3", len(logs))
	}
	for _, l := range logs {
		if l.Level != "info" || l.Data == nil {
			t.Errorf("log message %+v", l)
		}
	}
}

// mrtrRounds checks the multi round-trip on the wire (A6): the first tools/call is answered
// input_required with inputRequests of the given method and a requestState; the SDK re-sends
// it with a new id, the same name and arguments, inputResponses under the same keys and the
// requestState unchanged; that retry is answered complete. The server never sends a
// request of its own (A1). It returns the number of rounds.
func mrtrRounds(t *testing.T, w *wireLog, tool, inputMethod string) int {
	t.Helper()
	type callParams struct {
		Name           string                     `json:"name"`
		Arguments      json.RawMessage            `json:"arguments"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   *string                    `json:"requestState"`
	}
	type inputRequired struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
		RequestState string                     `json:"requestState"`
		TTL          *json.RawMessage           `json:"ttlMs"`
		Meta         map[string]json.RawMessage `json:"_meta"`
	}
	msgs := w.messages(t)
	var calls []wireMsg
	for _, m := range msgs {
		if !m.Sent && m.isRequest() {
			t.Errorf("the server sent a JSON-RPC request (forbidden under 2026-07-28, A1/A6): %s", m.Raw)
		}
		if m.Sent && m.Method == "tools/call" {
			var p callParams
			decode(t, m.Params, &p)
			if p.Name == tool {
				calls = append(calls, m)
			}
		}
	}
	if len(calls) < 2 {
		t.Fatalf("want the original tools/call and at least one retry, got %d calls", len(calls))
	}
	var first callParams
	decode(t, calls[0].Params, &first)
	if first.InputResponses != nil || first.RequestState != nil {
		t.Errorf("the first call already carries inputResponses/requestState: %s", calls[0].Raw)
	}
	ids := map[string]bool{}
	for i, c := range calls {
		if ids[string(c.ID)] {
			t.Errorf("round %d reused JSON-RPC id %s (A6: a retry has a new id)", i, c.ID)
		}
		ids[string(c.ID)] = true
		resp, ok := w.responseTo(t, c.ID)
		if !ok || resp.Error != nil {
			t.Fatalf("round %d was not answered with a result: %+v", i, resp)
		}
		var r inputRequired
		decode(t, resp.Result, &r)
		last := i == len(calls)-1
		if last {
			if r.ResultType != "complete" {
				t.Errorf("the last round's resultType = %q, want complete", r.ResultType)
			}
			break
		}
		if r.ResultType != "input_required" || len(r.InputRequests) == 0 || r.RequestState == "" {
			t.Fatalf("round %d: want input_required with inputRequests and requestState, got %s", i, resp.Result)
		}
		if r.TTL != nil {
			t.Errorf("an input_required result carries ttlMs (A4: never): %s", resp.Result)
		}
		if r.Meta["io.modelcontextprotocol/serverInfo"] == nil {
			t.Errorf("input_required result lacks _meta serverInfo (A2): %s", resp.Result)
		}
		var next callParams
		decode(t, calls[i+1].Params, &next)
		for key, ir := range r.InputRequests {
			if ir.Method != inputMethod {
				t.Errorf("inputRequests[%s].method = %q, want %q", key, ir.Method, inputMethod)
			}
			if next.InputResponses[key] == nil {
				t.Errorf("the retry lacks inputResponses[%s]: %s", key, calls[i+1].Raw)
			}
		}
		if next.RequestState == nil || *next.RequestState != r.RequestState {
			t.Errorf("the retry did not echo requestState unchanged")
		}
		if next.Name != first.Name || !jsonEqual(next.Arguments, first.Arguments) {
			t.Errorf("the retry changed the name or arguments: %s", calls[i+1].Raw)
		}
	}
	return len(calls)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// A6: test_sampling under 2026-07-28. Relay answers input_required with a
// sampling/createMessage input request; the SDK's MRTR middleware runs the client's
// CreateMessageHandler and retries with inputResponses and requestState; the tool then
// completes with the model's answer.
func TestA6_EverythingSampling(t *testing.T) {
	var mu sync.Mutex
	var asked []*mcp.CreateMessageParams
	srv := everything(t, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			mu.Unlock()
			return &mcp.CreateMessageResult{
				Role: "assistant", Model: "interop-model", StopReason: "endTurn",
				Content: &mcp.TextContent{Text: "four, said the model"},
			}, nil
		},
	})
	res, err := srv.cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "test_sampling",
		Arguments: map[string]any{"prompt": "What is 2+2?"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(textOf(t, res.Content), "four, said the model") {
		t.Errorf("result %+v does not carry the model's answer", res.Content)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("CreateMessageHandler ran %d times, want 1", len(asked))
	}
	if len(asked[0].Messages) != 1 || asked[0].Messages[0].Role != "user" || asked[0].MaxTokens <= 0 {
		t.Errorf("sampling request %+v", asked[0])
	} else if tc, ok := asked[0].Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "What is 2+2?" {
		t.Errorf("sampling message content %#v, want the prompt", asked[0].Messages[0].Content)
	}
	if n := mrtrRounds(t, srv.wire, "test_sampling", "sampling/createMessage"); n != 2 {
		t.Errorf("%d rounds, want 2", n)
	}
}

// A6: test_elicitation under 2026-07-28, through the client's ElicitationHandler: accepted,
// and declined.
func TestA6_EverythingElicitation(t *testing.T) {
	var mu sync.Mutex
	var asked []*mcp.ElicitParams
	action := "accept"
	srv := everything(t, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params)
			if action != "accept" {
				return &mcp.ElicitResult{Action: action}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{
				"username": "ada", "email": "ada@example.com"}}, nil
		},
	})
	res, err := srv.cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "test_elicitation",
		Arguments: map[string]any{"message": "Who are you?"}})
	if err != nil {
		t.Fatal(err)
	}
	text := textOf(t, res.Content)
	if res.IsError || !strings.Contains(text, "accept") || !strings.Contains(text, "ada@example.com") {
		t.Errorf("result %q does not carry the user's answer", text)
	}
	mrtrRounds(t, srv.wire, "test_elicitation", "elicitation/create")
	mu.Lock()
	if len(asked) != 1 || asked[0].Message != "Who are you?" {
		t.Fatalf("elicitation requests %+v", asked)
	}
	schema, _ := json.Marshal(asked[0].RequestedSchema)
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	decode(t, schema, &s)
	if s.Properties["username"] == nil || s.Properties["email"] == nil || !slices.Contains(s.Required, "email") {
		t.Errorf("requestedSchema %s, want username and email", schema)
	}
	action = "decline"
	mu.Unlock()

	res, err = srv.cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "test_elicitation",
		Arguments: map[string]any{"message": "Who are you, again?"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := textOf(t, res.Content); !strings.Contains(text, "decline") {
		t.Errorf("declined elicitation: %q", text)
	}
}

// A6: the SEP-1034 and SEP-1330 elicitation schemas reach the SDK's handler intact (the
// SDK validates them before calling it), and the answers come back.
func TestA6_EverythingElicitationSchemas(t *testing.T) {
	var mu sync.Mutex
	schemas := map[string]map[string]any{}
	srv := everything(t, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			raw, _ := json.Marshal(req.Params.RequestedSchema)
			var s struct {
				Properties map[string]map[string]any `json:"properties"`
			}
			json.Unmarshal(raw, &s)
			mu.Lock()
			defer mu.Unlock()
			if _, ok := s.Properties["untitledSingle"]; ok {
				schemas["enums"] = map[string]any{"raw": string(raw)}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{
					"untitledSingle": "option2", "titledSingle": "value1", "legacyEnum": "opt3",
					"untitledMulti": []any{"option1", "option3"}, "titledMulti": []any{"value2"},
				}}, nil
			}
			schemas["defaults"] = map[string]any{}
			for k, v := range s.Properties {
				schemas["defaults"][k] = v["default"]
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{
				"name": "Grace", "age": 85, "score": 99.5, "status": "pending", "verified": false}}, nil
		},
	})
	ctx := stepCtx(t)
	res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation_sep1034_defaults"})
	if err != nil {
		t.Fatal(err)
	}
	if text := textOf(t, res.Content); res.IsError || !strings.Contains(text, "Grace") {
		t.Errorf("defaults tool result %q", text)
	}
	res, err = srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation_sep1330_enums"})
	if err != nil {
		t.Fatal(err)
	}
	if text := textOf(t, res.Content); res.IsError || !strings.Contains(text, "option3") || !strings.Contains(text, "value2") {
		t.Errorf("enums tool result %q", text)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]any{"name": "John Doe", "age": 30.0, "score": 95.5, "status": "active", "verified": true}
	for k, v := range want {
		if schemas["defaults"][k] != v {
			t.Errorf("default of %s = %#v, want %#v", k, schemas["defaults"][k], v)
		}
	}
	raw, _ := schemas["enums"]["raw"].(string)
	for _, frag := range []string{`"enumNames"`, `"oneOf"`, `"anyOf"`, `"First Option"`} {
		if !strings.Contains(raw, frag) {
			t.Errorf("enums schema lost %s: %s", frag, raw)
		}
	}
}

// A2: a client that does not declare elicitation gets -32021 with
// data.requiredCapabilities, not an input_required it cannot answer.
func TestA2_EverythingMissingCapability(t *testing.T) {
	srv := everything(t, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	ctx := stepCtx(t)
	for _, c := range []struct {
		tool, capability string
		args             map[string]any
	}{
		{"test_elicitation", "elicitation", map[string]any{"message": "m"}},
		{"test_sampling", "sampling", map[string]any{"prompt": "p"}},
	} {
		tool, capability := c.tool, c.capability
		_, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: c.args})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != -32021 {
			t.Errorf("%s without the %s capability: err = %v, want -32021", tool, capability, err)
			continue
		}
		var data struct {
			RequiredCapabilities map[string]any `json:"requiredCapabilities"`
		}
		decode(t, werr.Data, &data)
		if data.RequiredCapabilities[capability] == nil {
			t.Errorf("%s: data %s does not name %s", tool, werr.Data, capability)
		}
	}
}

// A2, A3: capabilities count only as the request itself declares them. A client that
// declared elicitation at discovery, but sends a request whose _meta declares none, gets
// -32021 for that request, and input_required for the next one that declares it again.
func TestA3_EverythingCapabilitiesArePerRequest(t *testing.T) {
	srv := everything(t, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	ctx := stepCtx(t)
	_, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "m"},
		Meta: mcp.Meta{"io.modelcontextprotocol/clientCapabilities": map[string]any{}}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32021 {
		t.Errorf("a request declaring no capabilities: %v, want -32021", err)
	}
	res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "m"}})
	if err != nil || !strings.Contains(textOf(t, res.Content), "decline") {
		t.Errorf("the next request, declaring elicitation: %+v %v", res, err)
	}
}

// A6: driven by hand (the SDK's MRTR middleware disabled): the SDK surfaces input_required
// as NeedsInput; a retry with the state intact completes; a tampered requestState, or
// one replayed for other arguments, is refused with -32602 (the state is attacker-controlled
// input, so Relay signs and binds it).
func TestA6_EverythingManualRetryAndTamperedState(t *testing.T) {
	srv := everything(t, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// Declares elicitation; never called, since the middleware is off.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not used")
		},
	})
	ctx := stepCtx(t)
	args := map[string]any{"message": "by hand"}
	res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("want input_required with one input request, got %+v", res)
	}
	var key string
	for k, ir := range res.InputRequests {
		key = k
		if ep, ok := ir.(*mcp.ElicitParams); !ok || ep.Message != "by hand" {
			t.Errorf("input request %s = %#v", k, ir)
		}
	}
	answer := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept",
		Content: map[string]any{"username": "bob", "email": "bob@example.com"}}}

	// Tampered: one character of the signed state changed.
	bad := []byte(res.RequestState)
	bad[len(bad)/2] ^= 1
	_, err = srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: args,
		InputResponses: answer, RequestState: string(bad)})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32602 {
		t.Errorf("tampered requestState: err = %v, want -32602", err)
	}
	// Replayed for other arguments.
	_, err = srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation",
		Arguments: map[string]any{"message": "something else"}, InputResponses: answer, RequestState: res.RequestState})
	if !errors.As(err, &werr) || werr.Code != -32602 {
		t.Errorf("requestState replayed for other arguments: err = %v, want -32602", err)
	}
	// The honest retry.
	res, err = srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: args,
		InputResponses: answer, RequestState: res.RequestState})
	if err != nil {
		t.Fatal(err)
	}
	if res.NeedsInput() || !strings.Contains(textOf(t, res.Content), "bob@example.com") {
		t.Errorf("the retry did not complete with the answer: %+v", res)
	}
}

// A4: resources/list, resources/read (text and blob) and the template, with the cacheable
// fields on every complete result.
func TestA4_EverythingResources(t *testing.T) {
	srv := everything(t, nil)
	ctx := stepCtx(t)
	lr, err := srv.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byURI := map[string]*mcp.Resource{}
	for _, r := range lr.Resources {
		if r.URI == "" || r.Name == "" {
			t.Errorf("resource without uri or name: %+v", r)
		}
		byURI[r.URI] = r
	}
	for _, uri := range []string{"test://static-text", "test://static-binary", "test://watched-resource"} {
		if byURI[uri] == nil {
			t.Errorf("resources/list lacks %s", uri)
		}
	}

	rr, err := srv.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].Text == "" || rr.Contents[0].MIMEType != "text/plain" || rr.Contents[0].Blob != nil {
		t.Errorf("static-text contents %+v", rr.Contents)
	}
	rr, err = srv.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-binary"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].MIMEType == "" || rr.Contents[0].Text != "" {
		t.Fatalf("static-binary contents %+v", rr.Contents)
	}
	if _, err := png.DecodeConfig(bytes.NewReader(rr.Contents[0].Blob)); err != nil {
		t.Errorf("the blob (base64 on the wire) is not the PNG it claims to be: %v", err)
	}

	lt, err := srv.cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(lt.ResourceTemplates, func(rt *mcp.ResourceTemplate) bool {
		return rt.URITemplate == "test://template/{id}/data" && rt.Name != ""
	}) {
		t.Errorf("resources/templates/list lacks test://template/{id}/data: %+v", lt.ResourceTemplates)
	}
	rr, err = srv.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/123/data"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].URI != "test://template/123/data" || !strings.Contains(rr.Contents[0].Text, "123") {
		t.Errorf("template read contents %+v", rr.Contents)
	}

	for _, method := range []string{"resources/list", "resources/templates/list", "resources/read"} {
		for _, m := range srv.wire.messages(t) {
			if !m.Sent || m.Method != method {
				continue
			}
			resp, _ := srv.wire.responseTo(t, m.ID)
			var r map[string]json.RawMessage
			decode(t, resp.Result, &r)
			if r["ttlMs"] == nil || r["cacheScope"] == nil || string(r["resultType"]) != `"complete"` {
				t.Errorf("%s result lacks resultType/ttlMs/cacheScope (A4): %.200s", method, resp.Result)
			}
		}
	}
}

// A11: an unknown resource is -32602 under 2026-07-28 (never the old -32002), and so is an
// unknown prompt or a missing required prompt argument.
func TestA11_EverythingNotFound(t *testing.T) {
	srv := everything(t, nil)
	ctx := stepCtx(t)
	var werr *jsonrpc.Error
	_, err := srv.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://no-such-thing"})
	if !errors.As(err, &werr) || werr.Code != -32602 {
		t.Errorf("unknown resource: %v, want -32602", err)
	}
	_, err = srv.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "no_such_prompt"})
	if !errors.As(err, &werr) || werr.Code != -32602 {
		t.Errorf("unknown prompt: %v, want -32602", err)
	}
	_, err = srv.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments",
		Arguments: map[string]string{"arg1": "only one"}})
	if !errors.As(err, &werr) || werr.Code != -32602 {
		t.Errorf("missing required argument: %v, want -32602", err)
	}
}

// A4: prompts/list and prompts/get, without and with arguments, with an embedded resource
// and with an image.
func TestA4_EverythingPrompts(t *testing.T) {
	srv := everything(t, nil)
	ctx := stepCtx(t)
	lp, err := srv.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Prompt{}
	for _, p := range lp.Prompts {
		if p.Name == "" || p.Description == "" {
			t.Errorf("prompt without name or description: %+v", p)
		}
		byName[p.Name] = p
	}
	if byName["test_simple_prompt"] == nil {
		t.Error("prompts/list lacks test_simple_prompt")
	}
	if p := byName["test_prompt_with_arguments"]; p == nil {
		t.Error("prompts/list lacks test_prompt_with_arguments")
	} else {
		var args []string
		for _, a := range p.Arguments {
			args = append(args, a.Name)
			if !a.Required {
				t.Errorf("argument %s should be required", a.Name)
			}
		}
		if !slices.Equal(args, []string{"arg1", "arg2"}) {
			t.Errorf("test_prompt_with_arguments arguments %v", args)
		}
	}

	gp, err := srv.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_simple_prompt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(gp.Messages) == 0 || gp.Messages[0].Role == "" || gp.Messages[0].Content == nil {
		t.Errorf("test_simple_prompt messages %+v", gp.Messages)
	}

	awkward := "value with 'quotes', \"double\", ünïcödé and a\nnewline"
	gp, err = srv.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments",
		Arguments: map[string]string{"arg1": "first-value", "arg2": awkward}})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, m := range gp.Messages {
		if tc, ok := m.Content.(*mcp.TextContent); ok {
			all.WriteString(tc.Text)
		}
	}
	if !strings.Contains(all.String(), "first-value") || !strings.Contains(all.String(), awkward) {
		t.Errorf("the argument values are not in the messages: %q", all.String())
	}

	gp, err = srv.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_embedded_resource",
		Arguments: map[string]string{"resourceUri": "test://static-text"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(gp.Messages, func(m *mcp.PromptMessage) bool {
		er, ok := m.Content.(*mcp.EmbeddedResource)
		return ok && er.Resource != nil && er.Resource.URI == "test://static-text"
	}) {
		t.Errorf("no embedded resource message: %+v", gp.Messages)
	}

	gp, err = srv.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_image"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(gp.Messages, func(m *mcp.PromptMessage) bool {
		img, ok := m.Content.(*mcp.ImageContent)
		return ok && img.MIMEType == "image/png" && len(img.Data) > 0
	}) {
		t.Errorf("no image message: %+v", gp.Messages)
	}
}

// A4: completion/complete for arg1 of test_prompt_with_arguments (and the template's id).
func TestA4_EverythingComplete(t *testing.T) {
	srv := everything(t, nil)
	ctx := stepCtx(t)
	res, err := srv.cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Completion.Values) == 0 {
		t.Fatalf("no completion values: %+v", res.Completion)
	}
	all := res.Completion.Values
	res, err = srv.cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: all[0][:1]},
		Context:  &mcp.CompleteContext{Arguments: map[string]string{"arg2": "x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Completion.Values {
		if !strings.HasPrefix(v, all[0][:1]) {
			t.Errorf("completion %q does not start with %q", v, all[0][:1])
		}
	}
	res, err = srv.cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "test://template/{id}/data"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Completion.Values, "123") {
		t.Errorf("template id completions %v", res.Completion.Values)
	}
}

// A9: ClientSession.Subscribe under 2026-07-28 opens subscriptions/listen with
// resourceSubscriptions; Relay acknowledges, then delivers notifications/resources/updated
// for test://watched-resource tagged with the subscription id; Unsubscribe cancels the
// listen, after which Relay sends nothing more for it and never answers it (A8).
func TestA9_EverythingResourceSubscription(t *testing.T) {
	updates := make(chan string, 64)
	srv := everything(t, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updates <- req.Params.URI:
			default:
			}
		},
	}, "-watch", "100ms")
	ctx := stepCtx(t)
	if err := srv.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updates:
		if uri != "test://watched-resource" {
			t.Errorf("update for %q", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no notifications/resources/updated; wire:\n%s", srv.wire.summary())
	}
	listen, ok := srv.wire.request(t, "subscriptions/listen", nil)
	if !ok {
		t.Fatal("no subscriptions/listen on the wire")
	}
	var ackSeen bool
	for _, m := range srv.wire.messages(t) {
		if m.Sent || !m.isNotification() {
			continue
		}
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		decode(t, m.Params, &p)
		switch m.Method {
		case "notifications/subscriptions/acknowledged":
			ackSeen = true
		case "notifications/resources/updated":
			if !ackSeen {
				t.Errorf("an update before the acknowledgement (A9): %s", m.Raw)
			}
		default:
			continue
		}
		if string(p.Meta["io.modelcontextprotocol/subscriptionId"]) != string(listen.ID) {
			t.Errorf("%s without the subscription id %s (A2, A9): %s", m.Method, listen.ID, m.Raw)
		}
	}

	if err := srv.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	srv.wire.waitFor(t, 5*time.Second, "notifications/cancelled for the listen", func(ms []wireMsg) bool {
		return slices.ContainsFunc(ms, func(m wireMsg) bool {
			return m.Sent && m.Method == "notifications/cancelled" && strings.Contains(string(m.Params), string(listen.ID))
		})
	})
	// A round trip, then a few watch intervals: nothing more for the cancelled listen.
	if _, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
		t.Fatal(err)
	}
	before := len(srv.wire.messages(t))
	time.Sleep(500 * time.Millisecond)
	for _, m := range srv.wire.messages(t)[before:] {
		if !m.Sent {
			t.Errorf("the server sent %s after the listen was cancelled and a round trip was made", m.Raw)
		}
	}
	if resp, ok := srv.wire.responseTo(t, listen.ID); ok {
		t.Errorf("the cancelled listen was answered (A8): %s", resp.Raw)
	}
}

// A3, A6: many goroutines at once on one connection, each running multi round-trip calls
// whose answers depend on the question (so crossed rounds would show), progress calls,
// template reads and prompts. Every round is its own stateless request; nothing is mixed up.
func TestA3_EverythingConcurrentMixed(t *testing.T) {
	rec := newProgressRecorder()
	srv := everything(t, &mcp.ClientOptions{
		ProgressNotificationHandler: rec.handler,
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			prompt := ""
			if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
				prompt = tc.Text
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "re:" + prompt}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{
				"username": "u-" + req.Params.Message, "email": req.Params.Message + "@example.com"}}, nil
		},
	})
	const goroutines, rounds = 24, 5
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*rounds*5)
	check := func(what, got, want string, err error) {
		if err != nil {
			errs <- fmt.Errorf("%s: %w", what, err)
		} else if !strings.Contains(got, want) {
			errs <- fmt.Errorf("%s: got %q, want it to contain %q", what, got, want)
		}
	}
	text := func(res *mcp.CallToolResult, err error) (string, error) {
		if err != nil {
			return "", err
		}
		return onlyText(res.Content)
	}
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				id := fmt.Sprintf("g%d-r%d", g, r)
				got, err := text(srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling",
					Arguments: map[string]any{"prompt": "prompt " + id}}))
				check(id+" sampling", got, "re:prompt "+id, err)

				got, err = text(srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation",
					Arguments: map[string]any{"message": id}}))
				check(id+" elicitation", got, id+"@example.com", err)

				p := &mcp.CallToolParams{Name: "test_tool_with_progress"}
				p.SetProgressToken(id)
				got, err = text(srv.cs.CallTool(ctx, p))
				check(id+" progress", got, "", err)

				rr, err := srv.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: fmt.Sprintf("test://template/%d%d/data", g, r)})
				if err == nil && len(rr.Contents) == 1 {
					got = rr.Contents[0].Text
				}
				check(id+" template", got, fmt.Sprintf("Data for ID: %d%d", g, r), err)

				gp, err := srv.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments",
					Arguments: map[string]string{"arg1": id, "arg2": "b"}})
				got = ""
				if err == nil && len(gp.Messages) > 0 {
					if tc, ok := gp.Messages[0].Content.(*mcp.TextContent); ok {
						got = tc.Text
					}
				}
				check(id+" prompt", got, "arg1='"+id+"'", err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	msgs := srv.wire.messages(t)
	for g := range goroutines {
		for r := range rounds {
			var vals []float64
			for _, m := range msgs {
				if m.Method != "notifications/progress" {
					continue
				}
				var p struct {
					ProgressToken any     `json:"progressToken"`
					Progress      float64 `json:"progress"`
				}
				decode(t, m.Params, &p)
				if p.ProgressToken == fmt.Sprintf("g%d-r%d", g, r) {
					vals = append(vals, p.Progress)
				}
			}
			if !slices.Equal(vals, []float64{0, 50, 100}) {
				t.Errorf("g%d-r%d progress %v, want [0 50 100]", g, r, vals)
			}
		}
	}
}
