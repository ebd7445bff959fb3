package jsonrpc_test

import (
	"strings"
	"testing"

	"github.com/relayrt/relay/jsonrpc"
)

// toolText returns n bytes of the kind of text a tool answers with: lines of prose, with
// quotes and new lines that a JSON string must escape.
func toolText(n int) string {
	const line = `The "quick" brown fox jumps over the lazy dog; lorem ipsum dolor sit amet.` + "\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// BenchmarkAppendResult measures jsonrpc.AppendResult writing the response to a tools/call
// whose result is one text item ({"content":[{"type":"text","text":"..."}]}, already encoded),
// with an integer id, into a buffer reused from one response to the next. It is the last step
// of every answer the dispatcher sends, so its cost should be a copy of the result and
// nothing more: no allocation once the buffer has grown, and throughput (bytes of the response)
// near memmove's at 64 KiB.
func BenchmarkAppendResult(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"64B", 64}, {"64KiB", 64 << 10}} {
		b.Run("size="+size.name, func(b *testing.B) {
			result := []byte(`{"content":[{"type":"text","text":`)
			result = jsonrpc.AppendString(result, toolText(size.n))
			result = append(result, `}]}`...)
			id := jsonrpc.IntID(42)
			buf := jsonrpc.AppendResult(nil, id, result)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = jsonrpc.AppendResult(buf[:0], id, result)
			}
		})
	}
}

// BenchmarkAppendString measures jsonrpc.AppendString on 64 KiB of text: plain ASCII with
// nothing to escape (a long argument echoed back), and prose with quotes and new lines.
func BenchmarkAppendString(b *testing.B) {
	for _, text := range []struct{ name, s string }{
		{"plain", strings.Repeat("x", 64<<10)},
		{"prose", toolText(64 << 10)},
	} {
		b.Run("text="+text.name, func(b *testing.B) {
			buf := jsonrpc.AppendString(nil, text.s)
			b.SetBytes(int64(len(text.s)))
			b.ReportAllocs()
			for b.Loop() {
				buf = jsonrpc.AppendString(buf[:0], text.s)
			}
		})
	}
}
