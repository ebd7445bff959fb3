package client_test

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// buildEverything builds Relay's examples/everything once per test.
func buildEverything(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds examples/everything")
	}
	bin := filepath.Join(t.TempDir(), "everything")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/everything").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startEverythingHTTP runs examples/everything -http on a free port and returns its URL.
func startEverythingHTTP(t *testing.T, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "-http", addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; i < 200; i++ { // until it listens
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	return "http://" + addr + "/mcp"
}

// Relay's examples/everything, a real peer over stdio and HTTP, spoken to in both
// generations: the fixture the official suite expects answers through the typed calls.
func TestEverythingOverStdioAndHTTPBothGenerations(t *testing.T) {
	bin := buildEverything(t)
	url := startEverythingHTTP(t, bin)
	peers := []struct {
		name string
		tr   func() client.Transport
	}{
		{"stdio", func() client.Transport { return client.Command(bin) }},
		{"http", func() client.Transport { return client.HTTP(url) }},
	}
	for _, p := range peers {
		for _, g := range generations {
			t.Run(p.name+"/"+g.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				c, err := client.Connect(ctx, p.tr(), g.opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if c.Modern() != g.modern || c.Version() != g.version {
					t.Fatalf("modern %v version %q", c.Modern(), c.Version())
				}
				tools := 0
				for _, err := range c.ListTools(ctx) {
					if err != nil {
						t.Fatal(err)
					}
					tools++
				}
				if tools < 10 {
					t.Fatalf("%d tools", tools)
				}
				res, err := c.CallTool(ctx, "test_simple_text", nil)
				if err != nil || res.Content[0].(*mcp.TextContent).Text != "This is a simple text response for testing." {
					t.Fatalf("test_simple_text: %+v, %v", res, err)
				}
				var steps []float64
				if _, err := c.CallTool(ctx, "test_tool_with_progress", map[string]any{},
					client.WithProgress(func(p client.Progress) { steps = append(steps, p.Progress) })); err != nil {
					t.Fatal(err)
				}
				if len(steps) != 3 || steps[2] != 100 {
					t.Fatalf("progress %v", steps)
				}
				r, err := c.ReadResource(ctx, "test://static-binary")
				if err != nil || len(r.Contents[0].Blob) == 0 {
					t.Fatalf("static-binary: %+v, %v", r, err)
				}
				pr, err := c.GetPrompt(ctx, "test_prompt_with_arguments", map[string]string{"arg1": "a", "arg2": "b"})
				if err != nil || len(pr.Messages) == 0 {
					t.Fatalf("prompt: %+v, %v", pr, err)
				}
				if err := c.Ping(ctx); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
