package interop

// The official Go SDK client (v1.8.0, 2026-07-28 over Streamable HTTP) through `relay bridge`:
// to a pool of modern children (examples/everything) and to a pool of legacy-only ones (the
// reference TypeScript server-everything, pinned in interop/legacy-server).

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startBridge runs `relay bridge --listen <free port> --pool N -- child...` from the
// repository root and returns its MCP URL once it serves. Cleanup sends SIGTERM and requires
// exit code 0 (where SIGTERM cannot be sent, on Windows, it kills relay), and fails the test
// if relay reported a data race or a panic.
func startBridge(t *testing.T, pool int, child ...string) string {
	t.Helper()
	return startBridgeFlags(t, []string{"--pool", strconv.Itoa(pool)}, child...)
}

// startBridgeFlags is startBridge with relay bridge's flags given.
func startBridgeFlags(t *testing.T, flags []string, child ...string) string {
	t.Helper()
	return startBridgeAt(t, freeAddr(t), flags, child...)
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startBridgeAt is startBridgeFlags listening on addr.
func startBridgeAt(t *testing.T, addr string, flags []string, child ...string) string {
	t.Helper()
	return startRelayAt(t, addr, append(append(append([]string{"bridge", "--listen", addr}, flags...), "--"), child...)...)
}

// startRelayAt runs relay with args (a command that serves HTTP on addr, and says
// "serving MCP" on stderr once it does), and returns its endpoint; the test's end stops it
// with SIGTERM and checks that it exited cleanly, with no data race or panic.
func startRelayAt(t *testing.T, addr string, args ...string) string {
	t.Helper()
	what := "relay " + args[0]
	cmd := exec.Command(relayBin, args...)
	cmd.Dir = repoRoot()
	// A binary built with -race sleeps a second on exit, and the children stop one by one.
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // ends with the process, which cleanup ensures
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			cmd.Process.Kill() // Windows cannot send SIGTERM
			<-exited
		} else {
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("%s did not exit cleanly on SIGTERM: %v", what, err)
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Errorf("%s did not exit within 30 s of SIGTERM", what)
			}
		}
		if s := stderr.String(); strings.Contains(s, "DATA RACE") || strings.Contains(s, "panic:") {
			t.Errorf("%s reported a data race or a panic:\n%s", what, s)
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", what, stderr)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "serving MCP") {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s exited before serving: %v\n%s", what, err, stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not serve within 60 s:\n%s", what, stderr)
		}
	}
	return "http://" + addr + "/mcp"
}

// connectHTTP connects the SDK client to url over Streamable HTTP, recording the wire.
func connectHTTP(t *testing.T, url string, opts *mcp.ClientOptions) (*mcp.ClientSession, *wireLog) {
	t.Helper()
	wire := &wireLog{}
	client := mcp.NewClient(&mcp.Implementation{Name: "relay-interop-bridge", Version: "0.0.1"}, opts)
	transport := &mcp.LoggingTransport{
		Transport: &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1},
		Writer:    wire,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v\nwire:\n%s", url, err, wire.summary())
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the HTTP session: %v", err)
		}
		if t.Failed() {
			t.Logf("wire:\n%s", wire.summary())
		}
	})
	return cs, wire
}

// TestA13_BridgeModernClientModernChildren: 2026-07-28 client, 2026-07-28 children
// (`relay bridge --pool 2 -- examples/everything -watch 100ms`): everything is forwarded as
// is — discovery, tools, progress, sampling and elicitation through input_required, which
// pass through the bridge to the client's handlers and back, and a resource subscription
// (subscriptions/listen held on a child).
func TestA13_BridgeModernClientModernChildren(t *testing.T) {
	if everythingBin == "" {
		t.Skipf("skipping: examples/everything is not available: %v", everythingErr)
	}
	url := startBridge(t, 2, everythingBin, "-watch", "100ms")
	rec := newProgressRecorder()
	updates := make(chan string, 64)
	var mu sync.Mutex
	var asked []*mcp.CreateMessageParams
	sampled := make(chan struct{}, 16)
	proceed := make(chan struct{}, 16) // the handler answers once told to
	cs, wire := connectHTTP(t, url, &mcp.ClientOptions{
		ProgressNotificationHandler: rec.handler,
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updates <- req.Params.URI:
			default:
			}
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
		},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			mu.Unlock()
			sampled <- struct{}{}
			select {
			case <-proceed:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "interop-model", StopReason: "endTurn",
				Content: &mcp.TextContent{Text: "four, said the model"}}, nil
		},
	})

	t.Run("A4 discover is the child's", func(t *testing.T) {
		res := cs.InitializeResult()
		if res.ProtocolVersion != modernVersion {
			t.Errorf("negotiated %q through the bridge, want %q", res.ProtocolVersion, modernVersion)
		}
		if res.ServerInfo == nil || res.ServerInfo.Name != "relay-everything" {
			t.Errorf("serverInfo %+v, want the child's (relay-everything)", res.ServerInfo)
		}
		if c := res.Capabilities; c == nil || c.Tools == nil || c.Prompts == nil || c.Resources == nil {
			t.Errorf("capabilities %+v lack tools, prompts or resources", c)
		}
	})

	t.Run("A14 list and call tools", func(t *testing.T) {
		var names []string
		for tl, err := range cs.Tools(stepCtx(t), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tl.Name)
		}
		for _, want := range fixtureTools {
			if !slices.Contains(names, want) {
				t.Errorf("tools/list through the bridge lacks %s: %v", want, names)
			}
		}
		res, err := cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "test_simple_text"})
		if err != nil || res.IsError || textOf(t, res.Content) == "" {
			t.Fatalf("test_simple_text: %v %+v", err, res)
		}
		res, err = cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "test_error_handling"})
		if err != nil || !res.IsError {
			t.Errorf("test_error_handling: want a tool error (isError), got %v %+v", err, res)
		}
	})

	t.Run("A7 progress reaches the client with its own token", func(t *testing.T) {
		p := &mcp.CallToolParams{Name: "test_tool_with_progress"}
		p.SetProgressToken("bridge-progress")
		res, err := cs.CallTool(stepCtx(t), p)
		if err != nil || res.IsError {
			t.Fatalf("test_tool_with_progress: %v %+v", err, res)
		}
		var got []float64
		for range 100 {
			if ps := rec.get("bridge-progress"); len(ps) >= 3 {
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

	t.Run("A6 sampling through input_required", func(t *testing.T) {
		proceed <- struct{}{}
		res, err := cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "test_sampling",
			Arguments: map[string]any{"prompt": "What is 2+2?"}})
		<-sampled
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || !strings.Contains(textOf(t, res.Content), "four, said the model") {
			t.Errorf("result %+v does not carry the model's answer", res.Content)
		}
		mu.Lock()
		n := len(asked)
		mu.Unlock()
		if n != 1 {
			t.Errorf("CreateMessageHandler ran %d times, want 1", n)
		}
		if rounds := mrtrRounds(t, wire, "test_sampling", "sampling/createMessage"); rounds != 2 {
			t.Errorf("%d rounds, want 2", rounds)
		}
	})

	t.Run("A6 elicitation through input_required", func(t *testing.T) {
		res, err := cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "test_elicitation",
			Arguments: map[string]any{"message": "Who are you?"}})
		if err != nil || res.IsError || !strings.Contains(textOf(t, res.Content), "ada@example.com") {
			t.Errorf("test_elicitation: %v %+v; want the user's answer in the result", err, res)
		}
	})

	t.Run("A9 a resource subscription through the bridge", func(t *testing.T) {
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

	// A3: a 2026-07-28 server is stateless, and the pool may send each request to any child;
	// but a retry's requestState is the issuing child's (examples/everything signs it with a
	// key of its own, as mcp.ServerOptions.StateKey allows). Here the first round goes to the
	// idle child while the other is busy with test_reconnection (300 ms); the busy call ends
	// before the client answers, so the least-loaded child for the retry is the other one.
	t.Run("A6 the retry reaches the child that issued its requestState", func(t *testing.T) {
		busy := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "test_reconnection"})
			busy <- err
		}()
		time.Sleep(100 * time.Millisecond) // the busy call has reached a child
		done := make(chan struct{})
		var res *mcp.CallToolResult
		var err error
		go func() {
			defer close(done)
			res, err = cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "test_sampling",
				Arguments: map[string]any{"prompt": "And 3+3?"}})
		}()
		select {
		case <-sampled:
		case <-done:
			t.Fatalf("test_sampling ended without asking the client: %v %+v", err, res)
		}
		if err := <-busy; err != nil {
			t.Fatalf("test_reconnection: %v", err)
		}
		proceed <- struct{}{}
		<-done
		if err != nil {
			t.Fatalf("the retry of test_sampling failed: %v", err)
		}
		if res.IsError || !strings.Contains(textOf(t, res.Content), "four, said the model") {
			t.Errorf("result %+v does not carry the model's answer", res.Content)
		}
	})
}

// legacyServer returns the command that runs the pinned TypeScript server-everything on
// stdio, installing it with npm ci when needed; it skips the test without Node.js or npm.
func legacyServer(t *testing.T) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipping: node is not installed (the legacy server is the TypeScript server-everything)")
	}
	dir, err := filepath.Abs(filepath.Join(repoRoot(), "interop", "legacy-server"))
	if err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Skip("skipping: npm is not installed, and interop/legacy-server has no node_modules")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return []string{node, entry, "stdio"}
}

// TestB3_BridgeModernClientLegacyChildren: 2026-07-28 client, initialize-generation children
// (`relay bridge --pool 2 -- node …/server-everything/dist/index.js stdio`, the reference
// TypeScript server, whose SDK knows no version past 2025-11-25). The bridge initializes
// each child itself, answers server/discover from what they declared, and modernizes every
// result (resultType, serverInfo): the SDK client negotiates 2026-07-28, lists the tools
// and calls echo, and subscribes to a resource (a listen the bridge serves with a child of
// its own).
func TestB3_BridgeModernClientLegacyChildren(t *testing.T) {
	url := startBridge(t, 2, legacyServer(t)...)
	cs, wire := connectHTTP(t, url, nil)
	res := cs.InitializeResult()
	if res.ProtocolVersion != modernVersion {
		t.Errorf("negotiated %q through the bridge, want %q", res.ProtocolVersion, modernVersion)
	}
	if res.ServerInfo == nil || res.ServerInfo.Name != "mcp-servers/everything" {
		t.Errorf("serverInfo %+v, want the child's (mcp-servers/everything)", res.ServerInfo)
	}
	if res.Capabilities == nil || res.Capabilities.Tools == nil {
		t.Fatalf("capabilities %+v lack tools", res.Capabilities)
	}

	var echo *mcp.Tool
	var names []string
	for tl, err := range cs.Tools(stepCtx(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
		if tl.Name == "echo" {
			echo = tl
		}
	}
	if echo == nil {
		t.Fatalf("tools/list through the bridge lacks echo: %v", names)
	}
	t.Logf("the legacy child's tools: %v", names)

	for i, text := range []string{"hello through the bridge", "é ✓ \"quoted\" \\ and a\nnewline"} {
		out, err := cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": text}})
		if err != nil {
			t.Fatalf("echo %d: %v", i, err)
		}
		if out.IsError || textOf(t, out.Content) != "Echo: "+text {
			t.Errorf("echo %d: %+v, want %q", i, out.Content, "Echo: "+text)
		}
	}

	// A6: server-everything asks its client for a sampling with a request of its own; the
	// bridge turns it into input_required, the SDK's handler answers, its retry reaches the
	// call still waiting in the child. The first client declared no sampling: -32021.
	if _, err := cs.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "trigger-sampling-request",
		Arguments: map[string]any{"prompt": "2+2?"}}); err == nil || !strings.Contains(err.Error(), "-32021") && !strings.Contains(err.Error(), "sampling") {
		t.Errorf("trigger-sampling-request without sampling declared: %v; want -32021", err)
	}
	sampler, _ := connectHTTP(t, url, &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "interop-model", StopReason: "endTurn",
				Content: &mcp.TextContent{Text: "four, said the model"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	elicited, err := sampler.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "trigger-elicitation-request"})
	declined := false
	for _, c := range contentOf(elicited) {
		if tc, ok := c.(*mcp.TextContent); ok && strings.Contains(tc.Text, "declined") {
			declined = true
		}
	}
	if err != nil || elicited.IsError || !declined {
		t.Errorf("trigger-elicitation-request, declined by the client: %v %+v; want the child's result saying so", err, elicited)
	}
	sampled, err := sampler.CallTool(stepCtx(t), &mcp.CallToolParams{Name: "trigger-sampling-request",
		Arguments: map[string]any{"prompt": "2+2?"}})
	if err != nil || sampled.IsError || !strings.Contains(textOf(t, sampled.Content), "four, said the model") {
		t.Errorf("trigger-sampling-request with sampling: %v %+v; want the model's answer in the result", err, sampled)
	}

	// A9: the legacy child has no subscriptions/listen; the bridge gives the listen a child of
	// its own, subscribed to the resource, and acknowledges it with the listen's id.
	var resource string
	for r, err := range cs.Resources(stepCtx(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		resource = r.URI
		break
	}
	if err := cs.Subscribe(stepCtx(t), &mcp.SubscribeParams{URI: resource}); err != nil {
		t.Fatalf("subscribe to %s through the bridge: %v\nwire:\n%s", resource, err, wire.summary())
	}
	listen, ok := wire.request(t, "subscriptions/listen", nil)
	if !ok {
		t.Fatal("no subscriptions/listen on the wire")
	}
	wire.waitFor(t, 10*time.Second, "the listen's acknowledgement", func(ms []wireMsg) bool {
		return slices.ContainsFunc(ms, func(m wireMsg) bool {
			return !m.Sent && m.Method == "notifications/subscriptions/acknowledged" &&
				strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":`+string(listen.ID)) &&
				strings.Contains(string(m.Params), resource)
		})
	})
	// Unsubscribe ends the listen; the SDK then also POSTs notifications/cancelled, which
	// Relay's HTTP handler refuses with 400 under 2026-07-28 (where a disconnect is the
	// cancellation), and the SDK reports that: so it comes last.
	cs.Unsubscribe(stepCtx(t), &mcp.UnsubscribeParams{URI: resource})

	// On the wire: every result the client got is a modern one.
	for _, m := range wire.messages(t) {
		if m.Sent || !m.isResponse() || m.Result == nil {
			continue
		}
		var r struct {
			ResultType string                     `json:"resultType"`
			Meta       map[string]json.RawMessage `json:"_meta"`
		}
		decode(t, m.Result, &r)
		if r.ResultType != "complete" || r.Meta["io.modelcontextprotocol/serverInfo"] == nil {
			t.Errorf("a result lacks resultType complete or _meta serverInfo: %.300s", m.Raw)
		}
	}
}

func contentOf(res *mcp.CallToolResult) []mcp.Content {
	if res == nil {
		return nil
	}
	return res.Content
}
