package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Timeouts. They bound how long a broken server can hang a test; a healthy one is far faster.
const (
	waitTimeout = 15 * time.Second
	exitTimeout = 10 * time.Second
)

// modernMeta is the params._meta member of a 2026-07-28 request (DIGEST A2: both keys are
// required on every request).
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// msg is one line the server wrote to stdout, already checked to be a JSON-RPC 2.0 message.
type msg struct {
	raw    []byte
	ID     json.RawMessage // raw bytes of the id; nil when the member is absent
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *rpcError
}

type rpcError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (m msg) isResponse() bool     { return m.Method == "" }
func (m msg) isNotification() bool { return m.Method != "" }
func (m msg) String() string       { return string(m.raw) }

// client drives one server process over pipes. A goroutine reads stdout; every line must be a
// JSON-RPC 2.0 message the server may send (DIGEST A12: nothing else may appear on stdout;
// DIGEST A1: a server never sends requests), or the test fails at its end.
type client struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  *os.File
	stderr *syncBuffer

	mu        sync.Mutex
	msgs      []msg
	bad       []string // stdout lines that are not what a server may send
	changed   chan struct{}
	readDone  chan struct{}
	stdinShut bool
	exited    bool
	exitErr   error
}

// start runs bin (echoBin unless given) and registers its cleanup.
func start(t testing.TB, bin ...string) *client {
	t.Helper()
	path := echoBin
	if len(bin) > 0 {
		path = bin[0]
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &client{
		t:        t,
		stdin:    inW,
		stderr:   &syncBuffer{},
		changed:  make(chan struct{}),
		readDone: make(chan struct{}),
	}
	c.cmd = exec.Command(path)
	c.cmd.Stdin = inR
	c.cmd.Stdout = outW
	c.cmd.Stderr = c.stderr
	c.cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1 exitcode=66 atexit_sleep_ms=0")
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	go c.readLoop(outR)
	t.Cleanup(c.cleanup)
	return c
}

// readLoop is the stdout reader: it ends at EOF, when the server has exited.
func (c *client) readLoop(r *os.File) {
	defer close(c.readDone)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				c.addBad(fmt.Sprintf("unterminated last line (DIGEST A12: one message per line): %.200q", line))
			} else {
				c.add(line[:len(line)-1])
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.addBad("reading stdout: " + err.Error())
			}
			return
		}
	}
}

func (c *client) addBad(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bad = append(c.bad, s)
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *client) add(line []byte) {
	m, err := parseLine(line)
	if err != nil {
		c.addBad(fmt.Sprintf("%v: %.300q", err, line))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, m)
	close(c.changed)
	c.changed = make(chan struct{})
}

var envelopeKeys = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}

// parseLine checks that a stdout line is a JSON-RPC 2.0 message a server may send: a
// response (result or error) or a notification, UTF-8, one JSON object (DIGEST A1, A12).
func parseLine(line []byte) (msg, error) {
	m := msg{raw: append([]byte(nil), line...)}
	if !utf8.Valid(line) {
		return m, errors.New("stdout line is not UTF-8 (DIGEST A1)")
	}
	if bytes.ContainsRune(line, '\r') {
		return m, errors.New("stdout line contains a carriage return")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil || obj == nil {
		return m, fmt.Errorf("stdout line is not a JSON object (DIGEST A12): %v", err)
	}
	for k := range obj {
		if !envelopeKeys[k] {
			return m, fmt.Errorf("stdout message has a member %q outside JSON-RPC 2.0", k)
		}
	}
	if string(obj["jsonrpc"]) != `"2.0"` {
		return m, errors.New(`stdout message lacks "jsonrpc":"2.0" (DIGEST A1)`)
	}
	id, hasID := obj["id"]
	if hasID {
		if !isRequestID(id) {
			return m, fmt.Errorf("stdout message has id %s, not a string or an integer (DIGEST A1)", id)
		}
		m.ID = id
	}
	if raw, ok := obj["method"]; ok {
		if hasID {
			return m, errors.New("the server sent a request; only clients send requests (DIGEST A1 direction)")
		}
		if json.Unmarshal(raw, &m.Method) != nil || m.Method == "" {
			return m, errors.New(`notification "method" is not a non-empty string`)
		}
		if _, ok := obj["result"]; ok {
			return m, errors.New("a notification carries a result")
		}
		if _, ok := obj["error"]; ok {
			return m, errors.New("a notification carries an error")
		}
		if p, ok := obj["params"]; ok {
			if !bytes.HasPrefix(bytes.TrimSpace(p), []byte("{")) {
				return m, errors.New("notification params are not an object")
			}
			m.Params = p
		}
		return m, nil
	}
	if _, ok := obj["params"]; ok {
		return m, errors.New("a response carries params")
	}
	res, hasResult := obj["result"]
	e, hasError := obj["error"]
	switch {
	case hasResult == hasError:
		return m, errors.New(`a response needs exactly one of "result" and "error" (DIGEST A1)`)
	case hasResult:
		if !hasID {
			return m, errors.New("a result response has no id (DIGEST A1)")
		}
		m.Result = res
	default:
		var eo map[string]json.RawMessage
		if json.Unmarshal(e, &eo) != nil || eo == nil {
			return m, errors.New("error is not an object (DIGEST A1)")
		}
		m.Error = &rpcError{}
		if json.Unmarshal(e, m.Error) != nil || eo["code"] == nil || !isInteger(eo["code"]) {
			return m, errors.New("error.code is not an integer (DIGEST A1)")
		}
		var s string
		if json.Unmarshal(eo["message"], &s) != nil {
			return m, errors.New("error.message is not a string (DIGEST A1)")
		}
	}
	return m, nil
}

func isInteger(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	i := 0
	if raw[0] == '-' {
		i++
	}
	if i == len(raw) {
		return false
	}
	for ; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return false
		}
	}
	return true
}

func isRequestID(raw []byte) bool {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	return isInteger(raw)
}

// send writes lines to the server's stdin, each followed by "\n".
func (c *client) send(lines ...string) {
	c.t.Helper()
	var b []byte
	for _, l := range lines {
		b = append(append(b, l...), '\n')
	}
	c.write(b)
}

func (c *client) write(b []byte) {
	c.t.Helper()
	if _, err := c.stdin.Write(b); err != nil {
		c.t.Fatalf("writing to the server: %v\nstderr:\n%s", err, c.stderr)
	}
}

// closeStdin closes the server's input: the graceful shutdown signal (DIGEST A12, D).
func (c *client) closeStdin() {
	c.mu.Lock()
	shut := c.stdinShut
	c.stdinShut = true
	c.mu.Unlock()
	if !shut {
		c.stdin.Close()
	}
}

// snapshot returns the messages received so far.
func (c *client) snapshot() []msg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]msg(nil), c.msgs...)
}

// waitFor waits until cond holds for the messages received so far, failing the test after
// waitTimeout or if the server's output ends first.
func (c *client) waitFor(what string, cond func([]msg) bool) []msg {
	c.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		msgs, changed := c.msgs, c.changed
		ok := cond(msgs)
		c.mu.Unlock()
		if ok {
			return append([]msg(nil), msgs...)
		}
		select {
		case <-changed:
		case <-c.readDone:
			c.mu.Lock()
			ok = cond(c.msgs)
			msgs = append([]msg(nil), c.msgs...)
			c.mu.Unlock()
			if ok {
				return msgs
			}
			c.t.Fatalf("the server's output ended before %s; received %d messages\nstderr:\n%s", what, len(msgs), c.stderr)
		case <-deadline.C:
			c.t.Fatalf("timed out waiting for %s; received %d messages\nstderr:\n%s", what, len(c.snapshot()), c.stderr)
		}
	}
}

// response waits for the first response whose id bytes are id.
func (c *client) response(id string) msg {
	c.t.Helper()
	var found msg
	c.waitFor("the response to id "+id, func(ms []msg) bool {
		for _, m := range ms {
			if m.isResponse() && string(m.ID) == id {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// wait waits for the server to exit after stdin was closed (or a signal) and returns its exit
// code; the stdout reader has finished when it returns.
func (c *client) wait() int {
	c.t.Helper()
	if err := c.waitExit(exitTimeout); err != nil {
		c.t.Fatalf("%v\nstderr:\n%s", err, c.stderr)
	}
	return c.cmd.ProcessState.ExitCode()
}

func (c *client) waitExit(timeout time.Duration) error {
	c.mu.Lock()
	exited := c.exited
	c.mu.Unlock()
	if exited {
		return nil
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case <-c.readDone:
	case <-timer.C:
		_ = c.cmd.Process.Kill()
		<-c.readDone
		err = fmt.Errorf("the server did not exit within %v of the end of its input; killed it", timeout)
	}
	werr := c.cmd.Wait()
	c.mu.Lock()
	c.exited, c.exitErr = true, werr
	c.mu.Unlock()
	return err
}

// cleanup stops the server and the reader and reports every stdout line that was not a
// JSON-RPC message.
func (c *client) cleanup() {
	c.closeStdin()
	if err := c.waitExit(exitTimeout); err != nil {
		c.t.Errorf("cleanup: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.bad {
		c.t.Errorf("stdout carried something other than a JSON-RPC message a server may send (DIGEST A12): %s", b)
	}
	if ps := c.cmd.ProcessState; ps != nil && raceEnabled && ps.ExitCode() == 66 {
		c.t.Errorf("the server exited with the race detector's status 66")
	}
	if c.t.Failed() {
		c.t.Logf("server stderr:\n%s", c.stderr)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	const max = 8 << 10
	if s.b.Len() > max {
		return "…" + string(s.b.Bytes()[s.b.Len()-max:])
	}
	return s.b.String()
}

// jsonString encodes s as a JSON string the way a minimal client might: only '"', '\\' and
// control characters are escaped, so U+2028, emoji and other non-ASCII text go raw as UTF-8.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// callLine is a 2026-07-28 tools/call request; id is raw JSON and args a raw JSON object.
func callLine(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":` + jsonString(tool) +
		`,"arguments":` + args + `,` + modernMeta + `}}`
}

func echoLine(id, text string) string { return callLine(id, "echo", `{"text":`+jsonString(text)+`}`) }

func sleepLine(id string, ms int) string { return callLine(id, "sleep", fmt.Sprintf(`{"ms":%d}`, ms)) }

// toolResult is a CallToolResult as the tests read it.
type toolResult struct {
	ResultType string `json:"resultType"`
	Content    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool                       `json:"isError"`
	Meta    map[string]json.RawMessage `json:"_meta"`
}

// toolText checks that m is a successful single-text tool result and returns its text.
func toolText(t testing.TB, m msg, modern bool) string {
	t.Helper()
	if m.Error != nil || m.Result == nil {
		t.Fatalf("want a result, got %s", m)
	}
	var r toolResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatalf("result is not a CallToolResult: %v: %s", err, m)
	}
	if modern && r.ResultType != "complete" {
		t.Errorf(`resultType = %q, want "complete" (DIGEST A1): %.300s`, r.ResultType, m)
	}
	if modern && r.Meta["io.modelcontextprotocol/serverInfo"] == nil {
		t.Errorf("result _meta lacks io.modelcontextprotocol/serverInfo (DIGEST A2): %.300s", m)
	}
	if r.IsError || len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("want one text item and no isError, got %.500s", m)
	}
	return r.Content[0].Text
}

// expectError checks m is an error response with the code; wantID is the raw id, or "" for
// an error whose id member must be absent (DIGEST A1: only when the id could not be read).
func expectError(t testing.TB, m msg, code int64, wantID string) {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("want error %d, got %s", code, m)
	}
	if m.Error.Code != code {
		t.Errorf("error code = %d, want %d: %s", m.Error.Code, code, m)
	}
	if string(m.ID) != wantID {
		if wantID == "" {
			t.Errorf("error has id %s, want no id member: %s", m.ID, m)
		} else {
			t.Errorf("error id = %q, want %s: %s", m.ID, wantID, m)
		}
	}
	if m.Error.Message == "" {
		t.Errorf("error message is empty (DIGEST A1: one short sentence): %s", m)
	}
}
