package client

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// The one reader of server-sent events in the client, under both HTTP transports: the
// response and GET streams of Streamable HTTP (http.go) and the GET stream of the
// deprecated HTTP+SSE transport (sse.go). It parses the event stream format as HTML's
// Server-sent events section says (§ Parsing an event stream, § Interpreting an event
// stream), with two bounds a browser does not set: a line of more than the limit (plus the
// few bytes of "data: " and its end), and an event whose data passes the limit, are
// refused with ErrMessageTooLarge once the limit is passed, so that a server cannot make
// the client hold more than the limit, twice at most (the line and the event), and its
// buffer. The data lines of an event are appended to one buffer, reused from event to
// event: reading an event costs time linear in its size, however many lines it has.
//
// Lines end in LF or CRLF, as every MCP server writes them; a lone CR, which the format
// also allows, is kept in the line.

// ErrMessageTooLarge is the error of a message (a JSON body, or an event of an event
// stream) larger than HTTPTransport.MaxMessage: the stream is dropped, and the call that
// waited on it fails with an error that wraps it.
var ErrMessageTooLarge = errors.New("mcp/client: the server sent a message larger than the limit")

// sseBufferSize is the reader's buffer: a line shorter than it is read without a copy.
const sseBufferSize = 64 << 10

// sseLineSlack is what a line may have beyond the limit: "data: " and CRLF.
const sseLineSlack = len("data: \r\n")

// sseReader reads one event stream.
type sseReader struct {
	br   *bufio.Reader
	max  int    // the limit of an event's data
	line []byte // a line longer than the buffer, assembled
	data []byte // the data of the event being read

	// lastID is the last event ID (the id field last seen, one with NUL excepted);
	// retry the reconnection time the stream last gave (the retry field), 0 when none.
	// The caller may set them before reading, to carry them from stream to stream.
	lastID string
	retry  time.Duration
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, sseBufferSize), max: max}
}

// tooLarge is the error of a message over the limit: it says what to do.
func (s *sseReader) tooLarge(what string) error {
	return fmt.Errorf("%w: %s of more than %d bytes in the event stream; raise HTTPTransport.MaxMessage if the server's messages are this large",
		ErrMessageTooLarge, what, s.max)
}

// next reads the next event that has data and returns its name ("" when it has no event
// field) and its data lines joined by LF, which stay valid until the next call. It returns
// the reader's error at the end of the stream (io.EOF when it ended cleanly), dropping an
// event the end cut short, as the format says; or an error wrapping ErrMessageTooLarge,
// after which the stream must not be read any more.
func (s *sseReader) next() (name string, data []byte, err error) {
	if cap(s.data) > 1<<20 {
		s.data = nil // one large event does not keep its buffer for the life of the stream
	}
	if cap(s.line) > 1<<20 {
		s.line = nil
	}
	s.data = s.data[:0]
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			return "", nil, err
		}
		if len(line) == 0 { // dispatch
			if hasData {
				return name, s.data, nil
			}
			name = ""
			continue
		}
		if line[0] == ':' {
			continue // a comment: keep-alives
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			size := len(s.data) + len(value)
			if hasData {
				size++
			}
			if size > s.max {
				return "", nil, s.tooLarge("an event")
			}
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				s.lastID = string(value)
			}
		case "retry":
			if isDigits(value) {
				if ms, err := strconv.Atoi(string(value)); err == nil {
					s.retry = time.Duration(ms) * time.Millisecond
				}
			}
		}
	}
}

// readLine returns the next line without its end, valid until the next call; a line the
// end of the stream cuts short is dropped, its error returned.
func (s *sseReader) readLine() ([]byte, error) {
	most := s.max + sseLineSlack
	frag, err := s.br.ReadSlice('\n')
	if len(frag) > most {
		return nil, s.tooLarge("a line")
	}
	if err == nil {
		return trimLineEnd(frag), nil // the usual case: no copy
	}
	s.line = append(s.line[:0], frag...)
	for err == bufio.ErrBufferFull {
		frag, err = s.br.ReadSlice('\n')
		if len(s.line)+len(frag) > most {
			return nil, s.tooLarge("a line")
		}
		s.line = append(s.line, frag...)
	}
	if err != nil {
		return nil, err
	}
	return trimLineEnd(s.line), nil
}

func trimLineEnd(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}
