package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// DefaultMaxBytes is a Recorder's size cap when Options leave it zero: 64 MiB, so a
// recording and its one previous file take at most about 128 MiB.
const DefaultMaxBytes = 64 << 20

// Options configure a Recorder. The zero value is usable.
type Options struct {
	// Redact lists the JSON pointers whose values are replaced by "[redacted]" in every
	// message, both directions, before it is written.
	Redact []Pointer
	// MaxBytes is the size past which the file is rotated once (FILE → FILE.1); 0 means
	// DefaultMaxBytes, a negative value no cap.
	MaxBytes int64
	// MaxLine is the longest line kept; a longer one is recorded as skipped, with its
	// length. 0 means 16 MiB, Relay's own frame limit.
	MaxLine int
	// Now is the clock (time.Now when nil), for tests.
	Now func() time.Time
}

// Recorder appends frames to a recording file. It starts no goroutine: Record writes
// under a mutex, so the host's direction and the server's, each with its own goroutine,
// can share it, and each frame reaches the file whole and in the order Record was called.
// A write to a local file is short, and holding the lock for it is what keeps the order
// true; an actor would only add a mailbox to bound and a goroutine to own.
//
// After the first error writing, a Recorder records nothing more; Err returns that error.
type Recorder struct {
	path   string
	opts   Options
	mu     sync.Mutex
	f      *os.File
	size   int64
	err    error
	closed bool
}

// Create opens path for recording, creating it with mode 0600 (and making an existing file
// that others could read 0600), and appends to what it holds.
func Create(path string, opts *Options) (*Recorder, error) {
	r := &Recorder{path: path}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.MaxBytes == 0 {
		r.opts.MaxBytes = DefaultMaxBytes
	}
	if r.opts.MaxLine <= 0 {
		r.opts.MaxLine = 16 << 20
	}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Recorder) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("cannot open the recording: %w (check that its directory exists and is writable)", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("cannot open the recording: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 { // an older file others may read: a recording holds secrets
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return fmt.Errorf("cannot make the recording private (mode 0600): %w", err)
		}
	}
	r.f, r.size = f, st.Size()
	return nil
}

// Path is the file being written.
func (r *Recorder) Path() string { return r.path }

// Record appends one frame: line, a message without its newline, in direction dir.
func (r *Recorder) Record(dir Dir, line []byte) error {
	return r.record(dir, line, 0)
}

func (r *Recorder) record(dir Dir, line []byte, skipped int) error {
	f := Frame{Dir: dir, Skipped: skipped}
	line = bytes.TrimSpace(line)
	if skipped == 0 {
		switch {
		case len(line) == 0:
			return nil
		case len(line) > r.opts.MaxLine:
			f.Skipped = len(line)
		case json.Valid(line):
			f.Msg, _ = Redact(line, r.opts.Redact)
		default:
			f.Raw = string(line) // not JSON, so no pointer reaches into it
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if r.closed {
		return errClosed
	}
	f.T = r.opts.Now().UTC()
	b, err := f.AppendLine(nil)
	if err != nil {
		r.err = err
		return err
	}
	if r.opts.MaxBytes > 0 && r.size > 0 && r.size+int64(len(b)) > r.opts.MaxBytes {
		if err := r.rotate(); err != nil {
			r.err = err
			return err
		}
	}
	n, err := r.f.Write(b)
	r.size += int64(n)
	if err != nil {
		r.err = fmt.Errorf("cannot write the recording: %w", err)
	}
	return r.err
}

var errClosed = errors.New("record: recorder closed")

// rotate keeps the current file as path.1, replacing an older one, and begins a new file.
func (r *Recorder) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("cannot rotate the recording: %w", err)
	}
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		return fmt.Errorf("cannot rotate the recording: %w", err)
	}
	return r.open()
}

// Err returns the first error writing, after which nothing more is recorded.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close closes the file; a Record after it is refused.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.f.Close()
}

// lines splits a byte stream at '\n' and records each line; it holds at most MaxLine
// bytes of a line, and counts the rest of a longer one.
type lines struct {
	r    *Recorder
	dir  Dir
	mu   sync.Mutex // a Writer may be written from more than one goroutine
	buf  []byte
	over int // bytes of the current line beyond buf, when it is too long
}

func (l *lines) feed(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if l.over > 0 || len(l.buf)+len(chunk) > l.r.opts.MaxLine {
			l.over += len(l.buf) + len(chunk)
			l.buf = l.buf[:0]
		} else {
			l.buf = append(l.buf, chunk...)
		}
		if i < 0 {
			return
		}
		l.flush()
		p = p[i+1:]
	}
}

func (l *lines) flush() {
	if l.over > 0 {
		l.r.record(l.dir, nil, l.over)
	} else {
		l.r.record(l.dir, l.buf, 0) // an error stops the recording, not the traffic: see Err
	}
	l.buf, l.over = l.buf[:0], 0
	if cap(l.buf) > 64<<10 {
		l.buf = nil // a long line's buffer is not kept for the short ones after it
	}
}

// end records a last line that had no newline.
func (l *lines) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 || l.over > 0 {
		l.flush()
	}
}

type teeReader struct {
	src io.Reader
	l   lines
}

func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.src.Read(p)
	t.l.feed(p[:n])
	if err != nil {
		t.l.end()
	}
	return n, err
}

// teeReadCloser keeps src's Close visible: a proxy closes its input to end a blocked read.
type teeReadCloser struct {
	*teeReader
	io.Closer
}

// Reader returns a reader of src that records each line read from it in direction dir:
// the host's stdin, say, before a proxy reads it. When src is an io.Closer, so is the
// reader, and closing it closes src.
func (r *Recorder) Reader(dir Dir, src io.Reader) io.Reader {
	t := &teeReader{src: src, l: lines{r: r, dir: dir}}
	if c, ok := src.(io.Closer); ok {
		return teeReadCloser{t, c}
	}
	return t
}

type teeWriter struct {
	dst io.Writer
	l   lines
}

func (t *teeWriter) Write(p []byte) (int, error) {
	// Recorded before it is passed on: the peer may answer the moment it reads a frame,
	// and its answer must not be recorded before the frame it answers.
	t.l.feed(p)
	return t.dst.Write(p)
}

// Writer returns a writer to dst that records each line written through it in direction
// dir: the host's stdout, say, as a proxy writes to it. A line is recorded as it is handed
// to dst, before dst has it, so that the order of the recording is the order of cause and
// effect.
func (r *Recorder) Writer(dir Dir, dst io.Writer) io.Writer {
	return &teeWriter{dst: dst, l: lines{r: r, dir: dir}}
}
