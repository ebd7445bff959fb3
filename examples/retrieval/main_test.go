package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/relayrt/relay/examples/retrieval/engine"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/hosttest"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "retrieval")
	if err != nil {
		panic(err)
	}
	bin = hosttest.Exe(filepath.Join(dir, "retrieval"))
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// transport sends one frame and returns the frames written back for it (notifications
// first, the answer last). Both the stdio binary and the HTTP binding implement it.
type transport interface {
	call(t *testing.T, frame string) []map[string]json.RawMessage
}

// stdioTransport drives the real binary over pipes.
type stdioTransport struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startStdio(t *testing.T) *stdioTransport {
	cmd := exec.Command(bin)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st := &stdioTransport{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("C2: EOF on stdin must end the server cleanly: %v", err)
		}
	})
	return st
}

func (s *stdioTransport) call(t *testing.T, frame string) []map[string]json.RawMessage {
	t.Helper()
	fmt.Fprintln(s.in, frame)
	var id json.RawMessage
	if m := decodeFrame(t, []byte(frame)); m != nil {
		id = m["id"]
	}
	var got []map[string]json.RawMessage
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading the answer to %s: %v", frame, err)
		}
		m := decodeFrame(t, line)
		got = append(got, m)
		if m["method"] == nil && string(m["id"]) == string(id) {
			return got
		}
	}
}

// httpTransport drives the same server over RCP's HTTP binding, stateless.
type httpTransport struct{ url string }

func startHTTP(t *testing.T) *httpTransport {
	h := httpx.NewRCPHandler(newServer(engine.NewDefault()), &httpx.RCPOptions{Logger: zap.NewNop()})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { http.DefaultClient.CloseIdleConnections(); srv.Close(); h.Close() })
	return &httpTransport{url: srv.URL + "/rcp/"}
}

func (h *httpTransport) call(t *testing.T, frame string) []map[string]json.RawMessage {
	t.Helper()
	m := decodeFrame(t, []byte(frame))
	var method string
	json.Unmarshal(m["method"], &method)
	req, _ := http.NewRequest(http.MethodPost, h.url+method, strings.NewReader(frame))
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("C3: a JSON-RPC answer is HTTP 200, got %d", resp.StatusCode)
	}
	var got []map[string]json.RawMessage
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			line = data
		} else if resp.Header.Get("Content-Type") == "text/event-stream" || line == "" {
			continue
		}
		got = append(got, decodeFrame(t, []byte(line)))
	}
	return got
}

func decodeFrame(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %q", b)
	}
	return m
}

type hit struct {
	ID    string
	Score float64
}

func answer(t *testing.T, frames []map[string]json.RawMessage) (result map[string]json.RawMessage, code int64, data map[string]any) {
	t.Helper()
	last := frames[len(frames)-1]
	if e := last["error"]; e != nil {
		var er struct {
			Code int64
			Data map[string]any
		}
		json.Unmarshal(e, &er)
		return nil, er.Code, er.Data
	}
	json.Unmarshal(last["result"], &result)
	return result, 0, nil
}

func hits(t *testing.T, result map[string]json.RawMessage) []hit {
	var hs []hit
	if err := json.Unmarshal(result["hits"], &hs); err != nil {
		t.Fatalf("hits: %v", err)
	}
	return hs
}

const initialize = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"client":{"name":"test"},"capabilities":{"streaming":{},"log":{}},"_meta":{"logLevel":"debug"}}}`

// transports starts the server each way a test runs it against: the binary over stdio, and
// the HTTP binding.
var transports = map[string]func(*testing.T) transport{
	"stdio": func(t *testing.T) transport { return startStdio(t) },
	"http":  func(t *testing.T) transport { return startHTTP(t) },
}

func TestRetrieval_L2(t *testing.T) {
	for name, start := range transports {
		t.Run(name, func(t *testing.T) { runL2(t, start(t)) })
	}
}

func runL2(t *testing.T, tr transport) {
	res, code, _ := answer(t, tr.call(t, initialize))
	if code != 0 || !strings.Contains(string(res["_meta"]), `"conformance":"L2"`) {
		t.Fatalf("C10: initialize must declare L2: %v %d", res, code)
	}
	var caps map[string]map[string]any
	json.Unmarshal(res["capabilities"], &caps)
	for _, c := range []string{"embed", "retrieve", "rerank", "index", "streaming"} {
		if caps[c] == nil {
			t.Errorf("C10: L2 advertises %s", c)
		}
	}
	maxK := int(caps["retrieve"]["maxK"].(float64))

	t.Run("C5 hits are in descending score order, unique, at most k", func(t *testing.T) {
		for _, mode := range []string{"dense", "sparse", "hybrid"} {
			res, code, _ := answer(t, tr.call(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"retrieve","params":{"query":"parse JSON documents","k":7,"mode":%q}}`, mode)))
			if code != 0 {
				t.Fatalf("%s: code %d", mode, code)
			}
			hs := hits(t, res)
			seen := map[string]bool{}
			if len(hs) == 0 || len(hs) > 7 {
				t.Errorf("%s: %d hits for k=7", mode, len(hs))
			}
			if !sort.SliceIsSorted(hs, func(i, j int) bool { return hs[i].Score > hs[j].Score }) {
				t.Errorf("%s: scores not descending: %v", mode, hs)
			}
			for _, h := range hs {
				if seen[h.ID] {
					t.Errorf("%s: duplicate id %s", mode, h.ID)
				}
				seen[h.ID] = true
			}
			if mode == "sparse" && hs[0].ID != "encoding/json" {
				t.Errorf("sparse: want encoding/json first for a JSON query, got %v", hs[0])
			}
		}
	})
	t.Run("C5 k above maxK is clamped, not rejected", func(t *testing.T) {
		res, code, _ := answer(t, tr.call(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"package","k":%d,"mode":"sparse"}}`, maxK*10)))
		if code != 0 || len(hits(t, res)) > maxK {
			t.Fatalf("code %d, %d hits (maxK %d)", code, len(hits(t, res)), maxK)
		}
	})
	t.Run("C5 negative k is -32602 naming k", func(t *testing.T) {
		_, code, data := answer(t, tr.call(t, `{"jsonrpc":"2.0","id":3,"method":"retrieve","params":{"query":"x","k":-1}}`))
		if code != -32602 || data["field"] != "k" {
			t.Fatalf("code %d data %v", code, data)
		}
	})
	t.Run("C10 the funnel rule candidateK >= rerank.topN >= k", func(t *testing.T) {
		_, code, data := answer(t, tr.call(t, `{"jsonrpc":"2.0","id":4,"method":"retrieve","params":{"query":"x","k":10,"candidateK":5,"rerank":{"topN":5}}}`))
		if code != -32602 || data["field"] == nil {
			t.Fatalf("candidateK < k: code %d data %v", code, data)
		}
		_, code, data = answer(t, tr.call(t, `{"jsonrpc":"2.0","id":5,"method":"retrieve","params":{"query":"x","k":10,"candidateK":50,"rerank":{"topN":5}}}`))
		if code != -32602 || data["field"] != "rerank.topN" {
			t.Fatalf("topN < k: code %d data %v", code, data)
		}
	})
	t.Run("C6 an unsupported mode is -32005 naming the option", func(t *testing.T) {
		_, code, data := answer(t, tr.call(t, `{"jsonrpc":"2.0","id":6,"method":"retrieve","params":{"query":"x","k":3,"mode":"graph"}}`))
		if code != -32005 || data["option"] != "mode" {
			t.Fatalf("code %d data %v", code, data)
		}
	})
	t.Run("C5 hybrid fuses both rankings", func(t *testing.T) {
		ids := func(mode string) map[string]bool {
			res, _, _ := answer(t, tr.call(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"retrieve","params":{"query":"compress data streams","k":10,"mode":%q}}`, mode)))
			out := map[string]bool{}
			for _, h := range hits(t, res) {
				out[h.ID] = true
			}
			return out
		}
		dense, sparse, hybrid := ids("dense"), ids("sparse"), ids("hybrid")
		fromBoth := 0
		for id := range hybrid {
			if dense[id] || sparse[id] {
				fromBoth++
			}
		}
		if fromBoth != len(hybrid) || len(hybrid) == 0 {
			t.Fatalf("hybrid hits not drawn from the dense and sparse rankings: %v", hybrid)
		}
	})
	t.Run("C10 rerank orders passages by late interaction", func(t *testing.T) {
		res, code, _ := answer(t, tr.call(t, `{"jsonrpc":"2.0","id":8,"method":"rerank","params":{"query":"gzip compression","passages":["images and colors","gzip compression of data","compression"],"method":"colbert"}}`))
		if code != 0 {
			t.Fatalf("rerank: code %d", code)
		}
		var scores []float64
		var order []int
		json.Unmarshal(res["scores"], &scores)
		json.Unmarshal(res["order"], &order)
		if len(scores) != 3 || len(order) != 3 || order[0] != 1 || order[2] != 0 {
			t.Fatalf("the passage matching every query token comes first, the unrelated one last: scores %v order %v", scores, order)
		}
		for i := 1; i < len(order); i++ {
			if scores[order[i]] > scores[order[i-1]] {
				t.Fatalf("order does not follow the scores: %v %v", scores, order)
			}
		}
	})
	t.Run("C10 embed answers one vector per input, as json or f32-base64 (§7.3, §7.3.1)", func(t *testing.T) {
		if enc := caps["embed"]["encodings"]; fmt.Sprint(enc) != "[json f32-base64]" {
			t.Errorf("embed.encodings = %v", enc)
		}
		res, code, _ := answer(t, tr.call(t, `{"jsonrpc":"2.0","id":11,"method":"embed","params":{"texts":["gzip compression","bananas"]}}`))
		var plain struct {
			Vectors   [][]float32
			Encoding  string
			Dimension int
		}
		raw, _ := json.Marshal(res)
		if code != 0 || json.Unmarshal(raw, &plain) != nil || len(plain.Vectors) != 2 || plain.Encoding != "json" ||
			len(plain.Vectors[0]) != plain.Dimension || plain.Dimension != int(caps["embed"]["dimension"].(float64)) {
			t.Fatalf("embed: code %d, %s", code, raw)
		}
		res, code, _ = answer(t, tr.call(t, `{"jsonrpc":"2.0","id":12,"method":"embed","params":{"inputs":["gzip compression","bananas"],"encoding":"f32-base64"}}`))
		var packed struct {
			Vectors   []string
			Encoding  string
			Dimension int
		}
		raw, _ = json.Marshal(res)
		if code != 0 || json.Unmarshal(raw, &packed) != nil || packed.Encoding != "f32-base64" || len(packed.Vectors) != 2 {
			t.Fatalf("embed f32-base64: code %d, %s", code, raw)
		}
		for i, blob := range packed.Vectors {
			v, err := engine.DecodeF32(blob, packed.Dimension)
			if err != nil || fmt.Sprint(v) != fmt.Sprint(plain.Vectors[i]) {
				t.Errorf("vector %d: %v, or not the json vector", i, err)
			}
		}
		_, code, data := answer(t, tr.call(t, `{"jsonrpc":"2.0","id":13,"method":"embed","params":{"inputs":["x"],"encoding":"f16"}}`))
		if code != -32005 || data["option"] != "encoding" {
			t.Errorf("an unadvertised encoding: code %d data %v, want -32005 naming encoding", code, data)
		}
	})
	t.Run("C10 the writable index: upsert by id, idempotent delete", func(t *testing.T) {
		res, code, _ := answer(t, tr.call(t, `{"jsonrpc":"2.0","id":9,"method":"index/add","params":{"documents":[{"id":"zz/new","text":"quokka marsupial facts"}]}}`))
		if code != 0 {
			t.Fatalf("index/add: code %d", code)
		}
		_ = res
		res, _, _ = answer(t, tr.call(t, `{"jsonrpc":"2.0","id":10,"method":"retrieve","params":{"query":"quokka","k":1,"mode":"sparse"}}`))
		if hs := hits(t, res); len(hs) != 1 || hs[0].ID != "zz/new" {
			t.Fatalf("added document not retrieved: %v", hs)
		}
		for i := range 2 {
			if _, code, _ := answer(t, tr.call(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"index/delete","params":{"ids":["zz/new"]}}`, 11+i))); code != 0 {
				t.Fatalf("index/delete #%d: code %d", i, code)
			}
		}
		res, _, _ = answer(t, tr.call(t, `{"jsonrpc":"2.0","id":13,"method":"retrieve","params":{"query":"quokka","k":1,"mode":"sparse"}}`))
		if hs := hits(t, res); len(hs) == 1 && hs[0].ID == "zz/new" {
			t.Fatal("deleted document still retrieved")
		}
	})
	t.Run("C7 progress from 0 to 1 with the token, then the answer", func(t *testing.T) {
		frames := tr.call(t, `{"jsonrpc":"2.0","id":14,"method":"retrieve","params":{"query":"net","k":3,"_meta":{"progressToken":"p14"}}}`)
		progress := 0
		last := -1.0
		for _, f := range frames[:len(frames)-1] {
			if string(f["method"]) != `"notifications/progress"` {
				continue
			}
			var p struct {
				ProgressToken string
				Progress      float64
			}
			json.Unmarshal(f["params"], &p)
			if p.ProgressToken != "p14" || p.Progress < 0 || p.Progress > 1 || p.Progress < last {
				t.Errorf("bad progress %s", f["params"])
			}
			last = p.Progress
			progress++
		}
		if progress == 0 {
			t.Fatal("no progress for a request with a token (streaming advertised)")
		}
	})
}

func TestRetrieval_CancelOwesExactlyOneAnswer(t *testing.T) {
	// DIGEST C5: over stdio, a cancel still gets exactly one response for the request.
	st := startStdio(t)
	fmt.Fprintln(st.in, initialize)
	fmt.Fprintln(st.in, `{"jsonrpc":"2.0","id":"r","method":"retrieve","params":{"query":"http server","k":5}}`)
	fmt.Fprintln(st.in, `{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":"r"}}`)
	fmt.Fprintln(st.in, `{"jsonrpc":"2.0","id":"after","method":"ping","params":{}}`)
	answers := map[string]int{}
	deadline := time.Now().Add(10 * time.Second)
	for answers[`"after"`] == 0 && time.Now().Before(deadline) {
		line, err := st.out.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		m := decodeFrame(t, line)
		if m["method"] == nil {
			answers[string(m["id"])]++
		}
	}
	st.in.Close()
	rest, _ := io.ReadAll(st.out)
	for _, line := range strings.Split(strings.TrimSpace(string(rest)), "\n") {
		if line != "" && decodeFrame(t, []byte(line))["method"] == nil {
			answers[string(decodeFrame(t, []byte(line))["id"])]++
		}
	}
	if answers[`"r"`] != 1 {
		t.Fatalf("the cancelled request got %d answers, want exactly 1", answers[`"r"`])
	}
}
