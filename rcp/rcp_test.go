package rcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/relayrt/relay/rcp"
	"github.com/relayrt/relay/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testServer advertises retrieve (with a small maxK), streaming and log, and a non-writable
// index; "rerank" is an RCP method it does not advertise.
func testServer() *rcp.Server {
	s := rcp.NewServer(rcp.Implementation{Name: "t", Version: "1"}, &rcp.Options{Conformance: "L0", RequestTimeout: 300 * time.Millisecond})
	s.Advertise("retrieve", map[string]any{"maxK": 5, "modes": []string{"sparse"}})
	s.Advertise("streaming", nil)
	s.Advertise("log", nil)
	s.Advertise("index", map[string]any{"writable": false})
	s.Handle("retrieve", func(ctx context.Context, req *rcp.Request) (any, error) {
		var p struct {
			Query string `json:"query"`
			K     *int   `json:"k"`
			Mode  string `json:"mode"`
			Wait  bool   `json:"wait"`
		}
		if err := req.Decode(&p); err != nil {
			return nil, err
		}
		if p.K != nil && *p.K < 0 {
			return nil, rcp.InvalidParams("k", "k must not be negative")
		}
		if p.Mode != "" && p.Mode != "sparse" {
			return nil, rcp.OptionUnsupported("mode", p.Mode)
		}
		req.Progress(0.5, "retrieve", "half", nil)
		req.Log("debug", "not shown at info", nil)
		req.Log("info", "retrieving", nil)
		if p.Wait {
			notify(waitStarted)
			<-ctx.Done()
			select {
			case waitEnded <- ctx.Err():
			default:
			}
			return nil, ctx.Err()
		}
		return map[string]any{"hits": []any{}}, nil
	})
	s.Handle("index/add", func(ctx context.Context, req *rcp.Request) (any, error) { return map[string]any{}, nil })
	return s
}

// waitStarted and waitEnded let a test see a waiting retrieve start, and end with its
// context's error: context.Canceled when cancelled, DeadlineExceeded at its deadline.
var (
	waitStarted = make(chan struct{}, 16)
	waitEnded   = make(chan error, 16)
)

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// exchange sends frames to a fresh connection, closes the input, and returns every frame the
// server wrote. The same table runs over any transport that provides an exchange.
type exchange func(t *testing.T, frames ...string) []string

func overMemory(t *testing.T, frames ...string) []string {
	t.Helper()
	conn := testServer().Runtime(runtime.WithLogger(zap.NewNop())).Connect(context.Background())
	ctx := context.Background()
	for _, f := range frames {
		if err := conn.Send(ctx, []byte(f)); err != nil {
			break // the server stopped reading (after shutdown)
		}
	}
	conn.CloseInput()
	var out []string
	for {
		f, err := conn.Receive(ctx)
		if err != nil {
			break
		}
		out = append(out, string(f))
	}
	conn.Close()
	return out
}

const (
	initOK   = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":3,"client":{"name":"c"},"capabilities":{"log":{}},"_meta":{"logLevel":"info"}}}`
	retrieve = `{"jsonrpc":"2.0","id":7,"method":"retrieve","params":{"query":"q","k":3}}`
)

// expect is one answer the table wants: the id (raw JSON) and either an error code or, when
// code is 0, a result containing want.
type expect struct {
	id   string
	code int64
	want string
}

type rcpCase struct {
	rule   string
	frames []string
	expect []expect // answers (responses) in any order; notifications are checked by notes
	notes  []string // substrings of notifications that must appear, in order
	none   bool     // nothing at all may be written
}

var lifecycleTable = []rcpCase{
	{rule: "C5 info before initialize reports the default capabilities and conformance",
		frames: []string{`{"jsonrpc":"2.0","id":1,"method":"info","params":{}}`},
		expect: []expect{{id: "1", want: `"conformance":"L0"`}}},
	{rule: "C5 ping echoes its nonce, before initialize too",
		frames: []string{`{"jsonrpc":"2.0","id":"p","method":"ping","params":{"nonce":"n-42"}}`, `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"nonce":17}}`},
		expect: []expect{{id: `"p"`, want: `"nonce":"n-42"`}, {id: "2", want: `"nonce":17`}}},
	{rule: "C6 a gated method before initialize is -32001",
		frames: []string{retrieve},
		expect: []expect{{id: "7", code: -32001}}},
	{rule: "C6 an unknown method before initialize is -32001 too (only info, ping and shutdown precede initialize)",
		frames: []string{`{"jsonrpc":"2.0","id":8,"method":"nope","params":{}}`},
		expect: []expect{{id: "8", code: -32001}}},
	{rule: "C5 initialize negotiates min(client, server)",
		frames: []string{initOK},
		expect: []expect{{id: `"init"`, want: `"protocolVersion":1`}}},
	{rule: "C6 a failed initialize (version 0) stays uninitialised, and a retry succeeds",
		frames: []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":0,"client":{"name":"c"}}}`,
			retrieve,
			`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1,"client":{"name":"c"}}}`,
		},
		expect: []expect{{id: "1", code: -32002}, {id: "7", code: -32001}, {id: "2", want: `"protocolVersion":1`}}},
	{rule: "C5 protocolVersion must be an integer (-32602 with data.field)",
		frames: []string{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1"}}`},
		expect: []expect{{id: "1", code: -32602, want: `"field":"protocolVersion"`}}},
	{rule: "C6 a second successful initialize is -32600",
		frames: []string{initOK, strings.Replace(initOK, `"init"`, `"again"`, 1)},
		expect: []expect{{id: `"init"`}, {id: `"again"`, code: -32600}}},
	{rule: "C6 a method RCP does not define is -32004",
		frames: []string{initOK, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`},
		expect: []expect{{id: `"init"`}, {id: "3", code: -32004}}},
	{rule: "C6 an RCP method the server did not advertise is -32003",
		frames: []string{initOK, `{"jsonrpc":"2.0","id":4,"method":"rerank","params":{}}`},
		expect: []expect{{id: `"init"`}, {id: "4", code: -32003}}},
	{rule: "C6 index/add on a read-only index is -32003",
		frames: []string{initOK, `{"jsonrpc":"2.0","id":4,"method":"index/add","params":{}}`},
		expect: []expect{{id: `"init"`}, {id: "4", code: -32003}}},
	{rule: "C6 an unadvertised option is -32005 with data.option",
		frames: []string{initOK, `{"jsonrpc":"2.0","id":5,"method":"retrieve","params":{"query":"q","mode":"dense"}}`},
		expect: []expect{{id: `"init"`}, {id: "5", code: -32005, want: `"option":"mode"`}}},
	{rule: "C5 malformed params are -32602 with data.field",
		frames: []string{initOK, `{"jsonrpc":"2.0","id":6,"method":"retrieve","params":{"query":"q","k":-1}}`,
			`{"jsonrpc":"2.0","id":9,"method":"retrieve","params":{"query":5}}`},
		expect: []expect{{id: `"init"`}, {id: "6", code: -32602, want: `"field":"k"`}, {id: "9", code: -32602, want: `"field":"query"`}}},
	{rule: "C1 params that are not an object are -32602",
		frames: []string{initOK, `{"jsonrpc":"2.0","id":6,"method":"retrieve","params":[1]}`},
		expect: []expect{{id: `"init"`}, {id: "6", code: -32602, want: `"field":"params"`}}},
	{rule: "C1 string and numeric ids are echoed with their type",
		frames: []string{initOK, strings.Replace(retrieve, `"id":7`, `"id":"7"`, 1), strings.Replace(retrieve, `"id":7`, `"id":12345678901234567890`, 1)},
		expect: []expect{{id: `"init"`}, {id: `"7"`, want: `"hits":[]`}, {id: "12345678901234567890", want: `"hits":[]`}}},
	{rule: "C1 notifications of every kind get no reply, unknown and gated ones included",
		frames: []string{
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}`,
			`{"jsonrpc":"2.0","method":"retrieve","params":{"query":"q"}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":999}}`,
			`{"jsonrpc":"2.0","method":"not/a/method"}`,
		},
		none: true},
	{rule: "C5 a cancel carrying an id is malformed: -32600",
		frames: []string{`{"jsonrpc":"2.0","id":10,"method":"notifications/cancel","params":{"id":7}}`},
		expect: []expect{{id: "10", code: -32600}}},
	{rule: "C5 notifications/cancel still owes exactly one response: -32006",
		frames: []string{initOK, `{"jsonrpc":"2.0","id":11,"method":"retrieve","params":{"query":"q","wait":true}}`,
			`{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":11,"reason":"user"}}`},
		expect: []expect{{id: `"init"`}, {id: "11", code: -32006}}},
	{rule: "C6 a request past its deadline is -32014",
		frames: []string{initOK, `{"jsonrpc":"2.0","id":12,"method":"retrieve","params":{"query":"q","wait":true}}`},
		expect: []expect{{id: `"init"`}, {id: "12", code: -32014}}},
	{rule: "C7 progress only with a token (and streaming advertised); logs at or above the client's level",
		frames: []string{initOK, `{"jsonrpc":"2.0","id":13,"method":"retrieve","params":{"query":"q","_meta":{"progressToken":"tok"}}}`},
		expect: []expect{{id: `"init"`}, {id: "13", want: `"hits"`}},
		notes:  []string{`"method":"notifications/progress","params":{"progressToken":"tok","progress":0.5`, `"method":"notifications/log","params":{"level":"info"`}},
	{rule: "C5 shutdown is allowed before initialize, and nothing after it is started",
		frames: []string{`{"jsonrpc":"2.0","id":14,"method":"shutdown","params":{}}`, `{"jsonrpc":"2.0","id":15,"method":"ping","params":{}}`},
		expect: []expect{{id: "14", want: `{}`}}},
	{rule: "C9 a batch gets an array: notifications make no entry, a malformed member is -32600 with id null",
		frames: []string{initOK, `[` + retrieve + `,{"jsonrpc":"2.0","method":"notifications/x"},42,{"jsonrpc":"2.0","id":"b","method":"ping","params":{}}]`},
		expect: []expect{{id: `"init"`}, {id: "7"}, {id: "null", code: -32600}, {id: `"b"`}}},
	{rule: "C9 an empty batch is one -32600 with id null",
		frames: []string{`[]`},
		expect: []expect{{id: "null", code: -32600}}},
	{rule: "C9 a batch of notifications produces nothing",
		frames: []string{`[{"jsonrpc":"2.0","method":"notifications/a"},{"jsonrpc":"2.0","method":"notifications/b"}]`},
		none:   true},
	{rule: "C1 an unreadable request is answered with id null",
		frames: []string{`{"jsonrpc":"2.0","id":`, `{"jsonrpc":"2.0","id":null,"method":"ping"}`},
		expect: []expect{{id: "null", code: -32700}, {id: "null", code: -32600}}},
}

func runTable(t *testing.T, cases []rcpCase, ex exchange) {
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			out := ex(t, tc.frames...)
			if tc.none {
				if len(out) != 0 {
					t.Fatalf("want no output, got %q", out)
				}
				return
			}
			var answers []map[string]json.RawMessage
			var notes []string
			for _, f := range out {
				if strings.HasPrefix(f, "[") {
					var batch []map[string]json.RawMessage
					if err := json.Unmarshal([]byte(f), &batch); err != nil {
						t.Fatalf("bad batch answer %q", f)
					}
					answers = append(answers, batch...)
					continue
				}
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(f), &m); err != nil {
					t.Fatalf("bad frame %q", f)
				}
				if m["method"] != nil {
					notes = append(notes, f)
					continue
				}
				if m["id"] == nil {
					t.Errorf("C1: an RCP error response always carries id: %s", f)
				}
				answers = append(answers, m)
			}
			if len(answers) != len(tc.expect) {
				t.Fatalf("got %d answers, want %d: %q", len(answers), len(tc.expect), out)
			}
			for _, want := range tc.expect {
				found := false
				for i, a := range answers {
					if a == nil || string(a["id"]) != want.id {
						continue
					}
					var e struct{ Code int64 }
					json.Unmarshal(a["error"], &e)
					body := string(a["result"])
					if want.code != 0 {
						body = string(a["error"])
					}
					if e.Code == want.code && strings.Contains(body, want.want) {
						found, answers[i] = true, nil
						break
					}
				}
				if !found {
					t.Errorf("no answer with id %s, code %d, containing %q in %q", want.id, want.code, want.want, out)
				}
			}
			at := 0
			for _, n := range notes {
				if at < len(tc.notes) && strings.Contains(n, tc.notes[at]) {
					at++
				}
			}
			if at != len(tc.notes) {
				t.Errorf("notifications %q lack %q", notes, tc.notes[at])
			}
		})
	}
}

func TestRCP_OverMemory(t *testing.T) { runTable(t, lifecycleTable, overMemory) }

func TestProgressNeedsStreaming(t *testing.T) {
	s := rcp.NewServer(rcp.Implementation{Name: "t"}, nil)
	s.Advertise("retrieve", map[string]any{"maxK": 5})
	s.Handle("retrieve", func(ctx context.Context, req *rcp.Request) (any, error) {
		if req.Streaming() {
			t.Error("progress offered although streaming is not advertised")
		}
		req.Progress(0.5, "x", "", nil)
		return map[string]any{"hits": []any{}}, nil
	})
	conn := s.Runtime(runtime.WithLogger(zap.NewNop())).Connect(context.Background())
	ctx := context.Background()
	conn.Send(ctx, []byte(initOK))
	conn.Send(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"q","_meta":{"progressToken":1}}}`))
	conn.CloseInput()
	var frames []string
	for {
		f, err := conn.Receive(ctx)
		if err != nil {
			break
		}
		frames = append(frames, string(f))
	}
	conn.Close()
	if len(frames) != 2 || strings.Contains(fmt.Sprint(frames), "progress\"") {
		t.Fatalf("frames %q", frames)
	}
}

func TestOversizedFrameIs32013WithNullID(t *testing.T) {
	// DIGEST C1/C2: a frame over the limit is answered -32013 (PayloadTooLarge), id null, and
	// the next frame is served.
	in := make(chan runtime.Inbound, 2)
	out := make(chan []byte, 4)
	done := make(chan error, 1)
	go func() {
		done <- testServer().Runtime(runtime.WithLogger(zap.NewNop())).Serve(context.Background(), in, out)
	}()
	in <- runtime.Inbound{TooLarge: 1024}
	in <- runtime.Inbound{Frame: []byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`)}
	close(in)
	var frames []string
	for f := range out {
		frames = append(frames, string(f))
	}
	<-done
	if len(frames) != 2 || !strings.Contains(frames[0], `"id":null`) || !strings.Contains(frames[0], `"code":-32013`) ||
		!strings.Contains(frames[1], `"id":1,"result"`) {
		t.Fatalf("frames %q", frames)
	}
}

func TestNoNaNEverEmitted(t *testing.T) {
	// DIGEST C1: never NaN or Infinity on the wire, even when a handler produces one.
	s := rcp.NewServer(rcp.Implementation{Name: "nan"}, nil)
	s.Advertise("retrieve", map[string]any{"maxK": 1})
	s.Handle("retrieve", func(ctx context.Context, req *rcp.Request) (any, error) {
		return map[string]any{"hits": []any{map[string]any{"id": "x", "score": math.NaN()}}}, nil
	})
	conn := s.Runtime(runtime.WithLogger(zap.NewNop())).Connect(context.Background())
	ctx := context.Background()
	conn.Send(ctx, []byte(initOK))
	conn.Send(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"q"}}`))
	conn.CloseInput()
	var all string
	for {
		f, err := conn.Receive(ctx)
		if err != nil {
			break
		}
		all += string(f)
	}
	conn.Close()
	if strings.Contains(all, "NaN") || strings.Contains(all, "Inf") || !strings.Contains(all, `"id":2,"error"`) {
		t.Fatalf("output %s", all)
	}
}
