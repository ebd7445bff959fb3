package interop

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The same SDK client, told to speak a 2025 revision: it skips server/discover and opens
// with initialize, and Relay serves the connection as a legacy session (DIGEST B1, B3).

func legacy(version string) *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: version}
}

// B1: initialize echoes each legacy version the client asks for; the requests that follow
// carry no modern _meta and their results are served; ping works again (it is legacy).
func TestB1_LegacyHandshakeEcho(t *testing.T) {
	for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run(v, func(t *testing.T) {
			srv := startSession(t, echoBin, nil, legacy(v))
			if got := srv.cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %q, want %q echoed", got, v)
			}
			ctx := stepCtx(t)
			if err := srv.cs.Ping(ctx, nil); err != nil {
				t.Errorf("legacy ping: %v", err)
			}
			res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "legacy " + v}})
			if err != nil || textOf(t, res.Content) != "legacy "+v {
				t.Fatalf("echo: %v %v", res, err)
			}
			msgs := srv.wire.messages(t)
			if out := sent(msgs); out[0].Method != "initialize" || out[1].Method != "notifications/initialized" {
				t.Errorf("first messages %s, %s; want initialize, notifications/initialized", out[0].Raw, out[1].Raw)
			}
			for _, m := range msgs {
				if m.Sent && m.Method == "server/discover" {
					t.Errorf("the SDK probed server/discover though told to speak %s", v)
				}
				if m.Sent && strings.Contains(string(m.Params), "io.modelcontextprotocol/protocolVersion") {
					t.Errorf("a legacy request carries modern _meta: %s", m.Raw)
				}
			}
		})
	}
}

// B1: progress and cancellation in a legacy session behave as in the modern one.
func TestB1_LegacyProgressAndCancel(t *testing.T) {
	rec := newProgressRecorder()
	srv := startSession(t, echoBin, &mcp.ClientOptions{ProgressNotificationHandler: rec.handler}, legacy("2025-11-25"))
	p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 200}}
	p.SetProgressToken("legacy-progress")
	if _, err := srv.cs.CallTool(stepCtx(t), p); err != nil {
		t.Fatal(err)
	}
	checkProgressOnWire(t, srv.wire.messages(t), "legacy-progress", 200)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 20000}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed-out call: %v", err)
	}
	res, err := srv.cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "alive"}})
	if err != nil || textOf(t, res.Content) != "alive" {
		t.Fatalf("echo after cancel: %v %v", res, err)
	}
}

// B1, B3: in a legacy session test_sampling and test_elicitation ask the client with
// server-to-client requests (never input_required), which the SDK answers from its handlers.
func TestB1_LegacySamplingAndElicitation(t *testing.T) {
	srv := legacyEverything(t, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "legacy answer"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "lee", "email": "lee@example.com"}}, nil
		},
	})
	ctx := stepCtx(t)
	res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hi"}})
	if err != nil || !strings.Contains(textOf(t, res.Content), "legacy answer") {
		t.Fatalf("sampling: %+v %v", res, err)
	}
	res, err = srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "who?"}})
	if err != nil || !strings.Contains(textOf(t, res.Content), "lee@example.com") {
		t.Fatalf("elicitation: %+v %v", res, err)
	}
	methods := map[string]bool{}
	for _, m := range srv.wire.messages(t) {
		if !m.Sent && m.isRequest() {
			methods[m.Method] = true
		}
		if !m.Sent && m.isResponse() && strings.Contains(string(m.Result), `"input_required"`) {
			t.Errorf("input_required sent to a legacy client (B3): %s", m.Raw)
		}
	}
	if !methods["sampling/createMessage"] || !methods["elicitation/create"] {
		t.Errorf("server-to-client requests seen: %v, want sampling/createMessage and elicitation/create", methods)
	}
}

// B1: logging/setLevel, then test_tool_with_logging's messages; resources/subscribe, then
// notifications/resources/updated, until resources/unsubscribe.
func TestB1_LegacyLoggingAndSubscribe(t *testing.T) {
	var mu sync.Mutex
	var logs int
	updates := make(chan string, 64)
	srv := legacyEverything(t, &mcp.ClientOptions{
		LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs++
			mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updates <- req.Params.URI:
			default:
			}
		},
	}, "-watch", "100ms")
	ctx := stepCtx(t)
	if err := srv.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range srv.wire.messages(t) {
		if m.Method == "notifications/message" {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d log messages, want 3", n)
	}

	if err := srv.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updates:
		if uri != "test://watched-resource" {
			t.Errorf("update for %q", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/updated after resources/subscribe")
	}
	if err := srv.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // an update already on its way may still land
	before := len(srv.wire.messages(t))
	time.Sleep(400 * time.Millisecond)
	for _, m := range srv.wire.messages(t)[before:] {
		if m.Method == "notifications/resources/updated" {
			t.Errorf("update after resources/unsubscribe: %s", m.Raw)
		}
	}
}

func legacyEverything(t *testing.T, opts *mcp.ClientOptions, args ...string) *server {
	t.Helper()
	if everythingBin == "" {
		t.Skipf("skipping: examples/everything is not available: %v", everythingErr)
	}
	return startSession(t, everythingBin, opts, legacy("2025-11-25"), args...)
}
