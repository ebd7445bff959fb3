package bridge_test

// Linux only, as the legacy test child it uses (legacy_test.go).

// Each generation sees its own shapes through the bridge, both ways: resultType, ttlMs,
// cacheScope and serverInfo in _meta are 2026-07-28's (MCP 2026-07-28, Basic › resultType,
// _meta; Server › Utilities › Caching), and a resource that does not exist is -32002 in
// 2025-11-25 (Server › Resources › Error Handling) but -32602 in 2026-07-28 (Basic › Error
// codes).

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"
)

// TestB3_LegacyClientNeverSees2026Shapes: an initialize-generation client of `relay bridge --
// examples/everything` (2026-07-28 children) gets results without resultType, ttlMs,
// cacheScope or serverInfo, capabilities without extensions, and -32002 for a resource that
// does not exist.
func TestB3_LegacyClientNeverSees2026Shapes(t *testing.T) {
	r := startRelay(t, []string{"--pool", "1"}, everythingBin(t))
	status, sid, msg := legacyPost(t, r, "", "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"shapes","version":"1"}}}`)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d %s", status, fmtMsg(msg))
	}
	if caps := jsonField(msg["result"], "capabilities"); caps["extensions"] != nil {
		t.Errorf("initialize declares 2026-07-28 extensions to a legacy client: %s", msg["result"])
	}
	legacyPost(t, r, sid, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/list","params":{}}`,
		`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"test://static-text"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"prompts/list","params":{}}`,
	} {
		status, _, msg := legacyPost(t, r, sid, "2025-11-25", body)
		res := jsonField(msg["result"], "")
		if status != http.StatusOK || res == nil {
			t.Fatalf("%s: HTTP %d %s", body, status, fmtMsg(msg))
		}
		for _, k := range []string{"resultType", "ttlMs", "cacheScope"} {
			if res[k] != nil {
				t.Errorf("%s: the result carries 2026-07-28's %s: %.300s", body, k, msg["result"])
			}
		}
		if jsonField(res["_meta"], "")["io.modelcontextprotocol/serverInfo"] != nil {
			t.Errorf("%s: the result carries serverInfo in _meta: %.300s", body, msg["result"])
		}
	}
	status, _, msg = legacyPost(t, r, sid, "2025-11-25", `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"test://no-such-resource"}}`)
	var e struct{ Code int }
	if json.Unmarshal(msg["error"], &e) != nil || e.Code != -32002 {
		t.Errorf("a resource that does not exist: HTTP %d %s; want 2025-11-25's -32002", status, fmtMsg(msg))
	}
}

// TestB3_ModernClientGetsItsOwnNotFound: a 2026-07-28 client of `relay bridge` in front of a
// child of the initialize generation, which answers -32002 for a resource that does not
// exist, gets -32602.
func TestB3_ModernClientGetsItsOwnNotFound(t *testing.T) {
	t.Setenv(legacyChildEnv, "1")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := startRelay(t, []string{"--pool", "1", "--spares", "0"}, self)
	rep, err := r.call(t.Context(), 1, "resources/read", map[string]any{"uri": "test://no-such-resource"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Error == nil || rep.Error.Code != -32602 {
		t.Errorf("a resource that does not exist: %v; want 2026-07-28's -32602", rep)
	}
}

// jsonField decodes the object at key of obj (obj itself when key is empty); nil when it is
// not an object.
func jsonField(obj json.RawMessage, key string) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	if key == "" {
		return m
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(m[key], &inner) != nil {
		return nil
	}
	return inner
}
