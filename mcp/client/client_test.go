package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// transport is one way of reaching the fixture.
type transport struct {
	name string
	open func(t *testing.T) client.Transport
}

// selfChild returns a transport that runs this test binary as the child named kind.
func selfChild(t *testing.T, kind string) *client.CommandTransport {
	tr := client.Command(os.Args[0], "-test.run=^$")
	tr.Command.Env = append(os.Environ(), "RELAY_CLIENT_TEST_CHILD="+kind)
	return tr
}

var transports = []transport{
	{"memory", func(t *testing.T) client.Transport {
		return &client.MemoryTransport{Server: newFixture().Runtime()}
	}},
	{"stdio", func(t *testing.T) client.Transport { return selfChild(t, "fixture") }},
	{"http", func(t *testing.T) client.Transport {
		h := httpx.NewMCPHandler(newFixture(), &httpx.MCPOptions{Logger: zap.NewNop()})
		srv := httptest.NewServer(h)
		t.Cleanup(func() { srv.Close(); h.Close() })
		return client.HTTP(srv.URL + "/mcp")
	}},
}

// generations are the two ways of speaking: detected (the fixture is modern), and pinned
// to the initialize generation.
var generations = []struct {
	name    string
	opts    []client.Option
	modern  bool
	version string
}{
	{"detected-2026-07-28", nil, true, mcp.Version20260728},
	{"pinned-2025-11-25", []client.Option{client.WithVersion(mcp.Version20251125)}, false, mcp.Version20251125},
}

// each runs f for every transport and generation, with the client options opts.
func each(t *testing.T, f func(t *testing.T, c *client.Client), opts ...client.Option) {
	for _, tr := range transports {
		for _, g := range generations {
			t.Run(tr.name+"/"+g.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c, err := client.Connect(ctx, tr.open(t), append(slices.Clip(g.opts), opts...)...)
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				defer func() {
					if err := c.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				}()
				if c.Modern() != g.modern || c.Version() != g.version {
					t.Fatalf("generation: modern %v version %q, want %v %q", c.Modern(), c.Version(), g.modern, g.version)
				}
				if c.ServerInfo().Name != "fixture" || c.Instructions() != "use echo" {
					t.Errorf("server info %+v, instructions %q", c.ServerInfo(), c.Instructions())
				}
				f(t, c)
			})
		}
	}
}

func TestListToolsFollowsEveryPageInOrder(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		var names []string
		for tool, err := range c.ListTools(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		want := []string{"ask", "askTwice", "asktask", "block", "blocktask", "echo", "fail", "flaky", "image", "log", "progress", "slow", "touch", "visit", "visitdone", "weather"}
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Fatalf("tools %v, want %v (page size 2: eight pages)", names, want)
		}
	})
}

func TestListToolsStopsWhenTheLoopBreaks(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		n := 0
		for _, err := range c.ListTools(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			break
		}
		if n != 1 {
			t.Fatalf("%d tools seen, want 1", n)
		}
	})
}

func TestCallToolReturnsTypedContent(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		ctx := context.Background()
		// echo's region is an x-mcp-header argument, which 2026-07-28 HTTP mirrors: the
		// client learns it by listing the tools itself, as nobody listed them first.
		res, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi ", "region": "eu"})
		if err != nil {
			t.Fatal(err)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hi eu" || res.IsError {
			t.Fatalf("echo: %#v", res.Content[0])
		}
		res, err = c.CallTool(ctx, "image", nil)
		if err != nil {
			t.Fatal(err)
		}
		if ic, ok := res.Content[0].(*mcp.ImageContent); !ok || string(ic.Data) != "\x01\x02\x03" || ic.MimeType != "image/png" {
			t.Fatalf("image: %#v", res.Content[0])
		}
	})
}

func TestCallToolFailureIsAResultWithIsError(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		res, err := c.CallTool(context.Background(), "fail", map[string]any{})
		if err != nil || !res.IsError {
			t.Fatalf("fail: %+v, %v", res, err)
		}
	})
}

func TestUnknownToolIsAProtocolError(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		_, err := c.CallTool(context.Background(), "nope", map[string]any{})
		if err == nil {
			t.Fatal("an unknown tool answered")
		}
	})
}

func TestProgressReachesTheCallback(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		var mu sync.Mutex
		var got []client.Progress
		res, err := c.CallTool(context.Background(), "progress", map[string]any{"steps": 3},
			client.WithProgress(func(p client.Progress) {
				mu.Lock()
				got = append(got, p)
				mu.Unlock()
			}))
		if err != nil || res.IsError {
			t.Fatalf("progress: %+v, %v", res, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 3 || got[0].Progress != 1 || got[2].Progress != 3 || got[2].Total != 3 || got[1].Message != "step 2" {
			t.Fatalf("progress seen: %+v", got)
		}
	})
}

func TestCancelledContextEndsTheCallAndTheServerWork(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := c.CallTool(ctx, "block", map[string]any{})
			done <- err
		}()
		time.Sleep(50 * time.Millisecond) // let the call reach the server (either order passes)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call: %v", err)
		}
		// The connection still works after a cancel.
		if _, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "after"}); err != nil {
			t.Fatalf("call after a cancel: %v", err)
		}
	})
}

func TestResourcesListAndRead(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		ctx := context.Background()
		var uris []string
		for r, err := range c.ListResources(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			uris = append(uris, r.URI)
		}
		slices.Sort(uris)
		if !slices.Equal(uris, []string{"test://blob", "test://text"}) {
			t.Fatalf("resources %v", uris)
		}
		res, err := c.ReadResource(ctx, "test://text")
		if err != nil || res.Contents[0].Text != "hello" || res.Contents[0].MimeType != "text/plain" {
			t.Fatalf("read text: %+v, %v", res, err)
		}
		res, err = c.ReadResource(ctx, "test://blob")
		if err != nil || string(res.Contents[0].Blob) != "\x00\x01\x02" {
			t.Fatalf("read blob: %+v, %v", res, err)
		}
	})
}

func TestPromptsListAndGet(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		ctx := context.Background()
		n := 0
		for p, err := range c.ListPrompts(ctx) {
			if err != nil || p.Name != "greet" {
				t.Fatalf("prompt %+v, %v", p, err)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("%d prompts", n)
		}
		res, err := c.GetPrompt(ctx, "greet", map[string]string{"who": "Ada"})
		if err != nil {
			t.Fatal(err)
		}
		if tc, ok := res.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "hello Ada" || res.Messages[0].Role != "user" {
			t.Fatalf("greet: %+v", res.Messages[0])
		}
	})
}

func TestPingAnswers(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		if err := c.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// MCP 2026-07-28, Versioning: a server that does not answer server/discover, or answers it
// with an error that is not a modern one, is of the initialize generation.
func TestA15_LegacyServerIsDetectedAndInitialized(t *testing.T) {
	for _, kind := range []string{"legacy-silent", "legacy-not-found"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			c, err := client.Connect(ctx, selfChild(t, kind), client.WithDiscoverTimeout(300*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Modern() || c.Version() != mcp.Version20250618 || c.ServerInfo().Name != "old" {
				t.Fatalf("modern %v version %q info %+v", c.Modern(), c.Version(), c.ServerInfo())
			}
			if err := c.Ping(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// MCP 2026-07-28, Transports › stdio › Shutdown: a child that ignores the end of its stdin
// is terminated.
func TestD_CloseTerminatesAChildThatIgnoresEOF(t *testing.T) {
	tr := selfChild(t, "deaf")
	tr.CloseWait = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // setup fails at once: Connect then closes the child
	_, err := client.Connect(ctx, tr, client.WithVersion(mcp.Version20260728))
	if err == nil {
		t.Fatal("Connect to a deaf child succeeded")
	}
	if tr.Command.ProcessState == nil || tr.Command.ProcessState.Success() {
		t.Fatalf("the child was not terminated: %v", tr.Command.ProcessState)
	}
}

func TestHTTPErrorWithoutJSONRPCBodyIsHTTPError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	defer srv.Close()
	_, err := client.Connect(context.Background(), client.HTTP(srv.URL), client.WithVersion(mcp.Version20251125))
	var he *client.HTTPError
	if !errors.As(err, &he) || he.Status != 404 {
		t.Fatalf("err %v", err)
	}
}

var _ = exec.Command

func TestConcurrentCallsEachGetTheirOwnAnswer(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := range 20 {
			wg.Go(func() {
				text := strings.Repeat("x", i)
				res, err := c.CallTool(context.Background(), "echo", map[string]any{"text": text})
				switch {
				case err != nil:
					errs <- err
				case res.Content[0].(*mcp.TextContent).Text != text:
					errs <- fmt.Errorf("call %d got %q", i, res.Content[0].(*mcp.TextContent).Text)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// MCP 2026-07-28, Utilities › Logging: a request that names a level gets the messages at
// or above it, tied to the call.
func TestA10_LogLevelBringsTheCallsMessages(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		if !c.Modern() {
			t.Skip("the initialize generation sets the level with logging/setLevel, not sent yet")
		}
		var mu sync.Mutex
		var got []string
		_, err := c.CallTool(context.Background(), "log", map[string]any{}, client.WithLogLevel("info"),
			client.WithNotifications(func(method string, params json.RawMessage) {
				var m struct {
					Level string `json:"level"`
					Data  string `json:"data"`
				}
				json.Unmarshal(params, &m)
				mu.Lock()
				got = append(got, method+" "+m.Level+" "+m.Data)
				mu.Unlock()
			}))
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 || got[0] != "notifications/message warning wanted" {
			t.Fatalf("notifications %q", got)
		}
	})
}

// MCP 2026-07-28, Transports › stdio › Unexpected termination: calls in flight are lost.
// The client fails them, and every later call, with ErrClosed (it does not restart the
// child yet).
func TestD_ChildThatDiesFailsCallsWithErrClosed(t *testing.T) {
	tr := selfChild(t, "fixture")
	ctx := context.Background()
	c, err := client.Connect(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "block", map[string]any{})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the call start (either order passes)
	tr.Command.Process.Kill()
	if err := <-done; !errors.Is(err, client.ErrClosed) {
		t.Fatalf("call in flight: %v", err)
	}
	if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"}); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("call after the death: %v", err)
	}
}

// askHandlers answer the fixture's ask tool: the elicitation leaves age out, which its
// schema's default fills.
var askHandlers = []client.Option{
	client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		if p.Message != "Who are you?" {
			return nil, fmt.Errorf("elicitation %q", p.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}}, nil
	}),
	client.WithSampling(func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		blocks, err := mcp.DecodeSamplingContent(p.Messages[0].Content)
		if err != nil {
			return nil, err
		}
		return &mcp.CreateMessageResult{Role: "assistant", Model: "echo",
			Content: mustJSON(map[string]any{"type": "text", "text": "you said " + blocks[0].(*mcp.TextContent).Text})}, nil
	}),
	client.WithRoots(func(ctx context.Context) ([]mcp.Root, error) {
		return []mcp.Root{{URI: "file:///a"}, {URI: "file:///b"}}, nil
	}),
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// The server's questions reach the client's handlers in both generations: as
// server-to-client requests under the initialize generation, as input_required results
// retried with inputResponses under 2026-07-28 (MCP 2026-07-28, Basic › Patterns ›
// Multi-round-trip requests).
func TestHandlersAnswerWhatTheServerAsks(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		res, err := c.CallTool(context.Background(), "ask", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		want := "accept Ann 30: you said hello, 2 roots"
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != want || res.IsError {
			t.Fatalf("ask: %#v, want %q", res.Content[0], want)
		}
	}, askHandlers...)
}

// A client with no handler declares no capability, and a question it cannot answer is an
// error that names what is missing, not a hang.
func TestNoHandlerIsAClearError(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, "ask", map[string]any{})
		if err == nil && !res.IsError {
			t.Fatalf("ask answered without handlers: %#v", res.Content)
		}
		msg := fmt.Sprint(err)
		if res != nil && len(res.Content) > 0 {
			msg = res.Content[0].(*mcp.TextContent).Text
		}
		if !strings.Contains(msg, "elicitation") {
			t.Fatalf("the error does not name what is missing: %s", msg)
		}
	})
}

// Close ends the handlers still answering the server's requests (their context ends) and
// waits for them: no goroutine outlives the client (goleak checks it at the end).
func TestCloseEndsTheHandlersAnsweringTheServer(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			started := make(chan struct{})
			c, err := client.Connect(context.Background(), tr.open(t), client.WithVersion(mcp.Version20251125),
				client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
					close(started)
					<-ctx.Done()
					return nil, ctx.Err()
				}))
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				res, err := c.CallTool(context.Background(), "ask", map[string]any{})
				if err == nil && !res.IsError {
					err = fmt.Errorf("the call succeeded: %#v", res.Content)
				} else {
					err = nil // an error, or the tool's failure if the server was quick to answer
				}
				done <- err
			}()
			<-started
			c.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCompleteReturnsTheServersValues(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		res, err := c.Complete(context.Background(), mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, "name", "al",
			map[string]string{"lang": "en"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Values, []string{"alpha@greet/en", "alps@greet/en"}) || res.Total != 2 {
			t.Fatalf("completion %+v", res)
		}
	})
}

// SetLogLevel lowers the level for later calls: logging/setLevel for the session under
// the initialize generation, the request _meta under 2026-07-28.
func TestSetLogLevelAppliesToLaterCalls(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		ctx := context.Background()
		if err := c.SetLogLevel(ctx, "debug"); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var levels []string
		_, err := c.CallTool(ctx, "log", map[string]any{}, client.WithNotifications(func(method string, params json.RawMessage) {
			var p struct {
				Level string `json:"level"`
			}
			json.Unmarshal(params, &p)
			mu.Lock()
			levels = append(levels, p.Level)
			mu.Unlock()
		}))
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(levels, []string{"debug", "warning"}) {
			t.Fatalf("log levels seen %v, want debug and warning", levels)
		}
	})
}

// Listen hears of a subscribed resource's change in both generations: through
// subscriptions/listen under 2026-07-28, resources/subscribe under the initialize one. Its
// first notification is the acknowledgement, after which no change is missed: one touch,
// one update.
func TestListenHearsOfAChangedResource(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		heard := make(chan string, 16)
		done := make(chan error, 1)
		go func() {
			done <- c.Listen(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"test://text"}},
				func(method string, params json.RawMessage) {
					var p struct {
						URI           string                 `json:"uri"`
						Notifications mcp.SubscriptionFilter `json:"notifications"`
					}
					json.Unmarshal(params, &p)
					select {
					case heard <- method + " " + p.URI + strings.Join(p.Notifications.ResourceSubscriptions, ","):
					default: // more than the test looks at
					}
				})
		}()
		next := func() string {
			select {
			case got := <-heard:
				return got
			case <-time.After(10 * time.Second):
				t.Fatal("Listen's fn was not called")
				return ""
			}
		}
		if got := next(); got != "notifications/subscriptions/acknowledged test://text" {
			t.Fatalf("first heard %q, want the acknowledgement of test://text", got)
		}
		for _, uri := range []string{"test://other", "test://text"} {
			if _, err := c.CallTool(context.Background(), "touch", map[string]any{"uri": uri}); err != nil {
				t.Fatal(err)
			}
		}
		if got := next(); got != "notifications/resources/updated test://text" {
			t.Fatalf("heard %q, want the one update of test://text", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Listen: %v", err)
		}
		if len(heard) != 0 {
			t.Errorf("heard more: %q", <-heard)
		}
	})
}

// MCP 2025-11-25, Transports › Session Management: when the server ends the session (here
// by a DELETE the test sends behind the client's back), the next request gets 404; the
// client starts a new session and sends the request again, and the caller sees nothing.
func TestEndedSessionIsReplacedAndTheCallSentAgain(t *testing.T) {
	h := httpx.NewMCPHandler(newFixture(), &httpx.MCPOptions{Logger: zap.NewNop()})
	var mu sync.Mutex
	var session string
	inits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			mu.Lock()
			inits++
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
		if sid := w.Header().Get("Mcp-Session-Id"); sid != "" {
			mu.Lock()
			session = sid
			mu.Unlock()
		}
	}))
	defer func() { srv.Close(); h.Close() }()
	ctx := context.Background()
	c, err := client.Connect(ctx, client.HTTP(srv.URL+"/mcp"), client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "one"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	del, _ := http.NewRequest(http.MethodDelete, srv.URL+"/mcp", nil)
	del.Header.Set("Mcp-Session-Id", session)
	mu.Unlock()
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	res, err := c.CallTool(ctx, "echo", map[string]any{"text": "two"})
	if err != nil {
		t.Fatalf("the call after the session ended: %v", err)
	}
	if tc := res.Content[0].(*mcp.TextContent); tc.Text != "two" {
		t.Fatalf("echo: %q", tc.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	if inits != 2 {
		t.Fatalf("%d sessions started, want 2", inits)
	}
}

// When the session ended and the new one could not be started (the server refused its
// initialize, for now: a fleet whose store is down), the call fails, and the next call
// starts the new session rather than going out with none.
func TestARefusedReinitializeIsTriedAgainByTheNextCall(t *testing.T) {
	h := httpx.NewMCPHandler(newFixture(), &httpx.MCPOptions{Logger: zap.NewNop()})
	var mu sync.Mutex
	var session string
	refuse := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && refuse {
			refuse = false
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"Server busy; retry","data":{"retryable":true}}}`))
			return
		}
		mu.Unlock()
		h.ServeHTTP(w, r)
		if sid := w.Header().Get("Mcp-Session-Id"); sid != "" {
			mu.Lock()
			session = sid
			mu.Unlock()
		}
	}))
	defer func() { srv.Close(); h.Close() }()
	ctx := context.Background()
	c, err := client.Connect(ctx, client.HTTP(srv.URL+"/mcp"), client.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mu.Lock()
	del, _ := http.NewRequest(http.MethodDelete, srv.URL+"/mcp", nil)
	del.Header.Set("Mcp-Session-Id", session)
	refuse = true
	mu.Unlock()
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "one"}); err == nil {
		t.Fatal("the call whose new session was refused succeeded")
	}
	res, err := c.CallTool(ctx, "echo", map[string]any{"text": "two"})
	if err != nil {
		t.Fatalf("the next call: %v", err)
	}
	if tc := res.Content[0].(*mcp.TextContent); tc.Text != "two" {
		t.Fatalf("echo: %q", tc.Text)
	}
}

// A URL-mode elicitation goes to the URL handler, never to the form one, which a client
// with only the latter does not declare.
func TestURLElicitationReachesItsOwnHandler(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		res, err := c.CallTool(context.Background(), "visit", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if tc := res.Content[0].(*mcp.TextContent); tc.Text != "visited: accept" || res.IsError {
			t.Fatalf("visit: %q (isError %v)", tc.Text, res.IsError)
		}
	}, client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return nil, fmt.Errorf("the form handler got a %q elicitation", p.Mode)
	}), client.WithURLElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		if p.URL != "https://example.com/login" || p.Message != "Sign in" {
			return nil, fmt.Errorf("url elicitation %+v", p)
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}))
	each(t, func(t *testing.T, c *client.Client) {
		res, err := c.CallTool(context.Background(), "visit", map[string]any{})
		if err == nil && !res.IsError {
			t.Fatalf("a client without URL mode was sent to a URL: %#v", res.Content)
		}
	}, client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept"}, nil
	}))
}

// Sampling with tools (2025-11-25 on): the handler sees the tools offered, and its model's
// tool use goes back to the server as such.
func TestSamplingHandlerSeesTheToolsOffered(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		res, err := c.CallTool(context.Background(), "weather", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if tc := res.Content[0].(*mcp.TextContent); tc.Text != `lookup {"city":"Paris"}` || res.IsError {
			t.Fatalf("weather: %q (isError %v)", tc.Text, res.IsError)
		}
	}, client.WithSampling(func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		if len(p.Tools) != 1 || p.Tools[0].Name != "lookup" || p.ToolChoice == nil || p.ToolChoice.Mode != mcp.ToolChoiceAuto {
			return nil, fmt.Errorf("tools offered %+v, choice %+v", p.Tools, p.ToolChoice)
		}
		return &mcp.CreateMessageResult{Role: "assistant", Model: "m", StopReason: "toolUse",
			Content: mustJSON(map[string]any{"type": "tool_use", "id": "u1", "name": "lookup", "input": map[string]any{"city": "Paris"}})}, nil
	}))
}

// A supervised child that dies in the middle of a read-only call is started again, and the
// call is sent to the new child: the caller sees only the result (the core of relay
// supervise, in-process). Both generations: the handshake is replayed to the new child.
func TestSupervisedChildRestartsAndTheCallIsReplayed(t *testing.T) {
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "crashed")
			tr := client.Supervised(os.Args[0], "-test.run=^$")
			tr.Spec.Command.Env = append(os.Environ(), "RELAY_CLIENT_TEST_CHILD=fixture", "RELAY_CLIENT_TEST_FLAKY="+marker)
			tr.Spec.MinBackoff = 10 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := client.Connect(ctx, tr, g.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := c.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			// Called at once: the proxy has not learned the tools' annotations from the child
			// yet, so the call waits for its list, and is then known safe to replay.
			res, err := c.CallTool(ctx, "flaky", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if tc := res.Content[0].(*mcp.TextContent); tc.Text != "survived" {
				t.Fatalf("flaky: %q", tc.Text)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Fatal("the child never crashed: the test proves nothing")
			}
			if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "after"}); err != nil {
				t.Fatalf("a call to the new child: %v", err)
			}
		})
	}
}

// A call the server runs as a task (2026-07-28, io.modelcontextprotocol/tasks) is waited
// for by CallTool as if it lasted that long, its questions answered through the client's
// handlers; under the initialize generation the same call runs in its request.
func TestCallToolWaitsForATask(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		res, err := c.CallTool(context.Background(), "slow", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("slow done (task %v)", c.Modern())
		if tc := res.Content[0].(*mcp.TextContent); tc.Text != want {
			t.Fatalf("slow: %q, want %q", tc.Text, want)
		}
		res, err = c.CallTool(context.Background(), "asktask", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if tc := res.Content[0].(*mcp.TextContent); tc.Text != "task asked Ann" {
			t.Fatalf("asktask: %q", tc.Text)
		}
	}, askHandlers...)
}

// StartTool hands the task over: its id, Wait for its result, GetTask for its state; a
// cancelled context cancels the task CallTool waits for.
func TestStartToolHoldsTheTask(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		if !c.Modern() {
			return // the initialize generation has no tasks
		}
		ctx := context.Background()
		task, err := c.StartTool(ctx, "slow", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if task.ID == "" || task.Status != "working" {
			t.Fatalf("task %+v", task)
		}
		res, err := task.Wait(ctx)
		if err != nil || res.Content[0].(*mcp.TextContent).Text != "slow done (task true)" {
			t.Fatalf("Wait: %+v, %v", res, err)
		}
		again, err := c.GetTask(ctx, task.ID)
		if err != nil || again.Status != "completed" {
			t.Fatalf("GetTask: %+v, %v", again, err)
		}
		held, err := c.StartTool(ctx, "blocktask", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if err := held.Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := held.Wait(ctx); !errors.Is(err, client.ErrTaskCancelled) {
			t.Fatalf("a cancelled task: %v", err)
		}
		callCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if _, err := c.CallTool(callCtx, "blocktask", map[string]any{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("CallTool past its context: %v", err)
		}
	})
}

// Two questions the server asks at once, during one call, are each answered, under their own
// ids: over Streamable HTTP both come on the call's stream, one after the other, and the
// second must not overwrite the first's id while its handler runs.
func TestQuestionsAskedAtOnceAreEachAnswered(t *testing.T) {
	each(t, func(t *testing.T, c *client.Client) {
		for range 5 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := c.CallTool(ctx, "askTwice", map[string]any{})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			want := "accept Who are you?, accept Who else?"
			if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != want || res.IsError {
				t.Fatalf("askTwice: %#v, want %q", res.Content[0], want)
			}
		}
	}, client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": p.Message}}, nil
	}))
}
