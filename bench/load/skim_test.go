package load

import (
	"strings"
	"testing"
)

func TestSkimObject(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	tests := []struct {
		name string
		in   string
		want map[string]string // nil means skimObject reports false
	}{
		{"empty", `{}`, map[string]string{}},
		{"spaces", " { \"a\" : 1 , \"b\" :\t\"x\" }\r\n", map[string]string{"a": "1", "b": `"x"`}},
		{"literals", `{"t":true,"f":false,"n":null,"x":-1.5e3}`,
			map[string]string{"t": "true", "f": "false", "n": "null", "x": "-1.5e3"}},
		{"nested", `{"id":7,"result":{"content":[{"type":"text","text":"a}b]c"}],"isError":true}}`,
			map[string]string{"id": "7", "result": `{"content":[{"type":"text","text":"a}b]c"}],"isError":true}`}},
		{"escaped quotes", `{"s":"say \"hi\" \\","id":1}`, map[string]string{"s": `"say \"hi\" \\"`, "id": "1"}},
		{"escaped backslash before quote", `{"s":"\\\\","id":2}`, map[string]string{"s": `"\\\\"`, "id": "2"}},
		{"long string", `{"text":"` + long + `","id":3}`, map[string]string{"text": `"` + long + `"`, "id": "3"}},
		{"key with quote", `{"a\"b":1}`, map[string]string{`a\"b`: "1"}},
		{"not an object", `[1,2]`, nil},
		{"truncated string", `{"a":"abc`, nil},
		{"truncated object", `{"a":{"b":1}`, nil},
		{"missing colon", `{"a" 1}`, nil},
		{"garbage", `hello`, nil},
		{"blank", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]string{}
			ok := skimObject([]byte(tt.in), func(k, v []byte) { got[string(k)] = string(v) })
			if tt.want == nil {
				if ok {
					t.Fatalf("skimObject(%.40q) = true, want false", tt.in)
				}
				return
			}
			if !ok {
				t.Fatalf("skimObject(%.40q) = false, want true", tt.in)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d members, want %d", len(got), len(tt.want))
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("member %q = %.40q, want %.40q", k, got[k], v)
				}
			}
		})
	}
}

func TestParse(t *testing.T) {
	s := &Session{}
	tests := []struct {
		name   string
		line   string
		keep   bool
		want   message
		wantOK bool
	}{
		{"answer", `{"jsonrpc":"2.0","id":5,"result":{"content":[]}}`, false, message{id: 5, hasID: true}, true},
		{"answer kept", `{"jsonrpc":"2.0","id":5,"result":{"x":1}}`, true,
			message{id: 5, hasID: true, result: []byte(`{"x":1}`)}, true},
		{"string id", `{"jsonrpc":"2.0","id":"6","result":{}}`, false, message{id: 6, hasID: true}, true},
		{"tool error", `{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}`, false,
			message{id: 7, hasID: true, isErr: true}, true},
		{"isError false", `{"jsonrpc":"2.0","id":8,"result":{"isError":false}}`, false, message{id: 8, hasID: true}, true},
		{"nested isError ignored", `{"id":9,"result":{"structuredContent":{"isError":true}}}`, false,
			message{id: 9, hasID: true}, true},
		{"error", `{"jsonrpc":"2.0","id":10,"error":{"code":-1,"message":"m"}}`, false,
			message{id: 10, hasID: true, isErr: true, errMsg: `{"code":-1,"message":"m"}`}, true},
		{"error without id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`, false,
			message{isErr: true, errMsg: `{"code":-32700,"message":"parse"}`}, true},
		{"server request", `{"jsonrpc":"2.0","id":"s1","method":"ping"}`, false,
			message{method: "ping", rawID: []byte(`"s1"`)}, true},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, false, message{}, false},
		{"not json", `starting server...`, false, message{}, false},
		{"result without id", `{"jsonrpc":"2.0","result":{}}`, false, message{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.keepResult.Store(tt.keep)
			got, ok := s.parse([]byte(tt.line+"\n"), tt.want.at)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if got.id != tt.want.id || got.hasID != tt.want.hasID || got.method != tt.want.method ||
				string(got.rawID) != string(tt.want.rawID) || got.isErr != tt.want.isErr ||
				got.errMsg != tt.want.errMsg || string(got.result) != string(tt.want.result) {
				t.Errorf("parse = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var r Result
	if got := r.Percentile(50); got != 0 {
		t.Errorf("empty Percentile(50) = %v, want 0", got)
	}
	for i := 1; i <= 100; i++ {
		r.Latencies = append(r.Latencies, durationMS(i))
	}
	for _, tt := range []struct {
		p    float64
		want int
	}{{0, 1}, {1, 1}, {50, 50}, {50.5, 51}, {99, 99}, {100, 100}, {150, 100}, {-5, 1}} {
		if got := r.Percentile(tt.p); got != durationMS(tt.want) {
			t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, durationMS(tt.want))
		}
	}
	r = Result{Requests: 500, Elapsed: durationMS(250)}
	if got := r.PerSecond(); got != 2000 {
		t.Errorf("PerSecond = %v, want 2000", got)
	}
	if got := (Result{Requests: 5}).PerSecond(); got != 0 {
		t.Errorf("PerSecond with no elapsed time = %v, want 0", got)
	}
}
