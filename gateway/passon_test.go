package gateway

import (
	"encoding/json"
	"reflect"
	"testing"
)

// passOn keeps an upstream's result as it wrote it but for what is the gateway's to say:
// the upstream's serverInfo, a "complete" resultType, and, for a host of the initialize
// generation, ttlMs and cacheScope; an input_required resultType stays, first, for a
// 2026-07-28 host only, and _meta comes before the other members.
func TestPassOn_KeepsTheResultButWhatIsTheGateways(t *testing.T) {
	for _, c := range []struct {
		in     string
		modern bool
		want   string
	}{
		{`{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}},"content":[{"type":"text","text":"hi"}],"ttlMs":5,"cacheScope":"private"}`, true,
			`{"content":[{"type":"text","text":"hi"}],"ttlMs":5,"cacheScope":"private"}`},
		{`{"resultType":"complete","contents":[],"ttlMs":5,"cacheScope":"private"}`, false, `{"contents":[]}`},
		{`{"contents":[],"cacheScope":"public"}`, true, `{"contents":[]}`},
		{`{"ttlMs":7,"contents":[]}`, true, `{"contents":[],"ttlMs":7,"cacheScope":"private"}`},
		{`{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"},"k":1},"isError":true}`, false,
			`{"_meta":{"k":1},"content":[],"isError":true}`},
		{`{"inputRequests":{"a":{"method":"roots/list"}},"resultType":"input_required","requestState":"s"}`, true,
			`{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}},"requestState":"s"}`},
		{`{"inputRequests":{},"resultType":"input_required"}`, false, `{"inputRequests":{}}`},
		{`{}`, true, `{}`},
		{`{"resultType":"complete"}`, true, `{}`},
	} {
		got := passOn(json.RawMessage(c.in), c.modern, true)
		if string(got) != c.want {
			t.Errorf("passOn(%s, modern %v) = %s, want %s", c.in, c.modern, got, c.want)
		}
		var a, b any
		if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(c.want), &b) != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("passOn(%s) is not the JSON wanted: %s", c.in, got)
		}
	}
}

// A task's ttlMs is the task's own, not a cache's: passOn keeps it where the result is not
// cacheable.
func TestPassOn_KeepsATasksTTL(t *testing.T) {
	in := `{"resultType":"task","taskId":"t","status":"working","ttlMs":60000,"pollIntervalMs":100}`
	if got := passOn(json.RawMessage(in), true, false); string(got) != in {
		t.Errorf("passOn(%s) = %s", in, got)
	}
}
