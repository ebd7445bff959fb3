package stdio

import (
	"bytes"
	"fmt"
	"io"
)

// DefaultMaxFrame is the longest line a Reader accepts unless told otherwise.
const DefaultMaxFrame = 16 << 20

const initialBuffer = 64 << 10

// TooLargeError reports a line that was discarded for exceeding the limit. Reading can go on
// after it.
type TooLargeError struct{ Limit int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("stdio: discarded a line longer than %d bytes", e.Limit)
}

// Reader splits a byte stream into frames, one per line. It is not safe for concurrent use;
// in Relay one reader actor owns it.
type Reader struct {
	r          io.Reader
	max        int
	buf        []byte
	start, end int  // unread bytes are buf[start:end]
	scanned    int  // of those, how many are known to hold no newline
	discarding bool // inside a line that is over the limit
	err        error
}

// NewReader returns a Reader that accepts lines of up to maxFrame bytes (DefaultMaxFrame if
// maxFrame <= 0).
func NewReader(r io.Reader, maxFrame int) *Reader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &Reader{r: r, max: maxFrame, buf: make([]byte, min(initialBuffer, maxFrame+1))}
}

// Next returns the next frame, without its line ending. The slice is valid only until the
// next call. At a line over the limit it returns a *TooLargeError and can be called again;
// at the end of input it returns the final unterminated line (if any) and then the read error,
// io.EOF for a clean end.
func (r *Reader) Next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(r.buf[r.start+r.scanned:r.end], '\n'); i >= 0 {
			lineEnd := r.start + r.scanned + i
			line := r.buf[r.start:lineEnd]
			r.start, r.scanned = lineEnd+1, 0
			if r.discarding {
				r.discarding = false
				return nil, &TooLargeError{Limit: r.max}
			}
			if line = trimLine(line); line != nil {
				return line, nil
			}
			continue
		}
		r.scanned = r.end - r.start
		if r.discarding || r.scanned > r.max {
			r.discarding = true
			r.start, r.end, r.scanned = 0, 0, 0 // drop what we hold of the long line
		}
		if r.err != nil {
			return r.atEnd()
		}
		r.fill()
	}
}

// Drained reports whether every byte read so far has been returned, so that the next call to
// Next reads.
func (r *Reader) Drained() bool { return r.start == r.end }

// atEnd handles the bytes left when input has ended.
func (r *Reader) atEnd() ([]byte, error) {
	if r.discarding {
		r.discarding = false
		return nil, &TooLargeError{Limit: r.max}
	}
	line := trimLine(r.buf[r.start:r.end])
	r.start, r.end, r.scanned = 0, 0, 0
	if line != nil {
		return line, nil
	}
	return nil, r.err
}

// fill reads more input, first making room by moving unread bytes to the front or growing.
func (r *Reader) fill() {
	if r.end == len(r.buf) {
		if r.start > 0 {
			r.end = copy(r.buf, r.buf[r.start:r.end])
			r.start = 0
		}
		if r.end == len(r.buf) {
			// Double, but jump straight to the limit once half of it is reached: growing to
			// exactly max and then once more by a byte would hold two max-sized buffers.
			size := 2 * len(r.buf)
			if size >= r.max/2 {
				size = r.max + 1
			}
			grown := make([]byte, size)
			r.end = copy(grown, r.buf[:r.end])
			r.buf = grown
		}
	}
	n, err := r.r.Read(r.buf[r.end:])
	r.end += n
	if err != nil {
		r.err = err
	}
}

// trimLine strips trailing "\r"s and returns nil for a blank line.
func trimLine(line []byte) []byte {
	for n := len(line); n > 0 && line[n-1] == '\r'; n-- {
		line = line[:n-1]
	}
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return line
		}
	}
	return nil
}
