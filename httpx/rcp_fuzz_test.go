package httpx_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/jsonrpc"
)

// FuzzRCPCompactEnvelope posts bodies to the RCP binding, stateless and in session mode: the
// fuzzer's raw body, and a compact envelope {method, params} made of its method and params
// (RCP/1 §5.3). Whatever comes in, the handler does not panic, every body it writes is JSON
// (each SSE data line too), and every answer to a compact envelope has id null and shows none
// of the stand-in id the handler gives it while it is dispatched.
func FuzzRCPCompactEnvelope(f *testing.F) {
	f.Add("ping", "ping", []byte(`{"nonce":"c"}`), []byte(`{"method":"ping"}`), false)
	f.Add("retrieve", "index/add", []byte(`{}`), []byte(`{"method":"index/add"}`), false)
	f.Add("ping", "ping", []byte(`[1]`), []byte(`{"method":5}`), false)
	f.Add("", "ping", []byte(`null`), []byte(`{"method":"ping","params":null}`), false)
	f.Add("retrieve", "retrieve", []byte(`{"k":-1,"_meta":{"progressToken":"p"}}`), []byte(`{"method":"retrieve","params":{"_meta":{"progressToken":1}}}`), true)
	f.Add("initialize", "initialize", []byte(`{"protocolVersion":0}`), []byte(`{"method":"initialize","params":{"protocolVersion":1}}`), false)
	f.Add("notifications/cancel", "notifications/cancel", []byte(`{"id":"relay-compact-1"}`), []byte(`{"method":"notifications/cancel","params":{"id":1}}`), false)
	f.Add("ping", "ping", []byte(`{"nonce":"relay-compact-envelope"}`), []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), false)
	f.Add("ping", "ping", []byte(`{}`), []byte(`[{"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`), false)
	f.Add("ping", "\u0000", []byte(`{"nonce":"\ud800"}`), []byte(`{"\u006detho\u0064":"ping"}`), false)

	release := make(chan struct{})
	close(release) // a waiting retrieve returns at once
	var handlers []*httpx.RCPHandler
	for _, sessions := range []bool{false, true} {
		handlers = append(handlers, httpx.NewRCPHandler(rcpServer(release), &httpx.RCPOptions{
			Sessions: sessions, MaxBody: 64 << 10, MaxResponse: 4 << 10, Logger: zap.NewNop()}))
	}
	f.Cleanup(func() {
		for _, h := range handlers {
			h.Close()
		}
	})

	f.Fuzz(func(t *testing.T, path, method string, params, raw []byte, sse bool) {
		name, _ := json.Marshal(method)
		envelope := append([]byte(`{"method":`), name...)
		if json.Valid(params) {
			envelope = append(append(envelope, `,"params":`...), params...)
		}
		envelope = append(envelope, '}')
		for _, h := range handlers {
			for _, body := range [][]byte{raw, envelope} {
				checkRCPAnswer(t, h, "/rcp/"+path, body, sse)
			}
		}
	})
}

// checkRCPAnswer posts body and checks the answer as FuzzRCPCompactEnvelope says.
func checkRCPAnswer(t *testing.T, h http.Handler, path string, body []byte, sse bool) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.URL.Path = path
	req.Host = "127.0.0.1:8080"
	req.Header.Set("Content-Type", "application/json")
	if sse {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	w := httptest.NewRecorder()
	served := make(chan struct{})
	go func() {
		defer close(served)
		h.ServeHTTP(w, req)
	}()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatalf("POST %q %q: no answer within 10 s", path, body)
	}
	reply := w.Body.Bytes()

	var frames [][]byte
	switch ct := w.Header().Get("Content-Type"); {
	case len(reply) == 0:
	case ct == "text/event-stream":
		for _, line := range bytes.Split(reply, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				frames = append(frames, data)
			}
		}
	default:
		frames = [][]byte{reply}
	}
	for _, fr := range frames {
		if !json.Valid(fr) {
			t.Fatalf("POST %q %q: HTTP %d, a frame that is not JSON: %q", path, body, w.Code, fr)
		}
	}
	if !compactEnvelope(body) {
		return
	}
	if len(frames) == 0 {
		t.Fatalf("POST %q %q: HTTP %d and no answer; a compact envelope is a request, and is answered", path, body, w.Code)
	}
	final := frames[len(frames)-1]
	if id := jsonrpc.Field(final, "id"); string(id) != "null" {
		t.Fatalf("POST %q %q: HTTP %d, the answer's id is %s, not null: %s", path, body, w.Code, id, final)
	}
	if bytes.Contains(reply, []byte("relay-compact-")) && !bytes.Contains(body, []byte("relay-compact-")) {
		t.Fatalf("POST %q %q: the answer shows the stand-in id: %s", path, body, reply)
	}
}

// compactEnvelope reports whether body is what RCP/1 §5.3 calls the compact envelope: a
// JSON object with a method and neither jsonrpc nor id.
func compactEnvelope(body []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	_, hasMethod := m["method"]
	_, hasVersion := m["jsonrpc"]
	_, hasID := m["id"]
	return hasMethod && !hasVersion && !hasID
}
