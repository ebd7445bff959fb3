package mcp_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/relayrt/relay/mcp"
)

// BenchmarkToolsCall measures a 2026-07-28 tools/call of an echo tool with flat arguments,
// through an in-memory connection with 64 requests outstanding: everything the server does
// for a request (decode, route, the request actor, argument decoding, the handler, result
// encoding) except the transport. allocs/op and B/op are the server's per request, give or
// take the benchmark's own frame.
func BenchmarkToolsCall(b *testing.B) {
	for _, size := range []int{64, 64 << 10} {
		b.Run("size="+strconv.Itoa(size), func(b *testing.B) {
			s := mcp.NewServer(mcp.Implementation{Name: "bench", Version: "1.0.0"}, nil)
			mcp.AddTool(s, &mcp.Tool{Name: "echo"},
				func(ctx context.Context, req *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, error) {
					return mcp.TextResult(in.Name), nil
				})
			ctx := context.Background()
			conn := s.Runtime().Connect(ctx)
			defer conn.Close()
			tail := []byte(`,"method":"tools/call","params":{"name":"echo","arguments":{"name":"` + strings.Repeat("a", size) + `"},` +
				`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
			frame := make([]byte, 0, len(tail)+40)
			next := 0
			send := func() {
				frame = append(strconv.AppendInt(append(frame[:0], `{"jsonrpc":"2.0","id":`...), int64(next), 10), tail...)
				next++
				if err := conn.Send(ctx, frame); err != nil {
					b.Fatal(err)
				}
			}
			send()
			if reply, err := conn.Receive(ctx); err != nil || !strings.Contains(string(reply), `"text":"aaaa`) {
				b.Fatalf("got %.200s, %v", reply, err)
			}
			const window = 64
			for range window {
				send()
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := conn.Receive(ctx); err != nil {
					b.Fatal(err)
				}
				send()
			}
			for range window {
				if _, err := conn.Receive(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
