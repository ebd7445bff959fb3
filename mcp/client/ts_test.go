package client_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// serverEverything returns node and the entry point of the official TypeScript
// server-everything (2026.8.31, pinned in interop/legacy-server: the TypeScript SDK's
// server, initialize generation only), installing it when it is not there yet.
func serverEverything(t *testing.T) (node, entry string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: server-everything runs on Node.js")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir, _ := filepath.Abs(filepath.Join("..", "..", "interop", "legacy-server"))
	entry = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Skip("npm is not installed, and interop/legacy-server has no node_modules")
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return node, entry
}

// startServerEverything runs server-everything's HTTP transport mode on a free port until
// the test ends, and returns the port once it listens.
func startServerEverything(t *testing.T, node, entry, mode string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	server := exec.Command(node, entry, mode)
	server.Env = append(os.Environ(), "PORT="+port)
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })
	for i := 0; i < 400; i++ { // until it listens
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	return port
}

// The official TypeScript SDK's server-everything, over stdio, Streamable HTTP and the
// deprecated HTTP+SSE transport: the
// client finds it is of the initialize generation (its server/discover is -32601), and
// every typed call works, with progress, pagination and cancellation.
func TestTypeScriptServerEverything(t *testing.T) {
	node, entry := serverEverything(t)
	port := startServerEverything(t, node, entry, "streamableHttp")
	ssePort := startServerEverything(t, node, entry, "sse")
	peers := []struct {
		name string
		tr   func() client.Transport
	}{
		{"stdio", func() client.Transport {
			tr := client.Command(node, entry, "stdio")
			tr.Stderr = &strings.Builder{} // its banner is not this test's output
			tr.CloseWait = time.Second     // it does not exit when its stdin ends: Close goes on to SIGTERM
			return tr
		}},
		{"http", func() client.Transport { return client.HTTP("http://127.0.0.1:" + port + "/mcp") }},
		// The deprecated HTTP+SSE transport: its POSTs to the URL are refused, and the
		// client falls back to GET and the endpoint event.
		{"http+sse", func() client.Transport { return client.HTTP("http://127.0.0.1:" + ssePort + "/sse") }},
	}
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := client.Connect(ctx, p.tr())
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				start := time.Now()
				err := c.Close()
				t.Logf("Close: %v after %v", err, time.Since(start))
			}()
			if c.Modern() || c.Version() != mcp.Version20251125 {
				t.Fatalf("modern %v version %q", c.Modern(), c.Version())
			}
			tools := map[string]bool{}
			for tool, err := range c.ListTools(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				tools[tool.Name] = true
			}
			if !tools["echo"] || !tools["trigger-long-running-operation"] {
				t.Fatalf("tools %v", tools)
			}
			res, err := c.CallTool(ctx, "echo", map[string]any{"message": "hi"})
			if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hi") {
				t.Fatalf("echo: %+v, %v", res, err)
			}
			var steps []client.Progress
			if _, err := c.CallTool(ctx, "trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3},
				client.WithProgress(func(p client.Progress) { steps = append(steps, p) })); err != nil {
				t.Fatal(err)
			}
			if len(steps) != 3 || steps[2].Progress != 3 || steps[2].Total != 3 {
				t.Fatalf("progress %+v", steps)
			}
			callCtx, stop := context.WithCancel(ctx)
			time.AfterFunc(100*time.Millisecond, stop)
			if _, err := c.CallTool(callCtx, "trigger-long-running-operation", map[string]any{"duration": 30, "steps": 3}); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled call: %v", err)
			}
			resources := 0
			var first string
			for r, err := range c.ListResources(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				if first == "" {
					first = r.URI
				}
				resources++
			}
			if resources == 0 {
				t.Fatal("no resources")
			}
			if rr, err := c.ReadResource(ctx, first); err != nil || len(rr.Contents) == 0 {
				t.Fatalf("read %s: %+v, %v", first, rr, err)
			}
			var prompt *mcp.Prompt
			for pr, err := range c.ListPrompts(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				if len(pr.Arguments) == 0 && prompt == nil {
					prompt = pr
				}
			}
			if prompt == nil {
				t.Fatal("no prompt without arguments")
			}
			if gp, err := c.GetPrompt(ctx, prompt.Name, nil); err != nil || len(gp.Messages) == 0 {
				t.Fatalf("prompt %s: %+v, %v", prompt.Name, gp, err)
			}
			if err := c.Ping(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
