package gateway_test

// Shared fixture for the gateway's tests: Relay's examples built once (with -race under
// -race), a gateway over them in this process, and clients for it in memory and over
// Streamable HTTP on 127.0.0.1.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/relayrt/relay/gateway"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/hosttest"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

var binDir string // where the examples are built; removed after the tests

func TestMain(m *testing.M) {
	if os.Getenv(legacyChildEnv) == "1" {
		serveLegacyChild()
	}
	dir, err := os.MkdirTemp("", "relay-gateway-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(2)
	}
	binDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

type builtBinary struct {
	once sync.Once
	path string
	err  error
}

var binaries sync.Map // package path → *builtBinary

// binary builds a main package of the module once per test run and returns its path.
func binary(t testing.TB, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the gateway tests build and run real servers")
	}
	v, _ := binaries.LoadOrStore(pkg, &builtBinary{})
	b := v.(*builtBinary)
	b.once.Do(func() {
		b.path = hosttest.Exe(filepath.Join(binDir, filepath.Base(pkg)))
		gobin, err := exec.LookPath("go")
		if err != nil {
			gobin = filepath.Join(goruntime.GOROOT(), "bin", "go")
		}
		args := []string{"build", "-o", b.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command(gobin, append(args, pkg)...)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func echoBin(t testing.TB) string       { return binary(t, "./examples/echo") }
func everythingBin(t testing.TB) string { return binary(t, "./examples/everything") }
func relayBin(t testing.TB) string      { return binary(t, "./cmd/relay") }

// config returns a host configuration: servers maps a name to its entry, in the order given.
func config(entries ...string) []byte {
	return []byte(`{"mcpServers": {` + strings.Join(entries, ",") + `}}`)
}

// entry returns one server entry of a configuration, with extra members (JSON, without braces).
func entry(name, command, extra string) string {
	q, _ := json.Marshal(command)
	if extra != "" {
		extra = ", " + extra
	}
	return fmt.Sprintf(`%q: {"command": %s%s}`, name, q, extra)
}

// fixture is a running gateway and what it logged.
type fixture struct {
	g    *gateway.Gateway
	logs *observer.ObservedLogs
}

// startGateway starts a gateway over cfg in this process and waits until every upstream
// has been tried once; the test's end closes it.
func startGateway(t *testing.T, cfg []byte) *fixture {
	t.Helper()
	return startGatewayWith(t, cfg, nil)
}

// startGatewayWith is startGateway with options changed by tune.
func startGatewayWith(t *testing.T, cfg []byte, tune func(*gateway.Options)) *fixture {
	t.Helper()
	c, err := gateway.ParseConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	// No health probes during a test: over stdio an upstream's log messages name no request,
	// and reach the gateway's call only while it is the one call in flight to that upstream.
	opts := &gateway.Options{Logger: zap.New(core), ChildStderr: testWriter{t},
		HealthEvery: time.Hour}
	if tune != nil {
		tune(opts)
	}
	g, err := gateway.New(context.Background(), c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.Started(ctx); err != nil {
		t.Fatalf("the upstreams did not start: %v", err)
	}
	return &fixture{g: g, logs: logs}
}

// testWriter passes the children's stderr to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// A way of reaching the gateway.
type door struct {
	name string
	open func(t *testing.T, f *fixture) client.Transport
}

var doors = []door{
	{"memory", func(t *testing.T, f *fixture) client.Transport {
		return &client.MemoryTransport{Server: f.g.Server().Runtime()}
	}},
	{"http", func(t *testing.T, f *fixture) client.Transport { return client.HTTP(serveHTTP(t, f.g.Server())) }},
}

// serveHTTP serves s over Streamable HTTP on 127.0.0.1 and returns its endpoint.
func serveHTTP(t *testing.T, s *mcp.Server) string {
	return serveHTTPWith(t, s, &httpx.MCPOptions{})
}

// serveHTTPWith is serveHTTP with the handler's options (their Logger is always none).
func serveHTTPWith(t *testing.T, s *mcp.Server, opts *httpx.MCPOptions) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = zap.NewNop()
	h := httpx.NewMCPHandler(s, opts)
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() { // ends with Shutdown, below
		defer close(served)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		h.Close()
		srv.Close()
		<-served
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// generations: the client detects 2026-07-28 (the gateway serves it), or is pinned to the
// initialize generation, as every host in use today.
var generations = []struct {
	name string
	opts []client.Option
}{
	{"2026-07-28", nil},
	{"2025-11-25", []client.Option{client.WithVersion(mcp.Version20251125)}},
}

// eachClient runs f with a client of the gateway for every door and generation.
func eachClient(t *testing.T, f *fixture, run func(t *testing.T, c *client.Client), opts ...client.Option) {
	for _, d := range doors {
		for _, gen := range generations {
			t.Run(d.name+"/"+gen.name, func(t *testing.T) {
				run(t, connect(t, d.open(t, f), append(append([]client.Option{}, gen.opts...), opts...)...))
			})
		}
	}
}

// connect connects a client; the test's end closes it.
func connect(t *testing.T, tr client.Transport, opts ...client.Option) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, tr, opts...)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// names lists a client's tools (or prompts) by name.
func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	var out []string
	for tool, err := range c.ListTools(context.Background()) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out = append(out, tool.Name)
	}
	return out
}

func promptNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	var out []string
	for p, err := range c.ListPrompts(context.Background()) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		out = append(out, p.Name)
	}
	return out
}

// text returns the text of a tool result's first item.
func text(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	if tc, ok := r.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
