package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/stdio"
)

// TestServeListener_SameFramingOverSockets serves one MCP server on a Unix socket and on a
// TCP listener on 127.0.0.1 (DIGEST A12: custom byte-stream transports reuse stdio framing),
// with several clients at once, each on its own dispatcher.
func TestServeListener_SameFramingOverSockets(t *testing.T) {
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				// Not under t.TempDir: its long name would pass the 104 bytes macOS allows
				// a socket's path (sockaddr_un's sun_path), and Windows' 108.
				dir, err := os.MkdirTemp("", "relay")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(dir) })
				addr = filepath.Join(dir, "relay.sock")
			}
			ln, err := net.Listen(network, addr)
			if err != nil {
				t.Fatal(err)
			}
			s := mcp.NewServer(mcp.Implementation{Name: "sock", Version: "1"}, nil)
			type in struct {
				Text string `json:"text"`
			}
			mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, error) {
				return mcp.TextResult(a.Text), nil
			})
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() {
				served <- stdio.ServeListener(ctx, s.Runtime(runtime.WithLogger(zap.NewNop())), ln, stdio.WithLogger(zap.NewNop()))
			}()

			const clients = 4
			errs := make(chan error, clients)
			for c := range clients {
				go func() { errs <- echoOver(network, ln.Addr().String(), c) }()
			}
			for range clients {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			cancel()
			select {
			case err := <-served:
				if err != nil {
					t.Fatalf("ServeListener: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ServeListener did not return after its context ended")
			}
		})
	}
}

// echoOver opens one connection, pipelines a few calls, and checks each answer.
func echoOver(network, addr string, client int) error {
	conn, err := net.Dial(network, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	const calls = 20
	for i := range calls {
		fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"c%d-%d"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`+"\r\n", i, client, i)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	sc := bufio.NewScanner(conn)
	got := map[int]string{}
	for len(got) < calls && sc.Scan() {
		var m struct {
			ID     int
			Result struct{ Content []struct{ Text string } }
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || len(m.Result.Content) != 1 {
			return fmt.Errorf("client %d: bad answer %q", client, sc.Bytes())
		}
		got[m.ID] = m.Result.Content[0].Text
	}
	for i := range calls {
		if want := fmt.Sprintf("c%d-%d", client, i); got[i] != want {
			return fmt.Errorf("client %d: id %d answered %q, want %q", client, i, got[i], want)
		}
	}
	return nil
}
