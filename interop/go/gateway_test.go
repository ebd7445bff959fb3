package interop

// The official Go SDK client (v1.8.0, 2026-07-28 over Streamable HTTP) through
// `relay gateway --listen`: one endpoint for examples/echo and examples/everything.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startGateway writes a host configuration of the given servers (name → entry, JSON) and
// runs relay gateway --listen over it; it returns the endpoint.
func startGateway(t *testing.T, servers map[string]any) string {
	t.Helper()
	cfg, err := json.Marshal(map[string]any{"mcpServers": servers, "globalShortcut": "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	return startRelayAt(t, addr, "gateway", "--config", path, "--listen", addr, "--quiet-child")
}

// TestGateway_SDKClientThroughTheGateway: merged lists with prefixes and a deny glob,
// calls routed by prefix, progress under the client's token, sampling through
// input_required (the upstream's question reaches the SDK's handler and the retry goes
// back to the upstream), and a resource subscription through the gateway.
func TestGateway_SDKClientThroughTheGateway(t *testing.T) {
	if everythingBin == "" {
		t.Skipf("skipping: examples/everything is not available: %v", everythingErr)
	}
	url := startGateway(t, map[string]any{
		"echo": map[string]any{"command": echoBin, "type": "stdio"},
		"everything": map[string]any{"command": everythingBin, "args": []string{"-watch", "100ms"},
			"relay": map[string]any{"prefix": "ev", "tools": map[string]any{"deny": []string{"test_elicitation*"}}}},
	})
	rec := newProgressRecorder()
	updates := make(chan string, 64)
	cs, _ := connectHTTP(t, url, &mcp.ClientOptions{
		ProgressNotificationHandler: rec.handler,
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updates <- req.Params.URI:
			default:
			}
		},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "interop-model", StopReason: "endTurn",
				Content: &mcp.TextContent{Text: "four, through the gateway"}}, nil
		},
	})
	if res := cs.InitializeResult(); res.ProtocolVersion != modernVersion || res.ServerInfo == nil || res.ServerInfo.Name != "relay-gateway" {
		t.Errorf("discover through the gateway: %s %+v", res.ProtocolVersion, res.ServerInfo)
	}

	t.Run("merged tools with prefixes, deny applied", func(t *testing.T) {
		var names []string
		for tl, err := range cs.Tools(stepCtx(t), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tl.Name)
		}
		for _, want := range []string{"echo__echo", "echo__sleep", "ev__test_simple_text", "ev__test_sampling"} {
			if !slices.Contains(names, want) {
				t.Errorf("tools/list lacks %s: %v", want, names)
			}
		}
		if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "ev__test_elicitation") }) {
			t.Errorf("deny test_elicitation* let one through: %v", names)
		}
	})

	t.Run("calls routed by prefix", func(t *testing.T) {
		res, err := cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "echo__echo", Arguments: map[string]any{"text": "sdk"}})
		if err != nil || res.IsError || textOf(t, res.Content) != "sdk" {
			t.Errorf("echo__echo: %v %+v", err, res)
		}
		res, err = cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "ev__test_error_handling"})
		if err != nil || !res.IsError {
			t.Errorf("ev__test_error_handling: want a tool error, got %v %+v", err, res)
		}
	})

	t.Run("progress under the client's token", func(t *testing.T) {
		p := &mcp.CallToolParams{Name: "ev__test_tool_with_progress"}
		p.SetProgressToken("gateway-progress")
		if res, err := cs.CallTool(stepCtx(t), p); err != nil || res.IsError {
			t.Fatalf("ev__test_tool_with_progress: %v %+v", err, res)
		}
		// The SDK hands notifications to its handler on a goroutine of its own: wait for them.
		var got []float64
		for range 100 {
			if ps := rec.get("gateway-progress"); len(ps) >= 3 {
				for _, n := range ps {
					got = append(got, n.Progress)
				}
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !slices.Equal(got, []float64{0, 50, 100}) {
			t.Errorf("progress for the client's token: %v, want [0 50 100]", got)
		}
	})

	t.Run("sampling through input_required", func(t *testing.T) {
		res, err := cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "ev__test_sampling",
			Arguments: map[string]any{"prompt": "What is 2+2?"}})
		if err != nil || res.IsError || !strings.Contains(textOf(t, res.Content), "four, through the gateway") {
			t.Errorf("ev__test_sampling: %v %+v", err, res)
		}
	})

	t.Run("a resource subscription through the gateway", func(t *testing.T) {
		if err := cs.Subscribe(stepCtx(t), &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
			t.Fatal(err)
		}
		select {
		case uri := <-updates:
			if uri != "test://watched-resource" {
				t.Errorf("an update of %q", uri)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no notifications/resources/updated within 10 s")
		}
	})
}
