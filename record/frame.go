package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Dir is the direction of a frame.
type Dir string

const (
	In  Dir = "in"  // host → server
	Out Dir = "out" // server → host
)

// Frame is one line of a recording. Exactly one of Msg, Raw and Skipped is set.
type Frame struct {
	T       time.Time       `json:"t"`
	Dir     Dir             `json:"dir"`
	Msg     json.RawMessage `json:"msg,omitempty"`
	Raw     string          `json:"raw,omitempty"`     // a line that was not JSON
	Skipped int             `json:"skipped,omitempty"` // the length of a line too long to keep
}

// AppendLine appends the frame as one line of a recording, with its newline. Messages
// are kept as they were sent but for insignificant spaces: no HTML escaping is added.
func (f *Frame) AppendLine(b []byte) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil { // Encode ends the line
		return b, err
	}
	return buf.Bytes(), nil
}

// Kind is what a JSON-RPC message is, as far as replay cares.
type Kind int

const (
	Other        Kind = iota // not a JSON-RPC message (a raw or skipped line, a batch)
	Request                  // method and id
	Notification             // method, no id
	Response                 // id, result or error, no method
)

// Message is the part of a JSON-RPC message replay needs.
type Message struct {
	Kind   Kind
	ID     string // the id's JSON text, "" when it has none
	Method string
	Params json.RawMessage
}

// Parse reads the shape of the frame's message.
func (f *Frame) Parse() Message {
	if len(f.Msg) == 0 {
		return Message{}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(f.Msg, &m) != nil {
		return Message{}
	}
	msg := Message{ID: string(m.ID), Params: m.Params}
	if msg.ID == "null" {
		msg.ID = ""
	}
	switch {
	case m.Method != nil && msg.ID != "":
		msg.Kind, msg.Method = Request, *m.Method
	case m.Method != nil:
		msg.Kind, msg.Method = Notification, *m.Method
	case len(m.ID) > 0 || m.Result != nil || m.Error != nil:
		// An id null (or, from a lenient peer, none) answers a line that could not be read.
		msg.Kind = Response
	}
	return msg
}

// MaxLine is the longest line a Reader accepts by default: Relay's own frame limit (16 MiB)
// and room for the frame around it.
const MaxLine = 16<<20 + 4096

// Reader reads the frames of a recording in order.
type Reader struct {
	r       *bufio.Reader
	max     int
	line    int
	scratch []byte
}

// NewReader reads a recording from r; lines longer than maxLine (MaxLine when 0) are an
// error, so memory stays bounded whatever the file holds.
func NewReader(r io.Reader, maxLine int) *Reader {
	if maxLine <= 0 {
		maxLine = MaxLine
	}
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: maxLine}
}

// ErrFormat is wrapped by every error about what a recording holds.
var ErrFormat = errors.New("not a Relay recording")

// Next returns the next frame, or io.EOF after the last. Blank lines are skipped. An error
// names the line.
func (r *Reader) Next() (Frame, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return Frame{}, err
		}
		r.line++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		f, err := ParseFrame(line)
		if err != nil {
			return Frame{}, fmt.Errorf("line %d: %w", r.line, err)
		}
		return f, nil
	}
}

// Line is the number of the line Next last returned.
func (r *Reader) Line() int { return r.line }

func (r *Reader) readLine() ([]byte, error) {
	r.scratch = r.scratch[:0]
	for {
		chunk, err := r.r.ReadSlice('\n')
		if len(r.scratch)+len(chunk) > r.max {
			return nil, fmt.Errorf("line %d: longer than %d bytes: %w", r.line+1, r.max, ErrFormat)
		}
		r.scratch = append(r.scratch, chunk...)
		switch {
		case err == nil:
			return r.scratch, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(r.scratch) > 0:
			return r.scratch, nil
		default:
			return nil, err
		}
	}
}

// ParseFrame reads one line of a recording.
func ParseFrame(line []byte) (Frame, error) {
	var f Frame
	if err := json.Unmarshal(line, &f); err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if f.Dir != In && f.Dir != Out {
		return Frame{}, fmt.Errorf("%w: dir %q, want \"in\" or \"out\"", ErrFormat, f.Dir)
	}
	set := 0
	if len(f.Msg) > 0 {
		set++
		if bytes.Equal(f.Msg, []byte("null")) {
			return Frame{}, fmt.Errorf("%w: msg is null", ErrFormat)
		}
	}
	if f.Raw != "" {
		set++
	}
	if f.Skipped != 0 {
		set++
		if f.Skipped < 0 {
			return Frame{}, fmt.Errorf("%w: skipped %d", ErrFormat, f.Skipped)
		}
	}
	if set != 1 {
		return Frame{}, fmt.Errorf("%w: a frame has exactly one of msg, raw and skipped", ErrFormat)
	}
	if f.T.IsZero() {
		return Frame{}, fmt.Errorf("%w: no time (t)", ErrFormat)
	}
	return f, nil
}

// ReadFile reads every frame of a recording; it holds them all, so it is for files a
// Recorder wrote (bounded by its cap) or that the caller chose.
func ReadFile(r io.Reader) ([]Frame, error) {
	rd := NewReader(r, 0)
	var fs []Frame
	for {
		f, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return fs, nil
		}
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
}
