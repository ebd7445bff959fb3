package jsonrpc_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/relayrt/relay/jsonrpc"
)

// stdMessage is the envelope as a program using encoding/json would read it, with the same raw
// members that jsonrpc.Message keeps.
type stdMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// benchFrames returns a small request (about 64 bytes), a 2026-07-28 tools/call with its
// _meta and the answer to it, as a proxy sees them, and a request whose params hold 64 KiB.
func benchFrames() []struct {
	name  string
	frame []byte
} {
	small := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"a":1}}`
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":"req-7","method":"tools/call","params":{"name":"echo","arguments":{"items":[`)
	for i := 0; sb.Len() < 64<<10; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"k":"value with \"escapes\" and \u00e9","n":12345.5e-3,"ok":true,"z":null}`)
	}
	sb.WriteString(`]}}}`)
	return []struct {
		name  string
		frame []byte
	}{
		{"64B", []byte(small)},
		{"call", []byte(`{"jsonrpc":"2.0","id":123456,"method":"tools/call","params":{"name":"echo","arguments":{"text":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,-_ab"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)},
		{"answer", []byte(`{"jsonrpc":"2.0","id":123456,"result":{"content":[{"type":"text","text":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,-_ab"}],"isError":false}}`)},
		{"64KiB", []byte(sb.String())},
	}
}

// BenchmarkDecode compares jsonrpc.Decode with encoding/json reading the same envelope into a
// struct with raw members.
func BenchmarkDecode(b *testing.B) {
	for _, f := range benchFrames() {
		b.Run(f.name+"/jsonrpc", func(b *testing.B) {
			b.SetBytes(int64(len(f.frame)))
			b.ReportAllocs()
			for b.Loop() {
				m, err := jsonrpc.Decode(f.frame)
				if err != nil || m.Kind == jsonrpc.KindInvalid {
					b.Fatal(err)
				}
			}
		})
		b.Run(f.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(f.frame)))
			b.ReportAllocs()
			for b.Loop() {
				var m stdMessage
				if err := json.Unmarshal(f.frame, &m); err != nil || m.JSONRPC == "" {
					b.Fatal(err)
				}
			}
		})
	}
}
