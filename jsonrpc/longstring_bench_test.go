package jsonrpc

import (
	"strings"
	"testing"
)

// BenchmarkDecodeLongString is the shape of a 64 KiB echo: one long string argument.
func BenchmarkDecodeLongString(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("lorem ipsum ", 65536/12) + `"}}}`)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(frame); err != nil {
			b.Fatal(err)
		}
	}
}
