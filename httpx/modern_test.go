package httpx_test

// MCP 2026-07-28 over Streamable HTTP: DIGEST A1, A2, A4, A5, A6, A8, A11, A13, §F3.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

func TestA13_DiscoverToolsListToolsCall_JSON200(t *testing.T) {
	f := newFixture(t, nil)
	cases := []struct {
		rule   string
		method string
		params map[string]any
		check  func(t *testing.T, result map[string]json.RawMessage)
	}{
		{"A4 server/discover names the versions and capabilities, cacheable", "server/discover", nil,
			func(t *testing.T, res map[string]json.RawMessage) {
				var versions []string
				json.Unmarshal(res["supportedVersions"], &versions)
				if !slices.Contains(versions, modernVersion) {
					t.Errorf("supportedVersions = %s", res["supportedVersions"])
				}
				if jsonField(res["capabilities"], "tools") == nil {
					t.Errorf("capabilities lack tools: %s", res["capabilities"])
				}
				if res["ttlMs"] == nil || res["cacheScope"] == nil {
					t.Errorf("discover lacks ttlMs/cacheScope")
				}
			}},
		{"A14 tools/list lists the tools, cacheable", "tools/list", nil,
			func(t *testing.T, res map[string]json.RawMessage) {
				var tools []struct{ Name string }
				json.Unmarshal(res["tools"], &tools)
				if !slices.ContainsFunc(tools, func(x struct{ Name string }) bool { return x.Name == "echo" }) {
					t.Errorf("tools = %s", res["tools"])
				}
				if res["ttlMs"] == nil || res["cacheScope"] == nil {
					t.Errorf("tools/list lacks ttlMs/cacheScope")
				}
			}},
		{"A14 tools/call answers the tool's result", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}},
			func(t *testing.T, res map[string]json.RawMessage) {
				if !strings.Contains(string(res["content"]), `"text":"hi"`) {
					t.Errorf("content = %s", res["content"])
				}
			}},
	}
	for i, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			body, hdr := modernCall(i+1, tc.method, tc.params)
			r := f.post(body, hdr...)
			if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
				t.Fatalf("got %s, want 200 application/json", r)
			}
			noSessionID(t, r)
			m := r.rpc(t)
			if string(m.ID) != fmt.Sprint(i+1) || m.Error != nil {
				t.Fatalf("answer %s", r.body)
			}
			var res map[string]json.RawMessage
			json.Unmarshal(m.Result, &res)
			if string(res["resultType"]) != `"complete"` {
				t.Errorf("A1 resultType = %s, want complete", res["resultType"])
			}
			if jsonField(res["_meta"], "io.modelcontextprotocol/serverInfo") == nil {
				t.Errorf("A2 result _meta lacks serverInfo: %s", m.Result)
			}
			tc.check(t, res)
		})
	}
}

func jsonField(obj json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	return m[key]
}

func b64(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }

// TestA13_StatusAndErrorTable is one POST per row: the HTTP status and JSON-RPC code the
// digest gives for each kind of request.
func TestA13_StatusAndErrorTable(t *testing.T) {
	f := newFixture(t, nil)

	echo := map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}
	list, listHdr := modernCall(1, "tools/list", nil)
	call, callHdr := modernCall(2, "tools/call", echo)
	prompt, promptHdr := modernCall(3, "prompts/get", map[string]any{"name": "greet"})
	read, readHdr := modernCall(4, "resources/read", map[string]any{"uri": "mem://notes/one"})
	noMeta := message(5, "tools/list", map[string]any{})
	badVersion, _ := modernCall(6, "tools/list", map[string]any{"_meta": meta(mcp.MetaProtocolVersion, "2099-01-01")})
	unknown, unknownHdr := modernCall(7, "tools/frobnicate", nil)
	initialize, initHdr := modernCall(8, "initialize", map[string]any{"protocolVersion": modernVersion, "capabilities": map[string]any{}})
	ask, askHdr := modernCall(9, "tools/call", map[string]any{"name": "ask"})
	askWithCap, _ := modernCall(10, "tools/call", map[string]any{"name": "ask",
		"_meta": meta(mcp.MetaClientCapabilities, map[string]any{"elicitation": map[string]any{}})})
	panics, panicHdr := modernCall(11, "tools/call", map[string]any{"name": "panic"})
	noTool, noToolHdr := modernCall(12, "tools/call", map[string]any{"name": "nope"})
	notification := message(nil, "notifications/cancelled", map[string]any{"requestId": 99})
	response := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)

	cases := []struct {
		rule   string
		body   []byte
		hdr    []string
		status int
		code   int  // 0: a result (or no body)
		id     bool // the error echoes the request's id
		empty  bool // no body at all
		check  func(t *testing.T, m rpcMsg)
	}{
		{rule: "A13 a well-formed request → 200", body: list, hdr: listHdr, status: 200, id: true},
		{rule: "A2 missing _meta → 400 -32602", body: noMeta, hdr: []string{"MCP-Protocol-Version", modernVersion, "Mcp-Method", "tools/list"},
			status: 400, code: -32602, id: true},
		{rule: "A13 MCP-Protocol-Version missing → 400 -32020", body: list, hdr: with(listHdr, "MCP-Protocol-Version", ""),
			status: 400, code: -32020, id: true},
		{rule: "A13 MCP-Protocol-Version (2099-01-01) differs from _meta → 400 -32020", body: list,
			hdr: with(listHdr, "MCP-Protocol-Version", "2099-01-01"), status: 400, code: -32020, id: true},
		{rule: "A13 MCP-Protocol-Version (a legacy 2025-11-25) differs from _meta 2026-07-28 → 400 -32020", body: list,
			hdr: with(listHdr, "MCP-Protocol-Version", legacyVersion), status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Method missing → 400 -32020", body: list, hdr: with(listHdr, "Mcp-Method", ""), status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Method differs from the body → 400 -32020", body: list, hdr: with(listHdr, "Mcp-Method", "tools/call"),
			status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Name missing for tools/call → 400 -32020", body: call, hdr: with(callHdr, "Mcp-Name", ""), status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Name differs for tools/call → 400 -32020", body: call, hdr: with(callHdr, "Mcp-Name", "whoami"), status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Name in the base64 form decoding to the tool name → 200", body: call, hdr: with(callHdr, "Mcp-Name", b64("echo")), status: 200},
		{rule: "A13 Mcp-Name in the base64 form decoding to another name → 400 -32020", body: call, hdr: with(callHdr, "Mcp-Name", b64("whoami")),
			status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Name with a broken base64 form → 400 -32020", body: call, hdr: with(callHdr, "Mcp-Name", "=?base64?***?="),
			status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Name with uppercase base64 markers is not the base64 form → 400 -32020", body: call,
			hdr: with(callHdr, "Mcp-Name", strings.ToUpper("=?BASE64?")+base64.StdEncoding.EncodeToString([]byte("echo"))+"?="), status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Name for prompts/get → 200", body: prompt, hdr: promptHdr, status: 200},
		{rule: "A13 Mcp-Name missing for prompts/get → 400 -32020", body: prompt, hdr: with(promptHdr, "Mcp-Name", ""), status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Name differs for prompts/get → 400 -32020", body: prompt, hdr: with(promptHdr, "Mcp-Name", "other"), status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Name base64 for prompts/get → 200", body: prompt, hdr: with(promptHdr, "Mcp-Name", b64("greet")), status: 200},
		{rule: "A13 Mcp-Name (the uri) for resources/read → 200", body: read, hdr: readHdr, status: 200},
		{rule: "A13 Mcp-Name missing for resources/read → 400 -32020", body: read, hdr: with(readHdr, "Mcp-Name", ""), status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Name differs for resources/read → 400 -32020", body: read, hdr: with(readHdr, "Mcp-Name", "mem://notes/two"),
			status: 400, code: -32020, id: true},
		{rule: "A13 Mcp-Name base64 for resources/read → 200", body: read, hdr: with(readHdr, "Mcp-Name", b64("mem://notes/one")), status: 200},
		{rule: "A4 unsupported version (header and _meta 2099-01-01) → 400 -32022 naming the supported ones",
			body: badVersion, hdr: with(listHdr, "MCP-Protocol-Version", "2099-01-01"), status: 400, code: -32022, id: true,
			check: func(t *testing.T, m rpcMsg) {
				var data struct {
					Supported []string `json:"supported"`
					Requested string   `json:"requested"`
				}
				json.Unmarshal(m.Error.Data, &data)
				if !slices.Contains(data.Supported, modernVersion) || data.Requested != "2099-01-01" {
					t.Errorf("data = %s", m.Error.Data)
				}
			}},
		{rule: "A11 unknown method → 404 with a JSON-RPC body (-32601)", body: unknown, hdr: unknownHdr, status: 404, code: -32601, id: true},
		{rule: "A5 initialize under 2026-07-28 → 404 -32601", body: initialize, hdr: initHdr, status: 404, code: -32601, id: true},
		{rule: "A11 invalid JSON → 400 -32700", body: []byte(`{"jsonrpc":"2.0","id":1,"method":`), hdr: listHdr, status: 400, code: -32700},
		{rule: "A1 a JSON array (batch) → 400 -32600", body: []byte(`[` + string(list) + `]`), hdr: listHdr, status: 400, code: -32600},
		{rule: "A1/A11 a malformed JSON array is a parse error → 400 -32700", body: []byte(`[{"jsonrpc":"2.0","id":1,"method":`), hdr: listHdr,
			status: 400, code: -32700},
		{rule: "A1 a JSON-RPC response from the client → 400 -32600", body: response, hdr: []string{"MCP-Protocol-Version", modernVersion},
			status: 400, code: -32600},
		{rule: "A13 a notification → 202 with an empty body", body: notification,
			hdr: []string{"MCP-Protocol-Version", modernVersion, "Mcp-Method", "notifications/cancelled"}, status: 202, empty: true},
		{rule: "A2 a missing client capability → 400 -32021 with requiredCapabilities", body: ask, hdr: askHdr, status: 400, code: -32021, id: true,
			check: func(t *testing.T, m rpcMsg) {
				if jsonField(jsonField(m.Error.Data, "requiredCapabilities"), "elicitation") == nil {
					t.Errorf("data = %s", m.Error.Data)
				}
			}},
		{rule: "A6 a declared capability: Elicit answers input_required (no server-to-client request)", body: askWithCap, hdr: askHdr, status: 200,
			check: func(t *testing.T, m rpcMsg) {
				if string(jsonField(m.Result, "resultType")) != `"input_required"` || jsonField(m.Result, "inputRequests") == nil ||
					jsonField(m.Result, "requestState") == nil {
					t.Errorf("result = %s", m.Result)
				}
			}},
		{rule: "F3 a handler panic → 500 -32603", body: panics, hdr: panicHdr, status: 500, code: -32603, id: true},
		{rule: "A14 an unknown tool → 400 -32602", body: noTool, hdr: noToolHdr, status: 400, code: -32602, id: true},
		{rule: "A13 Mcp-Session-Id on a 2026-07-28 request is ignored → 200", body: list, hdr: with(listHdr, "Mcp-Session-Id", "stale-session"),
			status: 200},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			r := f.post(tc.body, tc.hdr...)
			noSessionID(t, r)
			if r.status != tc.status {
				t.Fatalf("got %s, want status %d", r, tc.status)
			}
			if tc.empty {
				if len(r.body) != 0 {
					t.Fatalf("want an empty body, got %q", r.body)
				}
				return
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			m := r.rpc(t)
			if m.JSONRPC != "2.0" {
				t.Errorf("jsonrpc = %q", m.JSONRPC)
			}
			if m.code() != tc.code {
				t.Fatalf("code %d, want %d: %s", m.code(), tc.code, r.body)
			}
			if tc.code != 0 && tc.id {
				var sent struct{ ID json.RawMessage }
				json.Unmarshal(tc.body, &sent)
				if string(m.ID) != string(sent.ID) {
					t.Errorf("the error's id is %s, want the request's %s", m.ID, sent.ID)
				}
			}
			if m.Error != nil && m.Error.Message == "" {
				t.Errorf("A1 the error has no message")
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
	if n := f.h.Sessions(); n != 0 {
		t.Errorf("A3 2026-07-28 requests opened %d sessions", n)
	}
}

func TestA13_GetAndDeleteWithoutSession_405(t *testing.T) {
	f := newFixture(t, nil)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		r := f.do(f.request(context.Background(), method, nil, "MCP-Protocol-Version", modernVersion))
		if r.status != http.StatusMethodNotAllowed {
			t.Errorf("%s: got %s, want 405", method, r)
		}
		if !strings.Contains(r.header.Get("Allow"), "POST") {
			t.Errorf("%s: Allow = %q", method, r.header.Get("Allow"))
		}
		noSessionID(t, r)
	}
	// A GET asking for an SSE stream, with a Last-Event-ID, gets the same 405 (A5: no GET stream,
	// no resumption).
	r := f.do(f.request(context.Background(), http.MethodGet, nil, "Accept", "text/event-stream", "Last-Event-ID", "7"))
	if r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET text/event-stream: got %s, want 405", r)
	}
}

func TestA13_ProgressSwitchesTheAnswerToSSE(t *testing.T) {
	f := newFixture(t, nil)
	body, hdr := modernCall(1, "tools/call", map[string]any{"name": "progress", "arguments": map[string]any{"steps": 3},
		"_meta": meta("progressToken", "tok-1")})
	resp, err := f.c.Do(f.request(context.Background(), http.MethodPost, body, hdr...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %q, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Errorf("X-Accel-Buffering = %q, want no", resp.Header.Get("X-Accel-Buffering"))
	}
	if len(resp.Header.Values("Mcp-Session-Id")) > 0 {
		t.Errorf("an SSE answer carries Mcp-Session-Id")
	}
	sse := &sseReader{r: bufio.NewReader(resp.Body)}
	var progress []float64
	for {
		m := sse.nextMsg(t)
		if m.Method == "notifications/progress" {
			var p struct {
				Token    string  `json:"progressToken"`
				Progress float64 `json:"progress"`
				Total    float64 `json:"total"`
			}
			json.Unmarshal(m.Params, &p)
			if p.Token != "tok-1" || p.Total != 3 {
				t.Errorf("progress %s", m.Params)
			}
			progress = append(progress, p.Progress)
			continue
		}
		if m.Method != "" {
			t.Fatalf("A13 only request notifications may precede the answer; got %s", m.Method)
		}
		if string(m.ID) != "1" || m.text(t) != "done" {
			t.Fatalf("final answer %+v", m)
		}
		break
	}
	if !slices.Equal(progress, []float64{1, 2, 3}) {
		t.Errorf("A7 progress events %v, want 1, 2, 3 before the answer", progress)
	}
	if b, err := sse.next(); err != io.EOF {
		t.Errorf("A13 the final answer must end the stream; got %q, %v", b, err)
	}
}

func TestA13_JSONOnlyClientGetsOneJSONBody(t *testing.T) {
	f := newFixture(t, nil)
	body, hdr := modernCall(1, "tools/call", map[string]any{"name": "progress", "arguments": map[string]any{"steps": 3},
		"_meta": meta("progressToken", "tok-1")})
	r := f.post(body, append(hdr, "Accept", "application/json")...)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("got %s, want 200 application/json", r)
	}
	m := r.rpc(t) // fails unless the body is exactly one JSON value
	if m.Method != "" || string(m.ID) != "1" || m.text(t) != "done" {
		t.Fatalf("answer %s", r.body)
	}
}

// TestA8_ClosingTheConnectionCancelsTheHandler: on HTTP, the client's disconnect is the
// cancellation; the handler sees its context end, and nothing is left running.
func TestA8_ClosingTheConnectionCancelsTheHandler(t *testing.T) {
	for _, sse := range []bool{false, true} {
		name := "while waiting for a JSON answer"
		if sse {
			name = "mid SSE stream"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil)
			params := map[string]any{"name": "block", "arguments": map[string]any{"key": "k1"}}
			if sse {
				params["_meta"] = meta("progressToken", 1)
			}
			body, hdr := modernCall(1, "tools/call", params)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := f.request(ctx, http.MethodPost, body, append(hdr, testTag, "t")...)
			if sse {
				resp, err := f.c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.Header.Get("Content-Type") != "text/event-stream" {
					t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
				}
				if m := (&sseReader{r: bufio.NewReader(resp.Body)}).nextMsg(t); m.Method != "notifications/progress" {
					t.Fatalf("first event %+v", m)
				}
				if k := await(t, f.tk.started, "the handler to start"); k != "k1" {
					t.Fatalf("started %q", k)
				}
				cancel()
			} else {
				done := f.doAsync(req)
				if k := await(t, f.tk.started, "the handler to start"); k != "k1" {
					t.Fatalf("started %q", k)
				}
				cancel()
				if err := await(t, done, "the client to give up"); err == nil {
					t.Fatalf("the request was answered although the handler blocks")
				}
			}
			if k := await(t, f.tk.cancelled, "the handler to see its context end"); k != "k1" {
				t.Fatalf("cancelled %q", k)
			}
			returned, _ := f.chans("t")
			await(t, returned, "ServeHTTP to return")
			select {
			case k := <-f.tk.finished:
				t.Fatalf("the handler ran to completion (%s) instead of being cancelled", k)
			default:
			}
		})
	}
}

// TestA13_ConcurrentRequestsRunAtOnce: n POSTs whose handlers each wait until all n have
// started; they can only all be answered if they run concurrently.
func TestA13_ConcurrentRequestsRunAtOnce(t *testing.T) {
	f := newFixture(t, nil)
	const n = 16
	var wg sync.WaitGroup
	replies := make([]reply, n)
	errs := make([]error, n)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, hdr := modernCall(i+1, "tools/call", map[string]any{"name": "barrier", "arguments": map[string]any{"n": n}})
			resp, err := f.c.Do(f.request(ctx, http.MethodPost, body, hdr...))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			replies[i], errs[i] = reply{status: resp.StatusCode, header: resp.Header, body: b}, err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("request %d: %v (the requests did not all run at once)", i+1, errs[i])
		}
		if replies[i].status != 200 {
			t.Fatalf("request %d: %s", i+1, replies[i])
		}
		if m := replies[i].rpc(t); string(m.ID) != fmt.Sprint(i+1) || m.text(t) != "through" {
			t.Errorf("request %d: %s", i+1, replies[i].body)
		}
		noSessionID(t, replies[i])
	}
}

// TestA9_LongStreamsCarryKeepAliveComments: an SSE answer that stays open gets SSE comment
// lines at the KeepAlive interval, then its final answer.
func TestA9_LongStreamsCarryKeepAliveComments(t *testing.T) {
	f := newFixture(t, &httpx.MCPOptions{KeepAlive: 10 * time.Millisecond})
	body, hdr := modernCall(1, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "ka"},
		"_meta": meta("progressToken", "ka")})
	resp, err := f.c.Do(f.request(context.Background(), http.MethodPost, body, hdr...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	await(t, f.tk.started, "the handler to start")
	comments := 0
	for comments < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before any keep-alive: %v", err)
		}
		if strings.HasPrefix(line, ":") {
			comments++
		}
	}
	f.tk.releaseAll()
	sse := &sseReader{r: br}
	for {
		m := sse.nextMsg(t)
		if m.Method == "" {
			if string(m.ID) != "1" || m.text(t) != "released ka" {
				t.Fatalf("final %+v", m)
			}
			break
		}
	}
}

// TestA13_CloseEndsOpenStreams: Close drains the requests in flight; a handler still running
// at the drain deadline is cancelled and its stream ends with a retryable error.
func TestA13_CloseEndsOpenStreams(t *testing.T) {
	f := newFixture(t, &httpx.MCPOptions{Runtime: []runtime.Option{runtime.WithDrainTimeout(50 * time.Millisecond)}})
	body, hdr := modernCall(1, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{"key": "c"},
		"_meta": meta("progressToken", "c")})
	resp, err := f.c.Do(f.request(context.Background(), http.MethodPost, body, hdr...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sse := &sseReader{r: bufio.NewReader(resp.Body)}
	if m := sse.nextMsg(t); m.Method != "notifications/progress" {
		t.Fatalf("first event %+v", m)
	}
	await(t, f.tk.started, "the handler to start")
	f.h.Close()
	if k := await(t, f.tk.cancelled, "the handler to be cancelled at the drain deadline"); k != "c" {
		t.Fatalf("cancelled %q", k)
	}
	m := sse.nextMsg(t)
	if string(m.ID) != "1" || m.Error == nil || !strings.Contains(string(m.Error.Data), "retryable") {
		t.Fatalf("final %+v, want a retryable error", m)
	}
	if _, err := sse.next(); err != io.EOF {
		t.Errorf("the stream did not end: %v", err)
	}
}
