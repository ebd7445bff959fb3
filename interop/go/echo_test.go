package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tests against examples/echo: a stdio server with the tools echo and sleep.

// A4, A15: the SDK v1.8.0 client probes with server/discover first, and Relay answers it,
// so the session runs under 2026-07-28 with no initialize handshake at all.
func TestA4_DiscoverNegotiatesModernVersion(t *testing.T) {
	srv := start(t, echoBin, nil)
	res := srv.cs.InitializeResult()
	caps, _ := json.Marshal(res.Capabilities)
	t.Logf("go-sdk v1.8.0 negotiated protocol version %q with %+v, capabilities %s",
		res.ProtocolVersion, res.ServerInfo, caps)
	if res.ProtocolVersion != modernVersion {
		t.Errorf("negotiated %q, want %q", res.ProtocolVersion, modernVersion)
	}
	if res.ServerInfo == nil || res.ServerInfo.Name != "relay-echo" || res.ServerInfo.Version != "1.0.0" {
		t.Errorf("serverInfo from the discover result's _meta = %+v, want relay-echo 1.0.0", res.ServerInfo)
	}
	if res.Capabilities == nil || res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
		t.Errorf("capabilities = %+v, want tools{listChanged:true}", res.Capabilities)
	}

	msgs := sent(srv.wire.messages(t))
	if len(msgs) < 1 || msgs[0].Method != "server/discover" {
		t.Fatalf("the first message should be the client's server/discover probe; wire:\n%s", srv.wire.summary())
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	decode(t, msgs[0].Params, &p)
	if string(p.Meta["io.modelcontextprotocol/protocolVersion"]) != `"`+modernVersion+`"` {
		t.Errorf("discover _meta protocolVersion = %s", p.Meta["io.modelcontextprotocol/protocolVersion"])
	}
	resp, ok := srv.wire.responseTo(t, msgs[0].ID)
	if !ok || resp.Error != nil {
		t.Fatalf("server/discover was not answered with a result: %+v", resp)
	}
	var dr map[string]json.RawMessage
	decode(t, resp.Result, &dr)
	for _, k := range []string{"resultType", "supportedVersions", "capabilities", "ttlMs", "cacheScope", "_meta"} {
		if _, ok := dr[k]; !ok {
			t.Errorf("DiscoverResult lacks %q: %s", k, resp.Result)
		}
	}
	for _, m := range msgs {
		if m.Sent && (m.Method == "initialize" || m.Method == "notifications/initialized") {
			t.Errorf("the client fell back to the legacy handshake: %s", m.Raw)
		}
	}
}

// A2, A3: every request the SDK sends after discovery carries the required per-request
// _meta, and every result Relay sends back names the server in _meta and says resultType.
func TestA2_EveryRequestAndResultCarriesMeta(t *testing.T) {
	srv := start(t, echoBin, nil)
	ctx := stepCtx(t)
	if _, err := srv.cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range srv.wire.messages(t) {
		switch {
		case m.Sent && m.isRequest():
			var p struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
			decode(t, m.Params, &p)
			if string(p.Meta["io.modelcontextprotocol/protocolVersion"]) != `"`+modernVersion+`"` ||
				p.Meta["io.modelcontextprotocol/clientCapabilities"] == nil {
				t.Errorf("request lacks the required _meta: %s", m.Raw)
			}
		case !m.Sent && m.isResponse():
			n++
			if m.Error != nil {
				t.Errorf("unexpected error response: %s", m.Raw)
				continue
			}
			var r struct {
				ResultType string                     `json:"resultType"`
				Meta       map[string]json.RawMessage `json:"_meta"`
			}
			decode(t, m.Result, &r)
			if r.ResultType != "complete" || r.Meta["io.modelcontextprotocol/serverInfo"] == nil {
				t.Errorf("result lacks resultType complete or _meta serverInfo: %s", m.Raw)
			}
		}
	}
	if n != 3 {
		t.Errorf("saw %d responses, want 3 (discover, tools/list, tools/call)", n)
	}
}

// A14: tools/list shows echo and sleep, in order, with their annotations and derived input
// schemas; the complete result is cacheable (A4: ttlMs and cacheScope).
func TestA14_ListTools(t *testing.T) {
	srv := start(t, echoBin, nil)
	res, err := srv.cs.ListTools(stepCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"echo", "sleep"}) {
		t.Fatalf("tools = %v, want [echo sleep]", names)
	}
	wantProp := map[string]string{"echo": "text", "sleep": "ms"}
	for _, tl := range res.Tools {
		if tl.Description == "" {
			t.Errorf("%s has no description", tl.Name)
		}
		a := tl.Annotations
		if a == nil || !a.ReadOnlyHint || !a.IdempotentHint {
			t.Errorf("%s annotations = %+v, want readOnlyHint and idempotentHint", tl.Name, a)
		} else if a.DestructiveHint != nil || a.OpenWorldHint != nil {
			t.Errorf("%s annotations set hints the server did not: %+v", tl.Name, a)
		}
		schema, _ := json.Marshal(tl.InputSchema)
		var s struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		decode(t, schema, &s)
		if s.Type != "object" || s.Properties[wantProp[tl.Name]] == nil || !slices.Contains(s.Required, wantProp[tl.Name]) {
			t.Errorf("%s inputSchema = %s, want an object requiring %q", tl.Name, schema, wantProp[tl.Name])
		}
	}
	req, ok := srv.wire.request(t, "tools/list", nil)
	if !ok {
		t.Fatal("no tools/list on the wire")
	}
	resp, _ := srv.wire.responseTo(t, req.ID)
	var raw map[string]json.RawMessage
	decode(t, resp.Result, &raw)
	if raw["ttlMs"] == nil || string(raw["cacheScope"]) != `"public"` {
		t.Errorf("tools/list result lacks ttlMs/cacheScope: %s", resp.Result)
	}
	if _, ok := raw["nextCursor"]; ok {
		t.Errorf("two tools should fit on one page: %s", resp.Result)
	}
}

// A1, A12, A14: awkward text survives the round trip byte for byte: newlines (the stdio
// framing is one message per line), quotes, escapes, NUL, U+2028/2029, astral characters,
// text that looks like JSON-RPC, and a long string.
func TestA14_CallEchoAwkwardText(t *testing.T) {
	srv := start(t, echoBin, nil)
	texts := map[string]string{
		"empty":         "",
		"newlines":      "line one\nline two\r\nline three\r",
		"quotes":        `she said "hi" \ and left \"\\n`,
		"controls":      "nul\x00bell\x07esc\x1btab\tdel\x7f",
		"separators":    "ls\u2028ps\u2029",
		"astral":        "emoji 😀👍🏽, math 𝔸, CJK 漢字, RTL שלום, combining é",
		"html":          "<script>alert('x')</script> & &amp;",
		"json-rpc":      `{"jsonrpc":"2.0","id":1,"method":"tools/call"}` + "\n" + `{"jsonrpc":"2.0","id":1,"result":{}}`,
		"bom":           "\ufeffleading BOM",
		"replacement":   "\ufffd\ufffe\uffff",
		"long":          strings.Repeat("0123456789abcdef", 1<<16), // 1 MiB
		"whitespace":    "   \t  ",
		"percent-fmt":   "%s %d %v %!",
		"surrogate-ish": "\\ud83d\\ude00 (escaped text, not a character)",
	}
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			res, err := srv.cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("isError: %v", res.Content)
			}
			if got := textOf(t, res.Content); got != text {
				t.Errorf("echo changed the text: got %d bytes %q..., want %d bytes %q...",
					len(got), trunc(got), len(text), trunc(text))
			}
		})
	}
}

// A11, A14: a tool's own failures (here, arguments that do not match the schema) come back
// as results with isError, and an unknown tool is a -32602 protocol error.
func TestA14_ToolErrors(t *testing.T) {
	srv := start(t, echoBin, nil)
	ctx := stepCtx(t)
	res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": 42}})
	if err != nil {
		t.Fatalf("bad arguments should be a tool error result, not a protocol error: %v", err)
	}
	if !res.IsError || !strings.Contains(textOf(t, res.Content), "text") {
		t.Errorf("want isError naming the bad argument, got %+v", res)
	}
	_, err = srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "no-such-tool"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32602 {
		t.Errorf("unknown tool: err = %v, want a -32602 error", err)
	}
	// The session is unaffected.
	if res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}}); err != nil || textOf(t, res.Content) != "still here" {
		t.Errorf("echo after errors: %v %v", res, err)
	}
}

// A7: with a progressToken (string or integer), sleep reports progress that strictly
// increases, names the total, and is all sent before the response.
func TestA7_ProgressSleep(t *testing.T) {
	rec := newProgressRecorder()
	srv := start(t, echoBin, &mcp.ClientOptions{ProgressNotificationHandler: rec.handler})
	for _, tok := range []any{"sleep-progress", 7} {
		t.Run(fmt.Sprintf("%T", tok), func(t *testing.T) {
			p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 300}}
			p.SetProgressToken(tok)
			res, err := srv.cs.CallTool(stepCtx(t), p)
			if err != nil {
				t.Fatal(err)
			}
			if got := textOf(t, res.Content); got != "slept 300 ms" {
				t.Errorf("result %q", got)
			}
			checkProgressOnWire(t, srv.wire.messages(t), tok, 300)
			// The SDK dispatches notifications on its own goroutines: wait for them all.
			deadline := time.Now().Add(5 * time.Second)
			var got []*mcp.ProgressNotificationParams
			for want := countProgressOnWire(t, srv.wire, tok); ; time.Sleep(10 * time.Millisecond) {
				if got = rec.get(tok); len(got) >= want || time.Now().After(deadline) {
					if len(got) != want {
						t.Fatalf("the SDK handler saw %d progress notifications, the wire carried %d", len(got), want)
					}
					break
				}
			}
			for _, n := range got {
				if n.Total != 300 || n.Message != "sleeping" {
					t.Errorf("progress %+v, want total 300 and message sleeping", n)
				}
			}
		})
	}
	// Without a token, no progress at all.
	if _, err := srv.cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 100}}); err != nil {
		t.Fatal(err)
	}
	for _, m := range srv.wire.messages(t) {
		if m.Method == "notifications/progress" {
			var p struct{ ProgressToken any }
			decode(t, m.Params, &p)
			if k := tokenKey(p.ProgressToken); k != tokenKey("sleep-progress") && k != tokenKey(7) {
				t.Errorf("progress for a token nobody sent: %s", m.Raw)
			}
		}
	}
}

// checkProgressOnWire checks the progress notifications for tok as they crossed the pipe:
// at least one, strictly increasing, each at or below total, and none after the response.
func checkProgressOnWire(t *testing.T, msgs []wireMsg, tok any, total float64) {
	t.Helper()
	var reqID json.RawMessage
	for _, m := range msgs {
		if m.Sent && m.Method == "tools/call" {
			var p struct {
				Meta struct {
					ProgressToken any `json:"progressToken"`
				} `json:"_meta"`
			}
			decode(t, m.Params, &p)
			if tokenKey(p.Meta.ProgressToken) == tokenKey(tok) {
				reqID = m.ID
			}
		}
	}
	last, n, answered := -1.0, 0, false
	for _, m := range msgs {
		switch {
		case !m.Sent && m.Method == "notifications/progress":
			var p struct {
				ProgressToken any     `json:"progressToken"`
				Progress      float64 `json:"progress"`
				Total         float64 `json:"total"`
			}
			decode(t, m.Params, &p)
			if tokenKey(p.ProgressToken) != tokenKey(tok) {
				continue
			}
			n++
			if answered {
				t.Errorf("progress after the response (A7): %s", m.Raw)
			}
			if p.Progress <= last {
				t.Errorf("progress did not strictly increase (A7): %v after %v", p.Progress, last)
			}
			if p.Total != total {
				t.Errorf("progress %v of %v, want total %v", p.Progress, p.Total, total)
			}
			if p.Progress > total {
				// Not a protocol violation (total is informative), but a progress bar
				// would overflow: examples/echo reports elapsed time unclamped.
				t.Logf("note: progress %v exceeds total %v: %s", p.Progress, p.Total, m.Raw)
			}
			last = p.Progress
		case !m.Sent && m.isResponse() && reqID != nil && string(m.ID) == string(reqID):
			answered = true
		}
	}
	if reqID == nil || !answered {
		t.Fatalf("no tools/call with progress token %v, or no response to it", tok)
	}
	if n == 0 {
		t.Errorf("no progress notifications for token %v", tok)
	}
}

func countProgressOnWire(t *testing.T, w *wireLog, tok any) int {
	n := 0
	for _, m := range w.messages(t) {
		if !m.Sent && m.Method == "notifications/progress" {
			var p struct{ ProgressToken any }
			decode(t, m.Params, &p)
			if tokenKey(p.ProgressToken) == tokenKey(tok) {
				n++
			}
		}
	}
	return n
}

// A8: cancelling the caller's context makes the SDK send notifications/cancelled; Relay
// stops the handler (no more progress, which sleep would otherwise send every 2 s), never
// answers the cancelled request, and keeps serving the session.
func TestA8_CancelSleep(t *testing.T) {
	rec := newProgressRecorder()
	srv := start(t, echoBin, &mcp.ClientOptions{ProgressNotificationHandler: rec.handler})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 20000}} // ticks every 2 s
	p.SetProgressToken("cancel-me")
	errc := make(chan error, 1)
	begin := time.Now()
	go func() {
		_, err := srv.cs.CallTool(ctx, p)
		errc <- err
	}()
	srv.wire.waitFor(t, 5*time.Second, "the sleep request to be sent", func(ms []wireMsg) bool {
		_, ok := srv.wire.request(t, "tools/call", nil)
		return ok
	})
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	req, _ := srv.wire.request(t, "tools/call", nil)
	srv.wire.waitFor(t, 5*time.Second, "notifications/cancelled", func(ms []wireMsg) bool {
		for _, m := range ms {
			if m.Sent && m.Method == "notifications/cancelled" {
				var c struct {
					RequestID json.RawMessage `json:"requestId"`
				}
				decode(t, m.Params, &c)
				return string(c.RequestID) == string(req.ID)
			}
		}
		return false
	})

	// The session still works, for calls and lists.
	ctx2 := stepCtx(t)
	res, err := srv.cs.CallTool(ctx2, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after cancel"}})
	if err != nil || textOf(t, res.Content) != "after cancel" {
		t.Fatalf("echo after cancel: %v %v", res, err)
	}
	sp := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 50}}
	sp.SetProgressToken("after-cancel")
	if res, err := srv.cs.CallTool(ctx2, sp); err != nil || textOf(t, res.Content) != "slept 50 ms" {
		t.Fatalf("sleep after cancel: %v %v", res, err)
	}

	// Past the first progress tick (2 s) of the cancelled sleep: had the handler kept
	// running, a progress notification for its token would be on the wire by now.
	time.Sleep(time.Until(begin.Add(2500 * time.Millisecond)))
	if n := countProgressOnWire(t, srv.wire, "cancel-me"); n != 0 {
		t.Errorf("the cancelled handler kept running: %d progress notifications for it", n)
	}
	if resp, ok := srv.wire.responseTo(t, req.ID); ok {
		t.Errorf("the server answered a cancelled request (A8: MUST NOT): %s", resp.Raw)
	}
}

// A3, A1: many goroutines call concurrently on one stdio connection; every response finds
// its caller (ids are never confused), progress tokens are kept apart, and nothing is lost.
func TestA3_ConcurrentCalls(t *testing.T) {
	rec := newProgressRecorder()
	srv := start(t, echoBin, &mcp.ClientOptions{ProgressNotificationHandler: rec.handler})
	const goroutines, calls = 48, 20
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	begin := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*calls)
	for g := range goroutines {
		wg.Go(func() {
			for c := range calls {
				if c == calls/2 {
					p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 40 + g}}
					p.SetProgressToken(fmt.Sprintf("g%d", g))
					res, err := srv.cs.CallTool(ctx, p)
					if err != nil {
						errs <- fmt.Errorf("g%d sleep: %w", g, err)
					} else if got, err := onlyText(res.Content); err != nil || got != fmt.Sprintf("slept %d ms", 40+g) {
						errs <- fmt.Errorf("g%d sleep: got %q (%v)", g, got, err)
					}
					continue
				}
				text := fmt.Sprintf("goroutine %d call %d %s", g, c, strings.Repeat("x", g*c))
				res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
				if err != nil {
					errs <- fmt.Errorf("g%d c%d: %w", g, c, err)
				} else if got, err := onlyText(res.Content); err != nil || got != text {
					errs <- fmt.Errorf("g%d c%d: got someone else's answer %q (%v)", g, c, trunc(got), err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d calls from %d goroutines took %v", goroutines*calls, goroutines, time.Since(begin))
	// Only the messages about progress, so that each token's check is quick.
	var msgs []wireMsg
	withToken := map[string]bool{}
	for _, m := range srv.wire.messages(t) {
		switch {
		case m.Sent && m.Method == "tools/call" && strings.Contains(m.Raw, `"progressToken"`):
			withToken[string(m.ID)] = true
		case m.Method == "notifications/progress", !m.Sent && m.isResponse() && withToken[string(m.ID)]:
		default:
			continue
		}
		msgs = append(msgs, m)
	}
	for g := range goroutines {
		checkProgressOnWire(t, msgs, fmt.Sprintf("g%d", g), float64(40+g))
	}
}

// A9: a client with a tools list-changed handler opens subscriptions/listen right after
// discovery; Relay acknowledges it first, tagged with the listen request's id, honouring
// toolsListChanged. Closing the session cancels the listen, which ends cleanly.
func TestA9_ListenAcknowledged(t *testing.T) {
	srv := start(t, echoBin, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	})
	var listenID json.RawMessage
	srv.wire.waitFor(t, 5*time.Second, "notifications/subscriptions/acknowledged", func(ms []wireMsg) bool {
		for _, m := range ms {
			if m.Sent && m.Method == "subscriptions/listen" {
				listenID = m.ID
			}
			if !m.Sent && m.Method == "notifications/subscriptions/acknowledged" {
				return true
			}
		}
		return false
	})
	ack := func() wireMsg {
		for _, m := range srv.wire.messages(t) {
			if m.Method == "notifications/subscriptions/acknowledged" {
				return m
			}
		}
		return wireMsg{}
	}()
	var p struct {
		Notifications map[string]any             `json:"notifications"`
		Meta          map[string]json.RawMessage `json:"_meta"`
	}
	decode(t, ack.Params, &p)
	if string(p.Meta["io.modelcontextprotocol/subscriptionId"]) != string(listenID) {
		t.Errorf("ack subscriptionId = %s, want the listen id %s", p.Meta["io.modelcontextprotocol/subscriptionId"], listenID)
	}
	if p.Notifications["toolsListChanged"] != true {
		t.Errorf("ack notifications = %v, want toolsListChanged honoured", p.Notifications)
	}
	// Ordinary calls go on beside the open listen.
	if res, err := srv.cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "beside listen"}}); err != nil || textOf(t, res.Content) != "beside listen" {
		t.Fatalf("echo beside listen: %v %v", res, err)
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60]
	}
	return s
}

// A4, A15: a client that probes with a version Relay does not serve gets -32022 naming the
// supported versions; the SDK then retries server/discover with 2026-07-28 and does not
// fall back to initialize.
func TestA15_DiscoverRetriesAfterUnsupportedVersion(t *testing.T) {
	srv := startSession(t, echoBin, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2099-01-01"})
	if got := srv.cs.InitializeResult().ProtocolVersion; got != modernVersion {
		t.Fatalf("negotiated %q, want %q", got, modernVersion)
	}
	msgs := srv.wire.messages(t)
	out := sent(msgs)
	if len(out) < 2 || out[0].Method != "server/discover" || out[1].Method != "server/discover" {
		t.Fatalf("want two server/discover probes first; wire:\n%s", srv.wire.summary())
	}
	first, _ := srv.wire.responseTo(t, out[0].ID)
	if second, ok := srv.wire.responseTo(t, out[1].ID); !ok || second.Error != nil {
		t.Fatalf("the second probe got %s, want a DiscoverResult", second.Raw)
	}
	e := first.Error
	if e == nil || e.Code != -32022 {
		t.Fatalf("the first probe got %s, want -32022", first.Raw)
	}
	var data struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}
	decode(t, e.Data, &data)
	if !slices.Equal(data.Supported, []string{modernVersion}) || data.Requested != "2099-01-01" {
		t.Errorf("-32022 data = %s", e.Data)
	}
	for _, m := range msgs {
		if m.Sent && m.Method == "initialize" {
			t.Errorf("the SDK fell back to initialize after a modern error (A15: it must not)")
		}
	}
	if res, err := srv.cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ok"}}); err != nil || textOf(t, res.Content) != "ok" {
		t.Fatalf("echo: %v %v", res, err)
	}
}

// A3, A4: each request is judged by its own _meta: one request naming an unsupported
// version gets -32022 while the requests around it, on the same connection, succeed.
func TestA3_VersionIsPerRequest(t *testing.T) {
	srv := start(t, echoBin, nil)
	ctx := stepCtx(t)
	_, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"},
		Meta: mcp.Meta{"io.modelcontextprotocol/protocolVersion": "2025-11-25"}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32022 {
		t.Errorf("a request naming 2025-11-25 in _meta: %v, want -32022", err)
	}
	if res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "y"}}); err != nil || textOf(t, res.Content) != "y" {
		t.Errorf("the next request: %v %v", res, err)
	}
}

// A5: methods the 2026-07-28 revision removed. The SDK v1.8.0 sends ping and
// logging/setLevel without the per-request _meta even on a 2026-07-28 session (it injects
// _meta only into the feature methods), so Relay sees requests of no era: it answers the
// bare ping {} (its documented exception, kept for pre-initialize liveness checks) and
// refuses setLevel with -32602 for the missing _meta (A2). With the modern _meta supplied
// by hand, both are modern requests and get -32601 (A5). The session goes on either way.
func TestA5_RemovedMethods(t *testing.T) {
	srv := start(t, echoBin, nil)
	ctx := stepCtx(t)
	var werr *jsonrpc.Error
	if err := srv.cs.Ping(ctx, nil); err != nil {
		t.Errorf("bare ping (no _meta): %v, want {} (Relay answers era-less ping)", err)
	}
	if err := srv.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); !errors.As(err, &werr) || werr.Code != -32602 {
		t.Errorf("bare logging/setLevel (no _meta): %v, want -32602 (A2)", err)
	}
	modern := func() mcp.Meta {
		return mcp.Meta{"io.modelcontextprotocol/protocolVersion": modernVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	}
	if err := srv.cs.Ping(ctx, &mcp.PingParams{Meta: modern()}); !errors.As(err, &werr) || werr.Code != -32601 {
		t.Errorf("modern ping: %v, want -32601", err)
	}
	if err := srv.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info", Meta: modern()}); !errors.As(err, &werr) || werr.Code != -32601 {
		t.Errorf("modern logging/setLevel: %v, want -32601", err)
	}
	if res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "z"}}); err != nil || textOf(t, res.Content) != "z" {
		t.Errorf("echo: %v %v", res, err)
	}
}
