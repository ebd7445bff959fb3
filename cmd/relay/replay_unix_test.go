//go:build !windows

package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bridgeRecording runs relay bridge --record with args before "--" and the command after.
func bridgeRecording(t *testing.T, env []string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(rtBin, append([]string{"bridge", "--listen", "127.0.0.1:0", "--pool", "1", "--spares", "0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(stderr)
	var url string
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "serving MCP on "); ok {
			url, _, _ = strings.Cut(rest, " ")
			break
		}
	}
	if url == "" {
		t.Fatal("relay bridge did not say where it serves")
	}
	go io.Copy(io.Discard, stderr) // ends when relay exits
	return cmd, url
}

// stopBridge ends relay bridge with SIGTERM and waits for it.
func stopBridge(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("relay bridge: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("relay bridge did not exit within 20 s of SIGTERM")
	}
}

// httpSession is a client of the initialize generation over Streamable HTTP.
type httpSession struct {
	t       *testing.T
	url, id string
}

func (h *httpSession) post(body string) string {
	t := h.t
	t.Helper()
	req, _ := http.NewRequest("POST", h.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if h.id != "" {
		req.Header.Set("Mcp-Session-Id", h.id)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s %s", body, resp.Status, b)
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		h.id = s
	}
	return string(b)
}

func (h *httpSession) begin() {
	h.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	h.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// relay bridge --record DIR records each child's frames in a file of its own, and the file
// replays against the same server with no difference. (SIGTERM ends the bridge: Unix only.)
func TestRecordThroughTheBridge(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	cmd, url := bridgeRecording(t, nil, "--record", dir, "--redact", "/params/arguments/password", "--", rtEcho)
	h := &httpSession{t: t, url: url}
	h.begin()
	post := h.post
	if got := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"bridged words"}}}`); !strings.Contains(got, "bridged words") {
		t.Fatalf("tools/call echo = %s", got)
	}
	post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x","password":"hunter2"}}}`)
	stopBridge(t, cmd)
	files, _ := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	if len(files) != 1 {
		t.Fatalf("%d recordings in %s, want one (one child)", len(files), dir)
	}
	b, _ := os.ReadFile(files[0])
	if !bytes.Contains(b, []byte(`"text":"bridged words"`)) || bytes.Contains(b, []byte("hunter2")) {
		t.Fatalf("the recording lacks the call, or holds the secret:\n%s", b)
	}
	if st, _ := os.Stat(files[0]); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	code, out, errOut := rtRunOnce(t, "replay", files[0], "--", rtEcho)
	if code != 0 || !strings.Contains(out, " 0 differences") {
		t.Errorf("replay of the bridge's recording: exit %d\n%s%s", code, out, errOut)
	}
}

// With a server of the initialize generation each HTTP session has a child of its own, so
// a recording of its own: each session's words are in its file alone.
func TestBridgeRecordsASessionPerFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	cmd, url := bridgeRecording(t, []string{rtChildEnv + "=legacy"}, append([]string{"--record", dir, "--"}, rtSelf(t)...)...)
	words := []string{"said in session one", "said in session two"}
	for _, w := range words {
		h := &httpSession{t: t, url: url}
		h.begin()
		if got := h.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + w + `"}}}`); !strings.Contains(got, w) {
			t.Fatalf("echo in a session = %s", got)
		}
	}
	stopBridge(t, cmd)
	files, _ := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	found := map[string]string{}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, w := range words {
			if bytes.Contains(b, []byte(w)) {
				if found[w] != "" {
					t.Errorf("%q is in %s and %s", w, found[w], f)
				}
				found[w] = f
			}
		}
	}
	if len(files) != 3 || found[words[0]] == "" || found[words[1]] == "" || found[words[0]] == found[words[1]] {
		t.Errorf("files %v (want the pool's child and one per session), sessions' words in %v", files, found)
	}
}
