package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernVersion is the revision the SDK v1.8.0 client prefers, and the one Relay serves
// statelessly (DIGEST A4).
const modernVersion = "2026-07-28"

// syncBuffer is a bytes.Buffer that may be written by one goroutine while another reads it.
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

// wireMsg is one JSON-RPC message as the SDK's LoggingTransport saw it cross the pipe.
// Sent is true for client→server ("write:") and false for server→client ("read:").
type wireMsg struct {
	Sent   bool
	Raw    string
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func (m wireMsg) isRequest() bool      { return m.Method != "" && m.ID != nil }
func (m wireMsg) isNotification() bool { return m.Method != "" && m.ID == nil }
func (m wireMsg) isResponse() bool     { return m.Method == "" && m.ID != nil }

// wireLog records every message between the SDK client and the server. The SDK logs a
// message after its write returns, so a response may be logged before the request it
// answers: messages read are in the order they arrived, and messages written in the order
// they were sent, but the two orders interleave only roughly. Tests match requests and
// responses by id, never by position.
type wireLog struct{ syncBuffer }

// messages parses what has been recorded so far.
func (w *wireLog) messages(t testing.TB) []wireMsg {
	t.Helper()
	var out []wireMsg
	sc := bufio.NewScanner(strings.NewReader(w.String()))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Text()
		var sent bool
		switch {
		case strings.HasPrefix(line, "write: "):
			sent, line = true, strings.TrimPrefix(line, "write: ")
		case strings.HasPrefix(line, "read: "):
			line = strings.TrimPrefix(line, "read: ")
		default:
			continue // "read error: EOF" and the like
		}
		m := wireMsg{Sent: sent, Raw: line}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("wire log line is not JSON: %v\n%s", err, line)
		}
		out = append(out, m)
	}
	return out
}

// request returns the first request sent whose method is method and whose params satisfy
// match (nil matches any).
func (w *wireLog) request(t testing.TB, method string, match func(params map[string]any) bool) (wireMsg, bool) {
	t.Helper()
	for _, m := range w.messages(t) {
		if !m.Sent || m.Method != method || !m.isRequest() {
			continue
		}
		var p map[string]any
		json.Unmarshal(m.Params, &p)
		if match == nil || match(p) {
			return m, true
		}
	}
	return wireMsg{}, false
}

// sent returns the messages the client sent, in order.
func sent(msgs []wireMsg) []wireMsg {
	var out []wireMsg
	for _, m := range msgs {
		if m.Sent {
			out = append(out, m)
		}
	}
	return out
}

// responseTo returns the server's response to the request with this id, if one arrived.
func (w *wireLog) responseTo(t testing.TB, id json.RawMessage) (wireMsg, bool) {
	t.Helper()
	for _, m := range w.messages(t) {
		if !m.Sent && m.isResponse() && bytes.Equal(m.ID, id) {
			return m, true
		}
	}
	return wireMsg{}, false
}

// waitFor polls the wire log until cond holds or the time runs out.
func (w *wireLog) waitFor(t testing.TB, d time.Duration, what string, cond func([]wireMsg) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if cond(w.messages(t)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; wire:\n%s", d, what, w.summary())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// summary is the wire log for a failure message: each message cut to 300 bytes, and only
// the last 150 messages.
func (w *wireLog) summary() string {
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	var b strings.Builder
	if len(lines) > 150 {
		fmt.Fprintf(&b, "(%d earlier messages left out)\n", len(lines)-150)
		lines = lines[len(lines)-150:]
	}
	for _, l := range lines {
		if len(l) > 300 {
			l = fmt.Sprintf("%s... (%d bytes)", l[:300], len(l))
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// server is one running Relay binary with an SDK client session on it.
type server struct {
	cs     *mcp.ClientSession
	wire   *wireLog
	stderr *syncBuffer
}

// start launches bin (with the repository root as its working directory) and connects the
// official SDK client to it over mcp.CommandTransport. Cleanup closes the session the way
// the SDK does (close stdin, wait), and fails the test if the server did not exit cleanly
// or reported a data race.
func start(t *testing.T, bin string, opts *mcp.ClientOptions, args ...string) *server {
	t.Helper()
	return startSession(t, bin, opts, nil, args...)
}

// startSession is start with session options: ProtocolVersion set to a 2025 revision makes
// the SDK skip server/discover and open with the initialize handshake.
func startSession(t *testing.T, bin string, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions, args ...string) *server {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoRoot()
	srv := &server{wire: &wireLog{}, stderr: &syncBuffer{}}
	cmd.Stderr = srv.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "relay-interop-go", Version: "0.0.1"}, opts)
	transport := &mcp.LoggingTransport{
		Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second},
		Writer:    srv.wire,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, transport, sopts)
	if err != nil {
		t.Fatalf("connect to %s: %v\nstderr:\n%s\nwire:\n%s", bin, err, srv.stderr, srv.wire.summary())
	}
	srv.cs = cs
	t.Cleanup(func() {
		err := cs.Close()
		if err != nil {
			t.Errorf("closing the session (stdin EOF, then wait for exit): %v", err)
		}
		if s := srv.stderr.String(); strings.Contains(s, "DATA RACE") || strings.Contains(s, "panic:") {
			t.Errorf("server stderr reports a data race or panic:\n%s", s)
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", srv.stderr)
			t.Logf("wire:\n%s", srv.wire.summary())
		}
	})
	return srv
}

// ctx returns a context for one step of a test, bounded so that a hung server fails the
// test instead of hanging it.
func stepCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// decodeParams reads a message's params into v.
func decode(t testing.TB, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
}

// textOf returns the text of a single-text-item result.
func textOf(t testing.TB, content []mcp.Content) string {
	t.Helper()
	text, err := onlyText(content)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// onlyText is textOf for goroutines other than the test's.
func onlyText(content []mcp.Content) (string, error) {
	if len(content) != 1 {
		return "", fmt.Errorf("want one content item, got %d: %#v", len(content), content)
	}
	tc, ok := content[0].(*mcp.TextContent)
	if !ok {
		return "", fmt.Errorf("want a text item, got %T", content[0])
	}
	return tc.Text, nil
}

// progressRecorder collects progress notifications by token, as the SDK delivers them.
type progressRecorder struct {
	mu     sync.Mutex
	byTok  map[string][]*mcp.ProgressNotificationParams
	notify chan string // the token of each notification, best effort
}

func newProgressRecorder() *progressRecorder {
	return &progressRecorder{byTok: map[string][]*mcp.ProgressNotificationParams{}, notify: make(chan string, 1024)}
}

func (p *progressRecorder) handler(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	key := tokenKey(req.Params.ProgressToken)
	p.mu.Lock()
	p.byTok[key] = append(p.byTok[key], req.Params)
	p.mu.Unlock()
	select {
	case p.notify <- key:
	default:
	}
}

func (p *progressRecorder) get(token any) []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), p.byTok[tokenKey(token)]...)
}

// tokenKey normalises a progress token: JSON numbers decode as float64, Go callers pass int.
func tokenKey(tok any) string {
	b, _ := json.Marshal(tok)
	return string(b)
}
