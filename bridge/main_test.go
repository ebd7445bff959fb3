package bridge_test

// Shared fixture for the bridge tests: the binaries they run (built once, lazily, with -race
// under -race), a running `relay bridge` and a 2026-07-28 HTTP client for it. The look at the
// bridge's children through /proc is in children_linux_test.go.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/internal/hosttest"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/stdio"
	"github.com/relayrt/relay/supervise"
)

// childEnv turns the test binary into a stdio MCP server (see runTestChild): a pool child
// that tells which process served each call.
const childEnv = "BRIDGE_TEST_CHILD"

var binDir string // where the binaries are built; removed after the tests

func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(childEnv); ok {
		os.Exit(runTestChild())
	}
	dir, err := os.MkdirTemp("", "relay-bridge-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bridge:", err)
		os.Exit(2)
	}
	binDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// ---- binaries ----

type builtBinary struct {
	once sync.Once
	path string
	err  error
}

var binaries sync.Map // package path → *builtBinary

// binary builds a main package of the module once per test run (with -race under -race) and
// returns its path; a test that needs it fails if it does not build.
func binary(t testing.TB, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the bridge tests build and run real binaries")
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

func relayBin(t testing.TB) string      { return binary(t, "./cmd/relay") }
func echoBin(t testing.TB) string       { return binary(t, "./examples/echo") }
func everythingBin(t testing.TB) string { return binary(t, "./examples/everything") }

// ---- a running relay bridge ----

// syncBuffer is a bytes.Buffer written by a process's stderr while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type relayProc struct {
	cmd     *exec.Cmd
	url     string
	stderr  *syncBuffer
	exited  chan struct{} // closed when the process has been waited for
	exitErr error         // set before exited closes
	client  *http.Client
}

// startRelay runs `relay bridge --listen <free port> [flags] -- child...` and waits until it
// serves. Cleanup sends SIGTERM (unless the test already stopped it), requires exit code 0
// and fails the test if relay reported a data race or a panic.
func startRelay(t *testing.T, flags []string, child ...string) *relayProc {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"bridge", "--listen", addr}, flags...)
	args = append(append(args, "--"), child...)
	r := &relayProc{
		cmd:    exec.Command(relayBin(t), args...),
		url:    "http://" + addr + "/mcp",
		stderr: &syncBuffer{},
		exited: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}},
	}
	r.cmd.Stderr = r.stderr
	// A binary built with -race sleeps a second on exit; the children are stopped one by one.
	r.cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { // owned by the test: ends when the process does, which cleanup ensures
		r.exitErr = r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		r.client.CloseIdleConnections()
		select {
		case <-r.exited:
		default:
			r.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-r.exited:
				if r.exitErr != nil {
					t.Errorf("relay bridge did not exit cleanly on SIGTERM: %v", r.exitErr)
				}
			case <-time.After(30 * time.Second):
				r.cmd.Process.Kill()
				<-r.exited
				t.Errorf("relay bridge did not exit within 30 s of SIGTERM")
			}
		}
		if s := r.stderr.String(); strings.Contains(s, "DATA RACE") || strings.Contains(s, "panic:") {
			t.Errorf("relay bridge reported a data race or a panic:\n%s", s)
		}
		if t.Failed() {
			t.Logf("relay bridge stderr:\n%s", tail(r.stderr.String(), 8000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(r.stderr.String(), "serving MCP") {
		select {
		case <-r.exited:
			t.Fatalf("relay bridge exited before serving: %v\n%s", r.exitErr, r.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("relay bridge did not start serving within 60 s:\n%s", r.stderr)
		}
	}
	return r
}

func (r *relayProc) pid() int { return r.cmd.Process.Pid }

// stop sends SIGTERM and waits for the exit.
func (r *relayProc) stop(t *testing.T, within time.Duration) error {
	t.Helper()
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
		return r.exitErr
	case <-time.After(within):
		t.Fatalf("relay bridge did not exit within %v of SIGTERM:\n%s", within, tail(r.stderr.String(), 8000))
		return nil
	}
}

func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// ---- a 2026-07-28 client ----

// rpcReply is a JSON-RPC answer over HTTP.
type rpcReply struct {
	Status int
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func (r rpcReply) String() string {
	if r.Error != nil {
		return fmt.Sprintf("HTTP %d, error %d %q %s", r.Status, r.Error.Code, r.Error.Message, r.Error.Data)
	}
	return fmt.Sprintf("HTTP %d, result %.300s", r.Status, r.Result)
}

// text returns the text of a CallToolResult's first content item.
func (r rpcReply) text() string {
	var res struct {
		Content []struct{ Text string }
	}
	json.Unmarshal(r.Result, &res)
	if len(res.Content) == 0 {
		return ""
	}
	return res.Content[0].Text
}

// call sends one 2026-07-28 request, with its mirrored headers, and returns the answer (the
// last JSON-RPC response of an SSE stream, or the JSON body). err is for HTTP failures and
// bodies that hold no answer; safe for concurrent use.
func (r *relayProc) call(ctx context.Context, id int, method string, params map[string]any) (rpcReply, error) {
	return r.callCaps(ctx, id, method, params, map[string]any{})
}

// callCaps is call with the client capabilities given.
func (r *relayProc) callCaps(ctx context.Context, id int, method string, params map[string]any, caps map[string]any) (rpcReply, error) {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		mcp.MetaProtocolVersion:    mcp.Version20260728,
		mcp.MetaClientCapabilities: caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return rpcReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.Version20260728)
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	} else if uri, ok := params["uri"].(string); ok { // resources/read
		req.Header.Set("Mcp-Name", uri)
	} else if id, ok := params["taskId"].(string); ok { // tasks/get, tasks/update, tasks/cancel
		req.Header.Set("Mcp-Name", id)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return rpcReply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return rpcReply{}, err
	}
	frame := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		frame = nil
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"id"`) {
				frame = []byte(data)
			}
		}
	}
	var rep rpcReply
	if err := json.Unmarshal(frame, &rep); err != nil || (rep.Result == nil && rep.Error == nil) {
		return rpcReply{}, fmt.Errorf("HTTP %d, no JSON-RPC answer in %.300q", resp.StatusCode, raw)
	}
	rep.Status = resp.StatusCode
	return rep, nil
}

// ---- the test child ----

// whoamiCommand is a pool child of the in-process tests: the test binary itself, serving
// runTestChild. Its environment is a slice with room to spare, as append leaves it.
func whoamiCommand(t testing.TB) supervise.Command {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return supervise.Command{Path: exe, Env: append(os.Environ(), childEnv+"=1", "GORACE=atexit_sleep_ms=0"), Name: "whoami"}
}

// runTestChild serves MCP on stdio with the tool whoami: it waits ms milliseconds and
// answers with its pid. It is annotated read-only, so a bridge may replay it. crash and die
// end the process.
func runTestChild() int {
	s := mcp.NewServer(mcp.Implementation{Name: "bridge-test-child", Version: "1.0.0"}, nil)
	type whoamiArgs struct {
		MS int `json:"ms" jsonschema:"how long to wait, in milliseconds"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Wait ms milliseconds, then answer with this process's pid.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in whoamiArgs) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
			}
			return mcp.TextResult(strconv.Itoa(os.Getpid())), nil
		})
	// whoami_task is whoami as a task, for clients that declare the tasks extension.
	mcp.AddTool(s, &mcp.Tool{Name: "whoami_task", Description: "whoami, as a task."},
		func(ctx context.Context, req *mcp.CallToolRequest, in whoamiArgs) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
			}
			return mcp.TextResult(strconv.Itoa(os.Getpid())), nil
		}, mcp.AsTask(mcp.TaskOptional))
	defer s.Close()
	// crash kills the process: annotated read-only, so the proxy replays it, and finds it
	// is the request that kills its children; die does too, but is not safe to repeat.
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit at once, with status 3.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "die", Description: "Exit at once, with status 3."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	if err := stdio.ServeStdio(context.Background(), s.Runtime()); err != nil {
		fmt.Fprintln(os.Stderr, "bridge test child:", err)
		return 1
	}
	return 0
}
