package e2e

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestMalformedThenWorkingCall sends each malformed message to a fresh server, then a working
// call that must succeed. After stdin is closed and the server has exited, the output must be
// exactly the expected answer (if any) followed by the working call's result: nothing is
// answered twice, and messages that must get no answer get none.
func TestMalformedThenWorkingCall(t *testing.T) {
	t.Parallel()
	const goodID = `"after"`

	type answer struct {
		code int64
		id   string // raw id; "" means the id member must be absent
		// check inspects the error further (may be nil).
		check func(t *testing.T, m msg)
	}
	cases := []struct {
		name  string
		lines []string
		want  *answer // nil: no answer at all
	}{
		{"A11 parse error: invalid JSON has no readable id",
			[]string{`{"jsonrpc":"2.0","id":1,"method":"tools/call",`}, &answer{code: -32700}},
		{"A11 parse error: invalid JSON text",
			[]string{`not json at all`}, &answer{code: -32700}},
		{"A11 invalid request: a number is not a message",
			[]string{`42`}, &answer{code: -32600}},
		{"A11 invalid request: a string is not a message",
			[]string{`"hello"`}, &answer{code: -32600}},
		{"A1 jsonrpc 1.0 is answered with its own id",
			[]string{`{"jsonrpc":"1.0","id":1,"method":"x"}`}, &answer{code: -32600, id: `1`}},
		{"A1 missing jsonrpc member",
			[]string{`{"id":2,"method":"tools/list","params":{` + modernMeta + `}}`}, &answer{code: -32600, id: `2`}},
		{"A1 id null is forbidden",
			[]string{`{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{` + modernMeta + `}}`}, &answer{code: -32600}},
		{"A1 id 1.5 is not an integer",
			[]string{`{"jsonrpc":"2.0","id":1.5,"method":"tools/list","params":{` + modernMeta + `}}`}, &answer{code: -32600}},
		{"A1 id 1e3 is not an integer",
			[]string{`{"jsonrpc":"2.0","id":1e3,"method":"tools/list","params":{` + modernMeta + `}}`}, &answer{code: -32600}},
		{"A1 id true",
			[]string{`{"jsonrpc":"2.0","id":true,"method":"tools/list","params":{` + modernMeta + `}}`}, &answer{code: -32600}},
		{"A1 id object",
			[]string{`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list","params":{` + modernMeta + `}}`}, &answer{code: -32600}},
		{"A1 method 5",
			[]string{`{"jsonrpc":"2.0","id":7,"method":5}`}, &answer{code: -32600, id: `7`}},
		{"A1 request with result member",
			[]string{`{"jsonrpc":"2.0","id":8,"method":"tools/list","result":{}}`}, &answer{code: -32600, id: `8`}},
		{"A1 duplicate envelope member",
			[]string{`{"jsonrpc":"2.0","id":9,"method":"tools/list","method":"tools/call","params":{` + modernMeta + `}}`}, &answer{code: -32600, id: `9`}},
		{"A11 params as array",
			[]string{`{"jsonrpc":"2.0","id":"arr","method":"tools/list","params":[1,2]}`}, &answer{code: -32602, id: `"arr"`}},
		{"A11 params as string",
			[]string{`{"jsonrpc":"2.0","id":"str","method":"tools/list","params":"x"}`}, &answer{code: -32602, id: `"str"`}},
		{"A11 unknown method with valid _meta",
			[]string{`{"jsonrpc":"2.0","id":10,"method":"no/such/method","params":{` + modernMeta + `}}`}, &answer{code: -32601, id: `10`}},
		{"A5 initialize under 2026-07-28 _meta is a removed method",
			[]string{`{"jsonrpc":"2.0","id":11,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"},` + modernMeta + `}}`},
			&answer{code: -32601, id: `11`}},
		{"A2 missing _meta",
			[]string{`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`}, &answer{code: -32602, id: `12`}},
		{"A2 missing clientCapabilities",
			[]string{`{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
			&answer{code: -32602, id: `13`}},
		{"A4 unsupported version names the supported ones",
			[]string{`{"jsonrpc":"2.0","id":14,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`},
			&answer{code: -32022, id: `14`, check: func(t *testing.T, m msg) {
				var data struct {
					Supported []string `json:"supported"`
					Requested string   `json:"requested"`
				}
				if err := json.Unmarshal(m.Error.Data, &data); err != nil {
					t.Fatalf("error.data: %v: %s", err, m)
				}
				if !slices.Contains(data.Supported, "2026-07-28") {
					t.Errorf("data.supported = %q, want it to list 2026-07-28 (DIGEST A4)", data.Supported)
				}
				if data.Requested != "2099-01-01" {
					t.Errorf("data.requested = %q, want 2099-01-01 (DIGEST A4)", data.Requested)
				}
			}}},
		{"A1 batch is rejected as a whole",
			[]string{`[` + echoLine(`"in-batch"`, "x") + `]`}, &answer{code: -32600}},
		{"A1 empty batch",
			[]string{`[]`}, &answer{code: -32600}},
		{"A8 malformed notification: method 5",
			[]string{`{"jsonrpc":"2.0","method":5}`}, nil},
		{"A8 malformed notification: jsonrpc 1.0",
			[]string{`{"jsonrpc":"1.0","method":"notifications/initialized"}`}, nil},
		{"A8 malformed notification: params array",
			[]string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}`}, nil},
		{"A8 malformed cancel: requestId null",
			[]string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}`}, nil},
		{"A1 response-shaped message: a client never sends responses",
			[]string{`{"jsonrpc":"2.0","id":99,"result":{}}`}, nil},
		{"A1 error-response-shaped message",
			[]string{`{"jsonrpc":"2.0","id":"x","error":{"code":-32603,"message":"boom"}}`}, nil},
		{"A1 malformed response-shaped message",
			[]string{`{"jsonrpc":"2.0","id":99,"result":{},"error":{"code":1,"message":"m"}}`}, nil},
		{"A1 unknown notification is never answered",
			[]string{`{"jsonrpc":"2.0","method":"notifications/whatever","params":{"a":1}}`}, nil},
		{"A8 cancel for an unknown id is ignored",
			[]string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nobody","reason":"test"}}`}, nil},
		{"A12 blank and whitespace lines are skipped",
			[]string{``, `   `, "\t"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := start(t)
			c.send(tc.lines...)
			c.send(echoLine(goodID, "still works"))
			if got := toolText(t, c.response(goodID), true); got != "still works" {
				t.Errorf("working call: text %q", got)
			}
			c.closeStdin()
			if code := c.wait(); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			msgs := c.snapshot()
			var others []msg
			for _, m := range msgs {
				if string(m.ID) != goodID {
					others = append(others, m)
				}
			}
			if tc.want == nil {
				for _, m := range others {
					t.Errorf("want no answer (DIGEST A1: notifications and responses are never answered), got %s", m)
				}
				return
			}
			if len(others) != 1 {
				t.Fatalf("want exactly one answer, got %d: %v", len(others), others)
			}
			expectError(t, others[0], tc.want.code, tc.want.id)
			if tc.want.check != nil {
				tc.want.check(t, others[0])
			}
			if msgs[0].ID != nil && string(msgs[0].ID) == goodID {
				t.Errorf("the answer to the malformed message came after the later working call")
			}
		})
	}
}

// TestDuplicateIDInFlight: an id must not repeat one still in flight (DIGEST A1). The second
// request is refused with -32600 carrying that id, and the first still gets its result.
func TestDuplicateIDInFlight(t *testing.T) {
	t.Parallel()
	c := start(t)
	c.send(sleepLine(`1`, 1000), echoLine(`1`, "dup"))
	msgs := c.waitFor("two answers for id 1", func(ms []msg) bool {
		n := 0
		for _, m := range ms {
			if string(m.ID) == `1` {
				n++
			}
		}
		return n == 2
	})
	var first []msg
	for _, m := range msgs {
		if string(m.ID) == `1` {
			first = append(first, m)
		}
	}
	expectError(t, first[0], -32600, `1`)
	if got := toolText(t, first[1], true); got != "slept 1000 ms" {
		t.Errorf("first request: text %q, want %q", got, "slept 1000 ms")
	}
	c.send(echoLine(`1`, "id free again"))
	if got := toolText(t, c.waitFor("a third answer for id 1", func(ms []msg) bool {
		n := 0
		for _, m := range ms {
			if string(m.ID) == `1` {
				n++
			}
		}
		return n == 3
	})[2], true); got != "id free again" {
		t.Errorf("reuse after completion: text %q", got)
	}
	c.closeStdin()
	if code := c.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if n := len(c.snapshot()); n != 3 {
		t.Errorf("%d messages, want 3", n)
	}
}
