package httpload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// request is what the fake servers read of a request body.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name      string `json:"name"`
		Arguments struct {
			Text string `json:"text"`
		} `json:"arguments"`
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// checkRequest reports what is wrong with a request, "" if nothing.
func checkRequest(r *http.Request, body []byte) string {
	want := map[string]string{
		"Content-Type":         "application/json",
		"Accept":               "application/json, text/event-stream",
		"Mcp-Protocol-Version": ProtocolVersion,
		"Mcp-Method":           "tools/call",
		"Mcp-Name":             "echo",
	}
	for k, v := range want {
		if got := r.Header.Values(k); len(got) != 1 || got[0] != v {
			return fmt.Sprintf("header %s is %q, want %q", k, got, v)
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != "/mcp" {
		return fmt.Sprintf("%s %s, want POST /mcp", r.Method, r.URL.Path)
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return "body: " + err.Error()
	}
	switch {
	case req.JSONRPC != "2.0" || string(req.ID) != "1" || req.Method != "tools/call" || req.Params.Name != "echo":
		return "body: " + string(body)
	case string(req.Params.Meta["io.modelcontextprotocol/protocolVersion"]) != `"`+ProtocolVersion+`"`:
		return "body: no protocolVersion _meta: " + string(body)
	case string(req.Params.Meta["io.modelcontextprotocol/clientCapabilities"]) != `{}`:
		return "body: no clientCapabilities _meta: " + string(body)
	}
	return ""
}

// echoJSON is the JSON-RPC answer echoing text.
func echoJSON(text string) string {
	q, _ := json.Marshal(text)
	return `{"jsonrpc":"2.0","id":1,"result":{"_meta":{"x":1},"content":[{"type":"text","text":` + string(q) + `}]}}`
}

// fakeHandler checks each request and then calls answer with the request's
// text.
func fakeHandler(answer func(w http.ResponseWriter, text string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if msg := checkRequest(r, body); msg != "" {
			http.Error(w, msg, http.StatusBadRequest)
			return
		}
		var req request
		json.Unmarshal(body, &req)
		answer(w, req.Params.Arguments.Text)
	})
}

// fake starts a server with fakeHandler(answer).
func fake(t *testing.T, answer func(w http.ResponseWriter, text string)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(fakeHandler(answer))
	t.Cleanup(srv.Close)
	return srv
}

func jsonAnswer(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, echoJSON(text))
}

func newClient(t *testing.T, url string, conns int, text string) *Client {
	t.Helper()
	c, err := New(Config{URL: url + "/mcp", Conns: conns, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func checkResult(t *testing.T, res Result, requests, errs int) {
	t.Helper()
	if res.Requests != requests || res.Errors != errs {
		t.Fatalf("%d requests, %d errors; want %d and %d (%v)", res.Requests, res.Errors, requests, errs, res)
	}
	if len(res.Latencies) != requests || !slices.IsSorted(res.Latencies) {
		t.Fatalf("%d latencies (sorted: %v), want %d sorted", len(res.Latencies), slices.IsSorted(res.Latencies), requests)
	}
	if requests > 0 && (res.Elapsed <= 0 || res.PerSecond() <= 0 || res.Percentile(50) <= 0 ||
		res.Percentile(99) < res.Percentile(50) || res.Elapsed < res.Percentile(100)) {
		t.Fatalf("inconsistent timings: %v", res)
	}
	if (errs == 0) != (res.FirstError == "") {
		t.Fatalf("FirstError %q with %d errors", res.FirstError, errs)
	}
}

func TestDriveJSON(t *testing.T) {
	srv := fake(t, jsonAnswer)
	c := newClient(t, srv.URL, 8, `say "hi" \ é`)
	msg, err := c.Call(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(msg), `"content"`) {
		t.Fatalf("Call returned %s", msg)
	}
	res, err := c.Drive(t.Context(), 500, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, 500, 0)
	if res.SSE != 0 {
		t.Errorf("%d SSE answers, want 0", res.SSE)
	}
}

func TestDefaultText(t *testing.T) {
	var got atomic.Value
	srv := fake(t, func(w http.ResponseWriter, text string) {
		got.Store(text)
		jsonAnswer(w, text)
	})
	c := newClient(t, srv.URL, 1, "")
	if _, err := c.Call(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got.Load() != DefaultText {
		t.Fatalf("text %q, want %q", got.Load(), DefaultText)
	}
}

func TestDriveSSE(t *testing.T) {
	srv := fake(t, func(w http.ResponseWriter, text string) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		// A comment, a notification split over two data lines, then the
		// answer without the optional space and with CRLF line ends.
		io.WriteString(w, ": keep-alive\n\n")
		io.WriteString(w, "event: message\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\ndata: \"params\":{\"progress\":1}}\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "event: message\r\ndata:"+echoJSON(text)+"\r\n\r\n")
	})
	c := newClient(t, srv.URL, 4, "")
	if _, err := c.Call(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := c.Drive(t.Context(), 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, 100, 0)
	if res.SSE != 100 {
		t.Errorf("%d SSE answers, want 100", res.SSE)
	}
}

func TestSSEWithoutBlankLineAtEnd(t *testing.T) {
	srv := fake(t, func(w http.ResponseWriter, text string) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+echoJSON(text))
	})
	if _, err := newClient(t, srv.URL, 1, "").Call(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestBadAnswers(t *testing.T) {
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, text string)
		want   string // in the error
	}{
		{"other text", func(w http.ResponseWriter, text string) { jsonAnswer(w, text+"!") }, "not one text item"},
		{"two items", func(w http.ResponseWriter, text string) {
			w.Header().Set("Content-Type", "application/json")
			q, _ := json.Marshal(text)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":%s},{"type":"text","text":%s}]}}`, q, q)
		}, "not one text item"},
		{"isError", func(w http.ResponseWriter, text string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[{"type":"text","text":"boom"}]}}`)
		}, "the tool failed"},
		{"error member", func(w http.ResponseWriter, text string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad params"}}`)
		}, "-32602: bad params"},
		{"other id", func(w http.ResponseWriter, text string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, strings.Replace(echoJSON(text), `"id":1`, `"id":2`, 1))
		}, "response to id 1"},
		{"status 400", func(w http.ResponseWriter, text string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, echoJSON(text))
		}, "HTTP 400"},
		{"status 202", func(w http.ResponseWriter, text string) { w.WriteHeader(http.StatusAccepted) }, "HTTP 202"},
		{"text/plain", func(w http.ResponseWriter, text string) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, echoJSON(text))
		}, "Content-Type"},
		{"not JSON", func(w http.ResponseWriter, text string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{")
		}, "not a JSON-RPC message"},
		{"SSE without answer", func(w http.ResponseWriter, text string) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
		}, "without an answer"},
		{"SSE not JSON", func(w http.ResponseWriter, text string) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: nope\n\n")
		}, "not JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fake(t, tc.answer)
			c := newClient(t, srv.URL, 2, "")
			if _, err := c.Call(t.Context()); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Call: %v, want an error with %q", err, tc.want)
			}
			res, err := c.Drive(t.Context(), 20, 0)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, res, 20, 20)
			if !strings.Contains(res.FirstError, tc.want) {
				t.Fatalf("FirstError %q, want %q in it", res.FirstError, tc.want)
			}
		})
	}
}

func TestMissingHeaderRefused(t *testing.T) {
	// The fake server's own check must catch a missing header, or the tests
	// above prove nothing about the headers.
	srv := fake(t, jsonAnswer)
	c := newClient(t, srv.URL, 1, "")
	c.header = c.header.Clone()
	c.header.Del("Mcp-Name")
	if _, err := c.Call(t.Context()); err == nil || !strings.Contains(err.Error(), "Mcp-Name") {
		t.Fatalf("Call: %v, want the missing Mcp-Name reported", err)
	}
}

func TestExtraHeader(t *testing.T) {
	var got atomic.Value
	check := fakeHandler(jsonAnswer)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		check.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL + "/mcp", Header: http.Header{"Authorization": {"Bearer x"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got.Load() != "Bearer x" {
		t.Fatalf("Authorization %q", got.Load())
	}
}

func TestKeepAlive(t *testing.T) {
	const conns = 4
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(time.Millisecond) // keep every connection busy
		jsonAnswer(w, DefaultText)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newClient(t, srv.URL, conns, "")
	res, err := c.Drive(t.Context(), 400, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, 400, 0)
	if res.Dials != conns || opened.Load() != conns {
		t.Fatalf("%d dials, %d connections opened; want %d", res.Dials, opened.Load(), conns)
	}
	res, err = c.Drive(t.Context(), 400, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The connections are kept: 400 requests, no more than one new connection (net/http may
	// replace one whose return to the idle pool raced with the next request, as a loaded CI
	// machine showed once).
	if res.Dials > 1 || opened.Load() > conns+1 {
		t.Fatalf("second drive: %d dials, %d connections opened in all; want at most 1 and %d", res.Dials, opened.Load(), conns+1)
	}
}

func TestConcurrency(t *testing.T) {
	// Drive keeps exactly Conns requests outstanding.
	const conns = 6
	var now, peak atomic.Int64
	srv := fake(t, func(w http.ResponseWriter, text string) {
		n := now.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		now.Add(-1)
		jsonAnswer(w, text)
	})
	c := newClient(t, srv.URL, conns, "")
	res, err := c.Drive(t.Context(), 60, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, 60, 0)
	if peak.Load() != conns {
		t.Fatalf("at most %d requests outstanding, want %d", peak.Load(), conns)
	}
}

func TestDriveDuration(t *testing.T) {
	srv := fake(t, jsonAnswer)
	c := newClient(t, srv.URL, 2, "")
	res, err := c.Drive(t.Context(), 0, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, res.Requests, 0)
	if res.Requests == 0 || res.Elapsed < 100*time.Millisecond {
		t.Fatalf("%v, want at least 100 ms of requests", res)
	}
}

func TestDriveFunc(t *testing.T) {
	srv := fake(t, jsonAnswer)
	c := newClient(t, srv.URL, 3, "")
	calls := 0
	res, err := c.DriveFunc(t.Context(), func() bool { calls++; return calls <= 7 })
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, 7, 0)
	if calls != 8 {
		t.Fatalf("next called %d times, want 8", calls)
	}
	res, err = c.DriveFunc(t.Context(), func() bool { return false })
	if err != nil || res.Requests != 0 || res.Elapsed != 0 || res.PerSecond() != 0 || res.Percentile(50) != 0 {
		t.Fatalf("no requests: %v, %v", res, err)
	}
}

func TestServerGone(t *testing.T) {
	srv := fake(t, jsonAnswer)
	url := srv.URL
	srv.Close()
	c := newClient(t, url, 4, "")
	if _, err := c.Call(t.Context()); err == nil {
		t.Fatal("Call succeeded without a server")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		calls := 0
		res, err := c.DriveFunc(t.Context(), func() bool { calls++; return calls < 1_000_000 })
		if err == nil || res.Requests != 0 {
			t.Errorf("Drive without a server: %v, %v; want an error and no answers", res, err)
		}
		if calls > 100 {
			t.Errorf("next called %d times after the first failure", calls)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Drive did not stop on a failed exchange")
	}
}

func TestDriveCancelled(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	srv := fake(t, func(w http.ResponseWriter, text string) {
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		jsonAnswer(w, text)
	})
	defer once.Do(func() { close(release) })
	c := newClient(t, srv.URL, 2, "")
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Drive(ctx, 0, time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drive: %v, want the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Drive took %v to notice the deadline", d)
	}
	once.Do(func() { close(release) })
}

func TestConfigErrors(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:80/mcp", "ftp://x/mcp", "http://", "http://[::1"} {
		if c, err := New(Config{URL: u}); err == nil {
			c.Close()
			t.Errorf("New(%q) succeeded", u)
		}
	}
	c, err := New(Config{URL: "http://127.0.0.1:1/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Drive(t.Context(), 0, 0); err == nil {
		t.Error("Drive with neither a count nor a duration succeeded")
	}
}

func TestPercentile(t *testing.T) {
	var r Result
	for i := 1; i <= 100; i++ {
		r.Latencies = append(r.Latencies, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{0: 1, 1: 1, 50: 50, 99: 99, 99.5: 100, 100: 100} {
		if got := r.Percentile(p); got != want {
			t.Errorf("Percentile(%v) = %v, want %v", p, got, want)
		}
	}
	r.Requests, r.Elapsed = 100, time.Second
	if r.PerSecond() != 100 {
		t.Errorf("PerSecond %v", r.PerSecond())
	}
	if s := r.String(); !strings.Contains(s, "100 req/s") {
		t.Errorf("String: %s", s)
	}
}

func TestSSEData(t *testing.T) {
	body := ": c\n\nretry: 5\ndata: a\ndata:b\n\nevent: x\r\ndata: c\r\n\r\n\n\ndata: d"
	var got []string
	for d := range sseData([]byte(body)) {
		got = append(got, string(d))
	}
	if want := []string{"a\nb", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// relayServer serves an mcp.Server with an echo tool through httpx.NewMCPHandler on
// 127.0.0.1, behind a handler that records the Mcp-Session-Id of each tools/call ("" when
// it has none).
func relayServer(t *testing.T) (*httptest.Server, func() map[string]int) {
	t.Helper()
	s := mcp.NewServer(mcp.Implementation{Name: "httpload-test", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, error) {
			return mcp.TextResult(in.Text), nil
		})
	h := httpx.NewMCPHandler(s, nil)
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"tools/call"`) {
			mu.Lock()
			calls[r.Header.Get("Mcp-Session-Id")]++
			mu.Unlock()
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		h.Close()
	})
	return srv, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(calls)
	}
}

// TestSessionsOnRelay drives a real server in the initialize generation: every tools/call
// comes on one of the sessions opened, the requests spread over them.
func TestSessionsOnRelay(t *testing.T) {
	srv, calls := relayServer(t)
	c, err := New(Config{URL: srv.URL + "/mcp", Conns: 8, Sessions: 3, Text: `say "hi"`})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := c.Drive(t.Context(), 300, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, 300, 0)
	got := calls()
	if len(got) != 3 || got[""] != 0 {
		t.Fatalf("tools/call per Mcp-Session-Id: %v; want 3 sessions", got)
	}
	// The same server answers self-contained 2026-07-28 requests too.
	bare, err := New(Config{URL: srv.URL + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, err := bare.Call(t.Context()); err != nil {
		t.Fatalf("2026-07-28 request: %v", err)
	}
}

// TestSessionsSSE drives a server that gives no session id, answers initialize and
// tools/call as one-event SSE streams, and negotiates an older version: each call carries
// that version, the tool asked for and an id of its own, and an answer to another id is bad.
func TestSessionsSSE(t *testing.T) {
	var (
		mu       sync.Mutex
		problems []string
		ids      = map[string]bool{}
		wrongID  atomic.Bool
	)
	problem := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req request
		if err := json.Unmarshal(body, &req); err != nil {
			problem("body %s: %v", body, err)
		}
		if r.Header.Get("Mcp-Session-Id") != "" {
			problem("%s with a session id", req.Method)
		}
		sse := func(msg string) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: "+msg+"\n\n")
		}
		switch req.Method {
		case "initialize":
			if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
				problem("initialize with MCP-Protocol-Version %q", v)
			}
			sse(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1"}}}`)
			return
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "2025-06-18" {
			problem("%s with MCP-Protocol-Version %q", req.Method, v)
		}
		if req.Method != "tools/call" || req.Params.Name != "proxied_echo" || req.Params.Meta != nil {
			problem("request %s", body)
		}
		mu.Lock()
		if ids[string(req.ID)] {
			problems = append(problems, "id "+string(req.ID)+" sent twice")
		}
		ids[string(req.ID)] = true
		mu.Unlock()
		id := req.ID
		if wrongID.Load() {
			id = json.RawMessage("1")
		}
		q, _ := json.Marshal(req.Params.Arguments.Text)
		sse(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":` + string(q) + `}]}}`)
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL + "/mcp", Conns: 4, Sessions: 1, Tool: "proxied_echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Drive(t.Context(), 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, 100, 0)
	if res.SSE != 100 {
		t.Errorf("%d SSE answers, want 100", res.SSE)
	}
	wrongID.Store(true)
	if _, err := c.Call(t.Context()); err == nil || !strings.Contains(err.Error(), "response to id 102") {
		t.Errorf("an answer to another id: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatal(strings.Join(problems, "\n"))
	}
}

// TestSessionsRefused: a failed initialize fails Call and Drive.
func TestSessionsRefused(t *testing.T) {
	srv := fake(t, jsonAnswer) // answers 400 to initialize
	c, err := New(Config{URL: srv.URL + "/mcp", Sessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(t.Context()); err == nil || !strings.Contains(err.Error(), "initialize: HTTP 400") {
		t.Errorf("Call: %v", err)
	}
	if _, err := c.Drive(t.Context(), 1, 0); err == nil {
		t.Error("Drive succeeded")
	}
}
