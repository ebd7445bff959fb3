package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
	"github.com/relayrt/relay/stdio"
)

// legacyChildEnv makes the test binary serve legacyServer on its stdio instead of running
// the tests: a local upstream of the initialize generation, as most servers from npm are.
const legacyChildEnv = "RELAY_GATEWAY_TEST_LEGACY_CHILD"

// legacyEntry is a configuration entry that runs the test binary as legacyServer.
func legacyEntry(name string) string {
	q, _ := json.Marshal(os.Args[0])
	return fmt.Sprintf(`%q: {"command": %s, "env": {%q: "1"}}`, name, q, legacyChildEnv)
}

// serveLegacyChild serves legacyServer over stdio and exits: server/discover is not a method
// it knows (MCP 2026-07-28, Basic › Lifecycle: a client falls back to initialize).
func serveLegacyChild() {
	in, feed := io.Pipe()
	out := &lockedWriter{w: os.Stdout}
	go func() { // ends with stdin; its end ends Serve
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if jsonrpc.IsObject(line) && string(jsonrpc.Field(line, "method")) == `"server/discover"` {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", jsonrpc.Field(line, "id"))
				continue
			}
			feed.Write(append(line, '\n'))
		}
		feed.Close()
	}()
	stdio.Serve(context.Background(), legacyServer().Runtime(), in, out)
	os.Exit(0)
}

// legacyServer's tools ask their client: confirm once, confirmBoth twice at once.
func legacyServer() *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}
	mcp.AddTool(s, &mcp.Tool{Name: "confirm"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
		res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Go on with " + in.Text + "?", RequestedSchema: schema})
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(fmt.Sprintf("%s: %s %v", in.Text, res.Action, res.Content["ok"])), nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "confirmBoth"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
		var wg sync.WaitGroup
		answers := make([]string, 2)
		errs := make([]error, 2)
		for i, part := range []string{"build", "ship"} {
			wg.Go(func() {
				res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Go on with " + in.Text + "'s " + part + "?", RequestedSchema: schema})
				if err != nil {
					errs[i] = err
					return
				}
				answers[i] = fmt.Sprintf("%s %s %v", part, res.Action, res.Content["ok"])
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		return mcp.TextResult(in.Text + ": " + strings.Join(answers, ", ")), nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "visit"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		// A URL-mode question: its elicitationId is new on every run.
		res, err := req.Elicit(ctx, &mcp.ElicitParams{Mode: mcp.ElicitURL, Message: "Sign in", URL: "https://example.com/signin"})
		if err != nil {
			return nil, err
		}
		return mcp.TextResult("visit: " + res.Action), nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "level"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return mcp.TextResult("at " + string(req.LogLevel())), nil // the session's: what the gateway asked for
	})
	return s
}

// lockedWriter keeps whole writes whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A local upstream of the initialize generation asks its questions as requests, over stdio,
// where nothing ties a question to the call it is asked for; while one call is in flight to
// it, the question is that call's, and reaches the host that made it: as a request of its own
// to a host of the initialize generation (MCP 2025-11-25, Client Features › Elicitation), as
// input_required to a 2026-07-28 host (Basic › Patterns › Multi-round requests). Two
// questions asked at once are both answered.
func TestGateway_LocalLegacyUpstreamsQuestionsReachTheHost(t *testing.T) {
	f := startGateway(t, config(legacyEntry("old")))
	var asked atomic.Int32
	answer := client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked.Add(1)
		if !strings.HasPrefix(p.Message, "Go on with deploy") {
			t.Errorf("the host was asked %q", p.Message)
		}
		// Each question its own answer, so that one given to the other question shows.
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": !strings.Contains(p.Message, "build")}}, nil
	})
	eachClient(t, f, func(t *testing.T, c *client.Client) {
		ctx := context.Background()
		asked.Store(0)
		r, err := c.CallTool(ctx, "old__confirm", noteIn{Text: "deploy"})
		if err != nil || text(r) != "deploy: accept true" {
			t.Fatalf("old__confirm: %q %v", text(r), err)
		}
		if asked.Load() != 1 {
			t.Errorf("the host was asked %d times, want 1", asked.Load())
		}
		for range 5 { // asked in either order, each answer goes to its own question
			r, err = c.CallTool(ctx, "old__confirmBoth", noteIn{Text: "deploy"})
			if err != nil || text(r) != "deploy: build accept false, ship accept true" {
				t.Fatalf("old__confirmBoth: %q %v", text(r), err)
			}
		}
	}, answer)
}

// The same over Streamable HTTP, where the questions come on the call's own stream: a remote
// upstream of the initialize generation that asks two questions at once gets both answered,
// for hosts of either generation.
func TestGateway_RemoteLegacyUpstreamsQuestionsReachTheHost(t *testing.T) {
	addr := freeAddr(t)
	serveAt(t, addr, legacyServer(), legacyOnly)
	f := startGateway(t, config(fmt.Sprintf(`"far": {"url": "http://%s/mcp"}`, addr)))
	answer := client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": !strings.Contains(p.Message, "build")}}, nil
	})
	eachClient(t, f, func(t *testing.T, c *client.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for range 5 {
			r, err := c.CallTool(ctx, "far__confirmBoth", noteIn{Text: "deploy"})
			if err != nil || text(r) != "deploy: build accept false, ship accept true" {
				t.Fatalf("far__confirmBoth: %q %v", text(r), err)
			}
		}
	}, answer)
}

// An upstream of the initialize generation has one log level for everything it sends, which
// the gateway sets: the lowest any host asked for of the calls in flight to it, so that each
// host gets what it asked for (the gateway filters for each) and the upstream sends nothing
// that no host wants.
func TestGateway_LegacyUpstreamLogsAtTheLowestLevelAsked(t *testing.T) {
	addr := freeAddr(t)
	serveAt(t, addr, legacyServer(), legacyOnly)
	f := startGateway(t, config(fmt.Sprintf(`"far": {"url": "http://%s/mcp"}`, addr)))
	url := serveHTTP(t, f.g.Server())
	ctx := context.Background()
	levelAt := func(c *client.Client, opts ...client.CallOption) string {
		t.Helper()
		r, err := c.CallTool(ctx, "far__level", nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return text(r)
	}
	quiet := connect(t, client.HTTP(url), client.WithVersion(mcp.Version20251125))
	verbose := connect(t, client.HTTP(url), client.WithVersion(mcp.Version20251125))
	if err := quiet.SetLogLevel(ctx, mcp.LevelWarning); err != nil {
		t.Fatal(err)
	}
	if err := verbose.SetLogLevel(ctx, mcp.LevelDebug); err != nil {
		t.Fatal(err)
	}
	if got := levelAt(quiet); got != "at warning" {
		t.Errorf("a call of the host at warning: the upstream logs %s", got)
	}
	if got := levelAt(verbose); got != "at debug" {
		t.Errorf("a call of the host at debug: the upstream logs %s", got)
	}
	if got := levelAt(quiet); got != "at warning" {
		t.Errorf("the host at debug has no call in flight: the upstream logs %s, want at warning", got)
	}
	modern := connect(t, client.HTTP(url))
	if got := levelAt(modern, client.WithLogLevel("error")); got != "at error" {
		t.Errorf("a 2026-07-28 call at error: the upstream logs %s", got)
	}
}

// A question whose every run differs in what the host does not answer (a URL-mode
// question's elicitationId) is answered by the host's retry all the same, once.
func TestGateway_LegacyUpstreamsURLQuestionIsAnsweredByRetry(t *testing.T) {
	f := startGateway(t, config(legacyEntry("old")))
	var asked atomic.Int32
	answer := client.WithURLElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept"}, nil
	})
	eachClient(t, f, func(t *testing.T, c *client.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		asked.Store(0)
		r, err := c.CallTool(ctx, "old__visit", struct{}{})
		if err != nil || text(r) != "visit: accept" || asked.Load() != 1 {
			t.Fatalf("old__visit: %q %v, the host asked %d times; want visit: accept, asked once", text(r), err, asked.Load())
		}
	}, answer)
}

// A logging/setLevel that the upstream does not answer holds up only the call that sent it
// (for at most setLevelWait): another host's call goes on meanwhile.
func TestGateway_AHungSetLevelHoldsUpNoOtherCall(t *testing.T) {
	addr := freeAddr(t)
	var hang atomic.Bool
	release := make(chan struct{})
	serveAt(t, addr, legacyServer(), func(h http.Handler) http.Handler {
		return legacyOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if hang.Load() && strings.Contains(string(body), `"logging/setLevel"`) {
				select {
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			h.ServeHTTP(w, r)
		}))
	})
	defer close(release)
	f := startGateway(t, config(fmt.Sprintf(`"far": {"url": "http://%s/mcp"}`, addr)))
	url := serveHTTP(t, f.g.Server())
	ctx := context.Background()
	verbose := connect(t, client.HTTP(url), client.WithVersion(mcp.Version20251125))
	quiet := connect(t, client.HTTP(url), client.WithVersion(mcp.Version20251125))
	verbose.SetLogLevel(ctx, mcp.LevelDebug)
	quiet.SetLogLevel(ctx, mcp.LevelWarning)
	hang.Store(true)
	vctx, vcancel := context.WithTimeout(ctx, 10*time.Second)
	defer vcancel()
	verboseDone := make(chan struct{})
	go func() { // its setLevel hangs
		defer close(verboseDone)
		verbose.CallTool(vctx, "far__level", nil)
	}()
	defer func() { <-verboseDone }()
	time.Sleep(300 * time.Millisecond)
	qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
	defer qcancel()
	if _, err := quiet.CallTool(qctx, "far__level", nil); err != nil {
		t.Errorf("a call while another host's setLevel hangs: %v", err)
	}
}
