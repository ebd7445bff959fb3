package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/hosttest"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// Bridges, and gateways, that share a state key take each other's retries: each hands the
// key to its child (examples/everything on stdio, which signs its own requestState) in
// $RELAY_STATE_KEY, so a tool that asks, called through instance A, completes when its
// retry goes through instance B; an instance with another key refuses it. Three real relay
// processes on 127.0.0.1 each time, each with a real child: A reads the key from a file
// (with a line end), B from the variable, C has a key of its own.
func TestInstancesSharingAStateKeyTakeEachOthersRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	everything := hosttest.Exe(filepath.Join(dir, "everything"))
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", everything, "../../examples/everything").CombinedOutput(); err != nil {
		t.Fatalf("go build examples/everything: %v\n%s", err, out)
	}
	const key = "0d3b5c7e9f1a2b4c6d8e0f1a3b5c7d9e2f4a6b8c0d1e3f5a7b9c1d2e4f6a8b0c"
	keyFile, otherFile := filepath.Join(dir, "key"), filepath.Join(dir, "other")
	os.WriteFile(keyFile, []byte(key+"\n"), 0o600)
	os.WriteFile(otherFile, []byte(strings.Repeat("another fleet's key, 32 bytes+ ", 2)), 0o600)
	config := filepath.Join(dir, "servers.json")
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": everything, "args": []string{"-watch", "0"}}}})
	os.WriteFile(config, cfg, 0o600)

	for _, tc := range []struct {
		program, tool string
		args          []string
	}{
		{"bridge", "test_input_required_result_elicitation",
			[]string{"--listen", "127.0.0.1:0", "--pool", "1", "--", everything, "-watch", "0"}},
		{"gateway", "everything__test_input_required_result_elicitation",
			[]string{"--listen", "127.0.0.1:0", "--config", config, "--reload-check", "0"}},
	} {
		t.Run(tc.program, func(t *testing.T) {
			start := func(env []string, flags ...string) string {
				return startServing(ctx, t, env, append(append([]string{tc.program}, flags...), tc.args...)...)
			}
			a := start(nil, "--state-key-file", keyFile)
			b := start([]string{"RELAY_STATE_KEY=" + key})
			c := start(nil, "--state-key-file", otherFile)

			call := map[string]any{"name": tc.tool, "arguments": map[string]any{}}
			first := postCall(ctx, t, a, 1, call)
			var ir struct {
				ResultType   string `json:"resultType"`
				RequestState string `json:"requestState"`
			}
			if first.Error != nil || json.Unmarshal(first.Result, &ir) != nil || ir.ResultType != "input_required" || ir.RequestState == "" {
				t.Fatalf("relay %s A's first round: %s %v; want input_required with a requestState", tc.program, first.Result, first.Error)
			}
			call["inputResponses"] = map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
			call["requestState"] = ir.RequestState

			if res := postCall(ctx, t, b, 2, call); res.Error != nil || !strings.Contains(string(res.Result), "Hello, Ada!") {
				t.Errorf("relay %s B's answer to A's retry: %s %v; want a result greeting Ada", tc.program, res.Result, res.Error)
			}
			res := postCall(ctx, t, c, 3, call)
			if res.Error == nil || res.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(res.Error.Message, "requestState is not valid") {
				t.Errorf("relay %s C's answer to A's retry: %s %+v; want -32602, the requestState is not valid", tc.program, res.Result, res.Error)
			}
		})
	}
}

// startServing runs relay with args and env added to the test's environment until the test
// ends (then stops it with SIGTERM and expects a clean exit), and returns the address it
// says it serves MCP on.
func startServing(ctx context.Context, t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(rtBin, args...)
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	addr := make(chan string, 1)
	drained := make(chan struct{})
	go func() { // reads the address, then keeps draining relay's log so that it never blocks
		defer close(drained)
		for lines.Scan() {
			if _, rest, ok := strings.Cut(lines.Text(), "serving MCP on http://"); ok {
				a, _, _ := strings.Cut(rest, "/")
				select {
				case addr <- a:
				default: // said once; a second time is not waited for
				}
			}
		}
		close(addr)
	}()
	t.Cleanup(func() {
		if cmd.Process.Signal(syscall.SIGTERM) != nil { // Windows cannot send it: kill
			cmd.Process.Kill()
		}
		<-drained
		if err := cmd.Wait(); err != nil && !t.Failed() {
			t.Errorf("relay %v did not shut down cleanly on SIGTERM: %v", args, err)
		}
	})
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("relay %v exited before serving", args)
		}
		return a
	case <-ctx.Done():
		t.Fatalf("relay %v never said where it serves", args)
	}
	return ""
}

type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

// postCall sends a 2026-07-28 tools/call with params, from a client that declares
// elicitation, to the MCP endpoint at addr, and returns its answer (a JSON body, or the
// event of an event stream that has its id).
func postCall(ctx context.Context, t *testing.T, addr string, id int, params map[string]any) rpcAnswer {
	t.Helper()
	params["_meta"] = map[string]any{
		mcp.MetaProtocolVersion:    mcp.Version20260728,
		mcp.MetaClientCapabilities: map[string]any{"elicitation": map[string]any{}},
		mcp.MetaClientInfo:         map[string]any{"name": "statekey-test", "version": "1"},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.Version20260728)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", params["name"].(string))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(string(raw)) {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok && strings.Contains(data, fmt.Sprintf(`"id":%d`, id)) {
				raw = []byte(data)
			}
		}
	}
	var a rpcAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("POST to %s: %s, %q: %v", addr, res.Status, raw, err)
	}
	return a
}
