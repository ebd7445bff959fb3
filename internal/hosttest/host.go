// Package hosttest is the host side of Relay's process tests: it writes JSON-RPC requests to
// a server's input, reads every frame of its output, and counts what comes back, so that a
// test can require that every request was answered exactly once and nothing else was. Exe
// names the binaries such tests build so that every OS runs them.
package hosttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Reply is the answer to one request.
type Reply struct {
	Result json.RawMessage
	Error  *struct {
		Code    int64
		Message string
		Data    map[string]any
	}
}

// Text returns the text of the first content item of a tools/call result, or "".
func (r Reply) Text() string {
	var res struct{ Content []struct{ Text string } }
	json.Unmarshal(r.Result, &res)
	if len(res.Content) == 0 {
		return ""
	}
	return res.Content[0].Text
}

// IsRestartError reports whether the answer is the supervisor's error for a request lost
// with a child that restarted.
func (r Reply) IsRestartError() bool {
	return r.Error != nil && r.Error.Code == -32603 && r.Error.Data["reason"] == "server restarted"
}

func (r Reply) String() string {
	if r.Error != nil {
		return fmt.Sprintf("error %d %q %v", r.Error.Code, r.Error.Message, r.Error.Data)
	}
	return string(r.Result)
}

// Host writes to a server's input and reads its output until it ends.
type Host struct {
	t    testing.TB
	name string // the server, in messages
	in   io.Writer
	wmu  sync.Mutex
	next atomic.Int64

	mu      sync.Mutex
	waits   map[string]chan Reply
	answers map[string]int // by id
	notes   map[string]int // notifications by method
	stray   []string       // answers to ids never asked

	gate sync.Mutex // held to stop reading (a slow host)
	done chan struct{}
}

// New starts reading out, the output of the server named name, and writes frames to in. The
// reading goroutine ends when out does (EOF or an error); Done is closed then.
func New(t testing.TB, name string, in io.Writer, out io.Reader) *Host {
	h := &Host{t: t, name: name, in: in, waits: map[string]chan Reply{}, answers: map[string]int{},
		notes: map[string]int{}, done: make(chan struct{})}
	go h.read(out)
	return h
}

func (h *Host) read(r io.Reader) {
	defer close(h.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		h.gate.Lock()
		h.gate.Unlock()
		line, err := br.ReadBytes('\n')
		if len(line) > 1 {
			h.take(line)
		}
		if err != nil {
			return
		}
	}
}

func (h *Host) take(line []byte) {
	var m struct {
		ID     json.RawMessage
		Method string
	}
	if json.Unmarshal(line, &m) != nil {
		h.t.Errorf("%s wrote a malformed frame: %q", h.name, line)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if m.Method != "" {
		h.notes[m.Method]++
		return
	}
	var rep Reply
	json.Unmarshal(line, &rep)
	id := string(m.ID)
	h.answers[id]++
	if w, ok := h.waits[id]; !ok {
		h.stray = append(h.stray, string(line))
	} else if h.answers[id] == 1 {
		w <- rep
	}
}

// Done is closed when the server's output has ended and every frame of it was read.
func (h *Host) Done() <-chan struct{} { return h.done }

// Pause stops reading the server's output, as a host that does not keep up; Resume goes on.
func (h *Host) Pause()  { h.gate.Lock() }
func (h *Host) Resume() { h.gate.Unlock() }

// Write writes one frame, adding its newline.
func (h *Host) Write(frame []byte) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	h.in.Write(append(frame, '\n'))
}

// NewRequest makes a request with a new id, for a test that writes it itself (with others in
// one write, say), and returns its frame and the channel its first answer arrives on.
func (h *Host) NewRequest(method string, params any) ([]byte, <-chan Reply) {
	_, frame, ch := h.newRequest(method, params)
	return frame, ch
}

func (h *Host) newRequest(method string, params any) (string, []byte, <-chan Reply) {
	id := strconv.FormatInt(h.next.Add(1), 10)
	ch := make(chan Reply, 1)
	h.mu.Lock()
	h.waits[id] = ch
	h.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	return id, b, ch
}

// Send sends a request with a new id and returns the id and the channel its first answer
// arrives on.
func (h *Host) Send(method string, params any) (string, <-chan Reply) {
	id, frame, ch := h.newRequest(method, params)
	h.Write(frame)
	return id, ch
}

// Notify sends a notification.
func (h *Host) Notify(method string, params any) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	h.Write(b)
}

// Wait waits up to within for an answer on ch.
func (h *Host) Wait(ch <-chan Reply, within time.Duration) (Reply, bool) {
	select {
	case r := <-ch:
		return r, true
	case <-time.After(within):
		return Reply{}, false
	}
}

// Call sends a request and waits for its answer, failing the test after 15 s.
func (h *Host) Call(method string, params any) Reply {
	h.t.Helper()
	_, ch := h.Send(method, params)
	r, ok := h.Wait(ch, 15*time.Second)
	if !ok {
		h.t.Fatalf("%s: no answer from %s within 15 s", method, h.name)
	}
	return r
}

// Tool calls a tool.
func (h *Host) Tool(name string, args map[string]any) Reply {
	h.t.Helper()
	return h.Call("tools/call", map[string]any{"name": name, "arguments": args})
}

// Notes returns how many notifications of the method have arrived.
func (h *Host) Notes(method string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.notes[method]
}

// Answers returns how many answers have arrived in all.
func (h *Host) Answers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.answers {
		n += c
	}
	return n
}

// CheckAnswers fails the test unless every request sent got exactly one answer and nothing
// answered a request never sent. Call it once the output has ended.
func (h *Host) CheckAnswers() {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.waits {
		if n := h.answers[id]; n != 1 {
			h.t.Errorf("request %s got %d answers from %s, want exactly 1", id, n, h.name)
		}
	}
	for _, s := range h.stray {
		h.t.Errorf("%s answered no request: %s", h.name, s)
	}
}

// Stray returns the answers that named no request of the host's (an answer with id null,
// say), in order.
func (h *Host) Stray() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.stray...)
}
