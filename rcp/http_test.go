package rcp_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/jsonrpc"
)

// overHTTP runs a table's frames through RCP's HTTP binding (DIGEST C3): each frame is one
// POST to /rcp/<method> (a batch to /rcp), the session token of a successful initialize is
// sent with every later POST in session mode, and the answers are collected as they would be
// over stdio. An HTTP status other than 200 and 204 fails the test: every well-formed
// JSON-RPC answer, errors included, is 200.
func overHTTP(sessions bool) exchange {
	return func(t *testing.T, frames ...string) []string {
		t.Helper()
		h := httpx.NewRCPHandler(testServer(), &httpx.RCPOptions{Sessions: sessions, Logger: zap.NewNop()})
		srv := httptest.NewServer(h)
		defer func() { srv.Close(); h.Close() }()
		var out []string
		token := ""
		for _, f := range frames {
			path := "/rcp"
			if m, err := jsonrpc.Decode([]byte(f)); err == nil && !jsonrpc.IsBatch([]byte(f)) {
				path += "/" + m.Method
			} else if !jsonrpc.IsBatch([]byte(f)) {
				path += "/ping" // an unreadable body still needs a method path
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(f))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if token != "" {
				req.Header.Set("RCP-Session", token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusNoContent:
				continue
			case resp.StatusCode == http.StatusBadRequest && bytes.Contains(body, []byte(`"code":-32700`)):
				// C3: a body that is not JSON cannot be answered as JSON-RPC: 400.
			case resp.StatusCode != http.StatusOK:
				t.Fatalf("POST %s: HTTP %d %s", path, resp.StatusCode, body)
			}
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				sc := bufio.NewScanner(bytes.NewReader(body))
				for sc.Scan() {
					if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
						out = append(out, data)
					}
				}
				continue
			}
			out = append(out, string(body))
			if sessions {
				var tok string
				if raw := jsonrpc.Field(jsonrpc.Field(jsonrpc.Field(body, "result"), "_meta"), "session"); raw != nil {
					tok = strings.Trim(string(raw), `"`)
					token = tok
				}
			}
		}
		return out
	}
}

// statelessRules are the lifecycle rules that presume one connection, replaced in stateless
// HTTP by R §5.2: every request is implicitly initialised at the advertised capabilities.
var statelessReplaced = map[string]bool{
	"C6 a gated method before initialize is -32001":                                                          true,
	"C6 an unknown method before initialize is -32001 too (only info, ping and shutdown precede initialize)": true,
	"C6 a failed initialize (version 0) stays uninitialised, and a retry succeeds":                           true,
	"C6 a second successful initialize is -32600":                                                            true,
	"C5 shutdown is allowed before initialize, and nothing after it is started":                              true,
	"C7 progress only with a token (and streaming advertised); logs at or above the client's level":          true,
}

// overHTTPOnly lists the rules whose stdio form cannot be written as one POST after another:
// a cancel must race the request it cancels, and over HTTP closing the stream is the cancel
// (TestRCP_HTTPClosingTheStreamCancels); shutdown ends a connection, which HTTP does not have.
var overHTTPOnly = map[string]bool{
	"C5 notifications/cancel still owes exactly one response: -32006":           true,
	"C5 shutdown is allowed before initialize, and nothing after it is started": true,
}

func TestRCP_OverHTTPSessions(t *testing.T) {
	var cases []rcpCase
	for _, c := range lifecycleTable {
		if !overHTTPOnly[c.rule] {
			cases = append(cases, c)
		}
	}
	runTable(t, cases, overHTTP(true))
}

func TestRCP_OverHTTPStateless(t *testing.T) {
	var cases []rcpCase
	for _, c := range lifecycleTable {
		if !statelessReplaced[c.rule] && !overHTTPOnly[c.rule] {
			cases = append(cases, c)
		}
	}
	cases = append(cases, statelessTable...)
	runTable(t, cases, overHTTP(false))
}

// statelessTable holds the stateless replacements (R §5.2, DIGEST F17).
var statelessTable = []rcpCase{
	{rule: "C3 stateless: a gated method needs no initialize",
		frames: []string{retrieve},
		expect: []expect{{id: "7", want: `"hits"`}}},
	{rule: "C3 stateless: unadvertised gated methods are still -32003",
		frames: []string{`{"jsonrpc":"2.0","id":4,"method":"rerank","params":{}}`},
		expect: []expect{{id: "4", code: -32003}}},
	{rule: "C3 stateless: initialize is answered idempotently",
		frames: []string{initOK, strings.Replace(initOK, `"init"`, `"again"`, 1)},
		expect: []expect{{id: `"init"`, want: `"protocolVersion":1`}, {id: `"again"`, want: `"protocolVersion":1`}}},
	{rule: "C3 stateless: a version-0 initialize is still -32002",
		frames: []string{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":0}}`},
		expect: []expect{{id: "1", code: -32002}}},
}

func post(t *testing.T, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestRCP_HTTPStatuses(t *testing.T) {
	h := httpx.NewRCPHandler(testServer(), &httpx.RCPOptions{Logger: zap.NewNop(), MaxBody: 1 << 10,
		Authenticator: httpx.BearerTokens(map[string]string{"good": "alice"})})
	srv := httptest.NewServer(h)
	defer func() { srv.Close(); h.Close() }()
	auth := map[string]string{"Authorization": "Bearer good"}
	cases := []struct {
		rule, path, body string
		header           map[string]string
		status           int
		want             string
	}{
		{"C3 a JSON-RPC error is still HTTP 200", "/rcp/rerank", `{"jsonrpc":"2.0","id":1,"method":"rerank","params":{}}`, auth, 200, `"code":-32003`},
		{"C3 URL method differs from the body's: -32600 (200)", "/rcp/info", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}`, auth, 200, `"code":-32600`},
		{"C3 a notification gets 204", "/rcp/notifications/whatever", `{"jsonrpc":"2.0","method":"notifications/whatever"}`, auth, 204, ``},
		{"C3 an unknown base path is 404", "/elsewhere/ping", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, auth, 404, ``},
		{"C3 a body that is not JSON is 400", "/rcp/ping", `{"jsonrpc":`, auth, 400, `"code":-32700`},
		{"C3 failed authentication is 401 with -32012", "/rcp/ping", `{"jsonrpc":"2.0","id":4,"method":"ping"}`, map[string]string{"Authorization": "Bearer bad"}, 401, `"code":-32012`},
		{"C3 a body over the limit is 413 with -32013", "/rcp/ping", `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2048) + `"}}`, auth, 413, `"code":-32013`},
		{"C3 the compact envelope is answered with id null", "/rcp/ping", `{"method":"ping","params":{"nonce":"c"}}`, auth, 200, `"id":null,"result":{"nonce":"c"}`},
		{"C9 a batch is posted to the base path", "/rcp", `[{"jsonrpc":"2.0","id":6,"method":"ping"},{"jsonrpc":"2.0","id":7,"method":"info"}]`, auth, 200, `"id":6`},
		{"C3 GET is not the binding", "/rcp/ping", ``, auth, 405, ``},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			method := http.MethodPost
			if tc.status == 405 {
				method = http.MethodGet
			}
			req, _ := http.NewRequest(method, srv.URL+tc.path, strings.NewReader(tc.body))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("HTTP %d %s; want %d containing %q", resp.StatusCode, b, tc.status, tc.want)
			}
		})
	}
}

func TestRCP_HTTPStreamingOnlyWhenAskedAndAdvertised(t *testing.T) {
	h := httpx.NewRCPHandler(testServer(), &httpx.RCPOptions{Logger: zap.NewNop()})
	srv := httptest.NewServer(h)
	defer func() { srv.Close(); h.Close() }()
	body := `{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","_meta":{"progressToken":"t"}}}`
	resp, got := post(t, srv.URL+"/rcp/retrieve", body, map[string]string{"Accept": "text/event-stream"})
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("C3: with Accept: text/event-stream and streaming advertised, want SSE; got %q %s", ct, got)
	}
	events := strings.Split(strings.TrimSpace(got), "\n\n")
	if len(events) != 2 || !strings.Contains(events[0], "notifications/progress") || !strings.Contains(events[1], `"id":1`) {
		t.Fatalf("C3: want one progress frame then exactly one final frame, got %q", events)
	}
	resp, got = post(t, srv.URL+"/rcp/retrieve", body, nil)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" || strings.Contains(got, "progress") {
		t.Fatalf("C3: without the Accept header, one buffered JSON answer; got %q %s", ct, got)
	}
}

func TestRCP_HTTPClosingTheStreamCancels(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		h := httpx.NewRCPHandler(testServer(), &httpx.RCPOptions{Logger: zap.NewNop(), Sessions: sessions})
		srv := httptest.NewServer(h)
		header := map[string]string{}
		if sessions {
			_, b := post(t, srv.URL+"/rcp/initialize", initOK, nil)
			header["RCP-Session"] = strings.Trim(string(jsonrpc.Field(jsonrpc.Field(jsonrpc.Field([]byte(b), "result"), "_meta"), "session")), `"`)
		}
		for len(waitStarted) > 0 || len(waitEnded) > 0 { // left by earlier tests
			select {
			case <-waitStarted:
			case <-waitEnded:
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/rcp/retrieve",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","wait":true}}`))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		<-waitStarted
		cancel() // the client closes the response stream
		if err := <-waitEnded; !errors.Is(err, context.Canceled) {
			t.Errorf("sessions=%v: closing the stream did not cancel the request; it ended with %v", sessions, err)
		}
		<-done
		srv.Close()
		h.Close()
	}
}

func TestRCP_HTTPRateLimitedAndOverloaded(t *testing.T) {
	// DIGEST C3: 429 with Retry-After and -32011 from the rate limiter; 503 with -32010 when
	// the server is at its in-flight limit. Both are refusals before dispatch.
	ops := httpx.NewOps(httpx.NewRateLimiter(0.001, 1, 10))
	h := httpx.NewRCPHandler(testServer(), &httpx.RCPOptions{Logger: zap.NewNop(), Ops: ops})
	srv := httptest.NewServer(h)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`
	if resp, _ := post(t, srv.URL+"/rcp/ping", ping, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %d", resp.StatusCode)
	}
	resp, body := post(t, srv.URL+"/rcp/ping", ping, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `"code":-32011`) {
		t.Errorf("rate limited: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	http.DefaultClient.CloseIdleConnections()
	srv.Close()
	h.Close()

	for len(waitStarted) > 0 || len(waitEnded) > 0 {
		select {
		case <-waitStarted:
		case <-waitEnded:
		}
	}
	h = httpx.NewRCPHandler(testServer(), &httpx.RCPOptions{Logger: zap.NewNop(), MaxInFlight: 1})
	srv = httptest.NewServer(h)
	defer func() { http.DefaultClient.CloseIdleConnections(); srv.Close(); h.Close() }()
	held := make(chan struct{})
	go func() {
		defer close(held)
		post(t, srv.URL+"/rcp/retrieve", `{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"q","wait":true}}`, nil)
	}()
	<-waitStarted // the one slot is taken until the request's deadline
	resp, body = post(t, srv.URL+"/rcp/ping", ping, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `"code":-32010`) {
		t.Errorf("overloaded: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	<-held
}
