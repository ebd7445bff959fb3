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

// A fleet's instances that share a state key take each other's retries: a tool that asks
// (input_required) is called on instance A, and the retry with the answer and A's
// requestState goes to instance B, which runs it to its end. An instance with another key
// refuses the same retry with an error that says to send the request again. Three real
// processes of this program, on 127.0.0.1, built once: A reads the key from a file written
// as `openssl rand -hex 32 > key` writes it (with a line end), B from $RELAY_STATE_KEY
// without one (as $(cat key) gives it), C has a key of its own.
func TestInstancesSharingAStateKeyTakeEachOthersRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := hosttest.Exe(filepath.Join(t.TempDir(), "everything"))
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const key = "4f1c2a9be07d53a8c6f0e9b7d2a41c85f3e6b90a7d18c24e5b3f6a0c9d8e7b12" // 64 bytes of hex
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	otherFile := filepath.Join(dir, "other-key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherFile, []byte(strings.Repeat("another key of 32 bytes or more ", 2)), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("help names the flag and the variable", func(t *testing.T) {
		out, _ := exec.CommandContext(ctx, bin, "-help").CombinedOutput()
		for _, want := range []string{"-state-key-file PATH", "RELAY_STATE_KEY", "at least 32 bytes"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("everything -help does not say %q:\n%s", want, out)
			}
		}
	})
	t.Run("a short key is refused at start", func(t *testing.T) {
		short := filepath.Join(dir, "short")
		os.WriteFile(short, []byte("too short\n"), 0o600)
		cmd := exec.CommandContext(ctx, bin, "-http", freeAddr(t), "-state-key-file", short)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "head -c 32 /dev/urandom") {
			t.Errorf("everything with a 9-byte key: %v, %q; want exit status 2 and how to make a key", err, out)
		}
	})

	a := startInstance(ctx, t, bin, nil, "-state-key-file", keyFile)
	b := startInstance(ctx, t, bin, []string{"RELAY_STATE_KEY=" + key})
	c := startInstance(ctx, t, bin, nil, "-state-key-file", otherFile)

	t.Run("-http serves the probes an orchestrator needs", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
			res, err := http.Get("http://" + a + path)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %s, want 200 OK", path, res.Status)
			}
		}
	})

	// The first round, on A: the tool asks the user's name.
	first := post(ctx, t, a, 1, map[string]any{"name": "test_input_required_result_elicitation", "arguments": map[string]any{}})
	var ir struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if first.Error != nil || json.Unmarshal(first.Result, &ir) != nil || ir.ResultType != "input_required" ||
		ir.InputRequests["user_name"] == nil || ir.RequestState == "" {
		t.Fatalf("instance A's first round: %s %v; want input_required asking user_name, with a requestState", first.Result, first.Error)
	}
	retry := map[string]any{"name": "test_input_required_result_elicitation", "arguments": map[string]any{},
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}},
		"requestState":   ir.RequestState}

	t.Run("the retry completes on B, which shares the key", func(t *testing.T) {
		res := post(ctx, t, b, 2, retry)
		var tr struct {
			ResultType string `json:"resultType"`
			Content    []struct{ Text string }
		}
		if res.Error != nil || json.Unmarshal(res.Result, &tr) != nil || tr.ResultType != "complete" ||
			len(tr.Content) == 0 || !strings.Contains(tr.Content[0].Text, "Hello, Alice!") {
			t.Errorf("instance B's answer to A's retry: %s %v; want a complete result greeting Alice", res.Result, res.Error)
		}
	})
	t.Run("C, with another key, refuses the retry and says what to do", func(t *testing.T) {
		res := post(ctx, t, c, 3, retry)
		if res.Error == nil || res.Error.Code != jsonrpc.CodeInvalidParams ||
			!strings.Contains(res.Error.Message, "requestState is not valid") ||
			!strings.Contains(res.Error.Message, "send the original request again") {
			t.Errorf("instance C's answer to A's retry: %s %+v; want -32602 saying the requestState is not valid, and to start again", res.Result, res.Error)
		}
	})
}

// startInstance runs this program with -http on a free port of 127.0.0.1, with env added to
// the test's environment, until the test ends (then stops it with SIGTERM and expects a
// clean exit), and returns its address once /readyz says it is ready.
func startInstance(ctx context.Context, t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, append([]string{"-http", addr}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	go func() { // keep draining the server's log so that it never blocks
		defer close(drained)
		for s := bufio.NewScanner(stderr); s.Scan(); {
		}
	}()
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil { // Windows cannot send it: kill
			cmd.Process.Kill()
			<-drained
			cmd.Wait()
			return
		}
		<-drained
		if err := cmd.Wait(); err != nil {
			t.Errorf("the instance on %s did not shut down cleanly on SIGTERM: %v", addr, err)
		}
	})
	for {
		res, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return addr
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the instance on %s never became ready: %v", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rpcAnswer is a JSON-RPC response.
type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

// post sends a 2026-07-28 tools/call with params, from a client that declares elicitation, to
// the instance at addr, and returns its answer, from a JSON body or an event stream.
func post(ctx context.Context, t *testing.T, addr string, id int, params map[string]any) rpcAnswer {
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
		for line := range strings.Lines(string(raw)) { // the response is the event that has the id
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
