package httpx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/rcp"
)

// rcpServer is an RCP/1 server for the HTTP binding's tests: retrieve is advertised (progress
// first, then k is checked, mode must be sparse, and "wait" waits for its context, or for
// release when it is not nil), the index is read-only, and streaming is advertised.
func rcpServer(release <-chan struct{}) *rcp.Server {
	s := rcp.NewServer(rcp.Implementation{Name: "t", Version: "1"}, &rcp.Options{Conformance: "L0", RequestTimeout: 500 * time.Millisecond})
	s.Advertise("retrieve", map[string]any{"maxK": 5, "modes": []string{"sparse"}})
	s.Advertise("index", map[string]any{"writable": false})
	s.Advertise("streaming", nil)
	s.Handle("retrieve", func(ctx context.Context, req *rcp.Request) (any, error) {
		req.Progress(0.5, "retrieve", "half", nil)
		var p struct {
			K    *int   `json:"k"`
			Mode string `json:"mode"`
			Wait bool   `json:"wait"`
		}
		if err := req.Decode(&p); err != nil {
			return nil, err
		}
		switch {
		case p.K != nil && *p.K < 0:
			return nil, rcp.InvalidParams("k", "k must not be negative")
		case p.Mode != "" && p.Mode != "sparse":
			return nil, rcp.OptionUnsupported("mode", p.Mode)
		case p.Wait && release != nil:
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case p.Wait:
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return map[string]any{"hits": []any{}}, nil
	})
	return s
}

// rcpPost posts body to url+path and returns the status and the final JSON-RPC frame: the
// body, or the last data line of an SSE stream.
func rcpPost(t *testing.T, url, path, body string, header map[string]string) (int, []byte) {
	t.Helper()
	status, answer, err := rcpTryPost(context.Background(), url, path, body, header)
	if err != nil {
		t.Fatal(err)
	}
	return status, answer
}

func rcpTryPost(ctx context.Context, url, path, body string, header map[string]string) (int, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				last = data
			}
		}
		b = last
	}
	return resp.StatusCode, b, nil
}

// rcpServe serves an RCPHandler with these options on a test server; it is closed with the test.
func rcpServe(t *testing.T, s *rcp.Server, opts httpx.RCPOptions) string {
	t.Helper()
	opts.Logger = zap.NewNop()
	h := httpx.NewRCPHandler(s, &opts)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return srv.URL
}

// sessionToken initializes a session with a full JSON-RPC request and returns its token.
func sessionToken(t *testing.T, url string) string {
	t.Helper()
	_, b := rcpPost(t, url, "/rcp/initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"client":{"name":"t"}}}`, nil)
	tok := jsonrpc.Field(jsonrpc.Field(jsonrpc.Field(b, "result"), "_meta"), "session")
	if tok == nil {
		t.Fatalf("initialize gave no session token: %s", b)
	}
	return strings.Trim(string(tok), `"`)
}

// checkCompactAnswer checks what every answer to a compact envelope must be: JSON whose id is
// null (RCP/1 §5.2 and §4: an answer to a request whose id could not be read), with none of
// the handler's stand-in id left in it, and the code wanted (0 for a result).
func checkCompactAnswer(t *testing.T, answer []byte, code int64) {
	t.Helper()
	var m struct {
		Error *struct {
			Code int64 `json:"code"`
		} `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(answer, &m); err != nil {
		t.Fatalf("the answer is not JSON: %v: %s", err, answer)
	}
	if id := jsonrpc.Field(answer, "id"); string(id) != "null" {
		t.Errorf("the answer's id is %s, not null: %s", id, answer)
	}
	if bytes.Contains(answer, []byte("relay-compact")) {
		t.Errorf("the answer shows the stand-in id: %s", answer)
	}
	switch {
	case code == 0 && (m.Error != nil || m.Result == nil):
		t.Errorf("want a result: %s", answer)
	case code != 0 && (m.Error == nil || m.Error.Code != code):
		t.Errorf("want error %d: %s", code, answer)
	}
}

// TestRCP_CompactEnvelopeAnswersIDNullOnEveryPath posts the compact envelope {method, params}
// (RCP/1 §5.3) down every path that answers it: refusals of the body itself, every error the
// dispatcher and the handlers return, the response-size limit, SSE, and session mode.
func TestRCP_CompactEnvelopeAnswersIDNullOnEveryPath(t *testing.T) {
	stateless := rcpServe(t, rcpServer(nil), httpx.RCPOptions{})
	small := rcpServe(t, rcpServer(nil), httpx.RCPOptions{MaxResponse: 200})
	sessions := rcpServe(t, rcpServer(nil), httpx.RCPOptions{Sessions: true})
	token := sessionToken(t, sessions)
	inSession := map[string]string{"RCP-Session": token}
	sse := map[string]string{"Accept": "application/json, text/event-stream"}
	cases := []struct {
		rule, url, path, body string
		header                map[string]string
		code                  int64 // 0: a result
	}{
		{"a result", stateless, "/rcp/ping", `{"method":"ping","params":{"nonce":"c"}}`, nil, 0},
		{"a result without params", stateless, "/rcp/info", `{"method":"info"}`, nil, 0},
		{"§5.2 the URL names another method: -32600", stateless, "/rcp/retrieve", `{"method":"index/add"}`, nil, -32600},
		{"§5.2 posted to the base path, which takes only batches: -32600", stateless, "/rcp", `{"method":"ping"}`, nil, -32600},
		{"§4 method is not a string: -32600", stateless, "/rcp/ping", `{"method":5}`, nil, -32600},
		{"§4 method is not a string, at the base path: -32600", stateless, "/rcp", `{"method":5}`, nil, -32600},
		{"§4 method is null: -32600", stateless, "/rcp/ping", `{"method":null}`, nil, -32600},
		{"§4 params is an array: -32602", stateless, "/rcp/ping", `{"method":"ping","params":[1]}`, nil, -32602},
		{"§4 params is a number: -32602", stateless, "/rcp/ping", `{"method":"ping","params":5}`, nil, -32602},
		{"§4 params null counts as absent", stateless, "/rcp/ping", `{"method":"ping","params":null}`, nil, 0},
		{"§12 an unknown method: -32004", stateless, "/rcp/nope", `{"method":"nope"}`, nil, -32004},
		{"§12 a method not advertised: -32003", stateless, "/rcp/rerank", `{"method":"rerank","params":{}}`, nil, -32003},
		{"§12 a read-only index refuses index/add", stateless, "/rcp/index/add", `{"method":"index/add","params":{"documents":[]}}`, nil, -32003},
		{"§12 invalid params: -32602", stateless, "/rcp/retrieve", `{"method":"retrieve","params":{"k":-1}}`, nil, -32602},
		{"§12 an option not offered: -32005", stateless, "/rcp/retrieve", `{"method":"retrieve","params":{"mode":"dense"}}`, nil, -32005},
		{"§12 the request's deadline: -32014", stateless, "/rcp/retrieve", `{"method":"retrieve","params":{"wait":true}}`, nil, -32014},
		{"§7.14 notifications/cancel sent as a request: -32600", stateless, "/rcp/notifications/cancel", `{"method":"notifications/cancel","params":{"id":1}}`, nil, -32600},
		{"§5.2 over SSE, an error after progress", stateless, "/rcp/retrieve", `{"method":"retrieve","params":{"k":-1,"_meta":{"progressToken":"p"}}}`, sse, -32602},
		{"§5.2 over SSE, a result after progress", stateless, "/rcp/retrieve", `{"method":"retrieve","params":{"_meta":{"progressToken":"p"}}}`, sse, 0},
		{"an answer over the response limit: -32603", small, "/rcp/ping", `{"method":"ping","params":{"nonce":"` + strings.Repeat("x", 300) + `"}}`, nil, -32603},
		{"sessions: before initialize: -32001", sessions, "/rcp/retrieve", `{"method":"retrieve","params":{}}`, nil, -32001},
		{"sessions: a failed initialize: -32002", sessions, "/rcp/initialize", `{"method":"initialize","params":{"protocolVersion":0}}`, nil, -32002},
		{"sessions: initialize", sessions, "/rcp/initialize", `{"method":"initialize","params":{"protocolVersion":1,"client":{"name":"t"}}}`, nil, 0},
		{"sessions: a result in a session", sessions, "/rcp/retrieve", `{"method":"retrieve","params":{}}`, inSession, 0},
		{"sessions: the URL names another method: -32600", sessions, "/rcp/ping", `{"method":"info"}`, inSession, -32600},
		{"sessions: a second initialize: -32600", sessions, "/rcp/initialize", `{"method":"initialize","params":{"protocolVersion":1}}`, inSession, -32600},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			status, answer := rcpPost(t, tc.url, tc.path, tc.body, tc.header)
			if status != http.StatusOK {
				t.Fatalf("HTTP %d %s; want 200 (R §5.2: every JSON-RPC answer is 200)", status, answer)
			}
			checkCompactAnswer(t, answer, tc.code)
		})
	}
}

// TestRCP_CompactEnvelopesInFlightTogetherInASession sends two compact envelopes into one
// session, the first still running when the second arrives: each is answered, as two full
// requests with different ids would be.
func TestRCP_CompactEnvelopesInFlightTogetherInASession(t *testing.T) {
	release := make(chan struct{})
	url := rcpServe(t, rcpServer(release), httpx.RCPOptions{Sessions: true})
	header := map[string]string{"RCP-Session": sessionToken(t, url)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first := make(chan []byte, 1)
	go func() {
		_, b, err := rcpTryPost(ctx, url, "/rcp/retrieve", `{"method":"retrieve","params":{"wait":true}}`, header)
		if err != nil {
			b = []byte(err.Error())
		}
		first <- b
	}()
	time.Sleep(50 * time.Millisecond) // the first is in flight
	_, second := rcpPost(t, url, "/rcp/ping", `{"method":"ping","params":{"nonce":2}}`, header)
	checkCompactAnswer(t, second, 0)
	close(release)
	if b := <-first; ctx.Err() != nil {
		t.Fatalf("the first compact envelope was never answered: %s", b)
	} else {
		checkCompactAnswer(t, b, 0)
	}
}

// TestRCP_ASecondInitializeLeavesTheSessionOpen: in session mode, an initialize sent in a
// session that is already initialized is -32600 (RCP/1 §13), and the session goes on.
// TestRCP_ABatchWhileTheSessionsLastIsInFlight: a session answers one batch at a time (its
// answer carries no id to tell two apart), so a second batch while the first is in flight is
// refused at once with -32600, and the first is still answered.
func TestRCP_ABatchWhileTheSessionsLastIsInFlight(t *testing.T) {
	url := rcpServe(t, rcpServer(nil), httpx.RCPOptions{Sessions: true})
	inSession := map[string]string{"RCP-Session": sessionToken(t, url)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type answer struct {
		b   []byte
		err error
	}
	// The first batch and a probe may reach the session in either order on a loaded
	// machine: when a probe was in flight as the first arrived, the first is the one refused,
	// and the attempt is made again.
	for attempt := 1; ; attempt++ {
		first := make(chan answer, 1)
		go func() { // waits for its request's deadline (500 ms), then is answered -32014
			_, b, err := rcpTryPost(ctx, url, "/rcp", `[{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"wait":true}}]`, inSession)
			first <- answer{b, err}
		}()
		// Until the first batch is in, a second one is simply answered; once it is, refused.
		refused := false
		for deadline := time.Now().Add(2 * time.Second); !refused && time.Now().Before(deadline); {
			_, b := rcpPost(t, url, "/rcp", `[{"jsonrpc":"2.0","id":2,"method":"ping","params":{"nonce":1}}]`, inSession)
			if code := jsonrpc.Field(jsonrpc.Field(b, "error"), "code"); string(code) == "-32600" {
				refused = true
			}
			select {
			case a := <-first:
				first <- a // the first is over: no probe can overlap it any more
				deadline = time.Now()
			default:
				time.Sleep(10 * time.Millisecond)
			}
		}
		a := <-first
		if a.err != nil {
			t.Fatalf("the first batch's POST: %v (its answer went to the second batch)", a.err)
		}
		if !refused && bytes.Contains(a.b, []byte(`-32600`)) && attempt < 5 {
			continue // a probe was in flight when the first arrived
		}
		if !refused {
			t.Errorf("no second batch was refused while the first was in flight (attempt %d)", attempt)
		}
		if !bytes.Contains(a.b, []byte(`"id":1`)) {
			t.Errorf("the first batch's answer: %s", a.b)
		}
		return
	}
}

func TestRCP_ASecondInitializeLeavesTheSessionOpen(t *testing.T) {
	url := rcpServe(t, rcpServer(nil), httpx.RCPOptions{Sessions: true})
	header := map[string]string{"RCP-Session": sessionToken(t, url)}
	_, b := rcpPost(t, url, "/rcp/initialize", `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1,"client":{"name":"t"}}}`, header)
	if code := jsonrpc.Field(jsonrpc.Field(b, "error"), "code"); string(code) != "-32600" {
		t.Fatalf("a second initialize: %s; want -32600", b)
	}
	status, b := rcpPost(t, url, "/rcp/ping", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, header)
	if status != http.StatusOK || jsonrpc.Field(b, "result") == nil {
		t.Fatalf("after it, a ping in the session: HTTP %d %s; want 200 with a result", status, b)
	}
}
