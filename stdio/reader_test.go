package stdio

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// tooLarge stands for a *TooLargeError in a list of what a Reader returned.
const tooLarge = "<too large>"

// readAll calls Next until it returns an error other than *TooLargeError, and returns the
// frames (copied) and tooLarge markers in order, and that final error.
func readAll(t testing.TB, r *Reader) ([]string, error) {
	t.Helper()
	var got []string
	for i := 0; ; i++ {
		if i > 1<<20 {
			t.Fatal("Next never ended")
		}
		line, err := r.Next()
		var tl *TooLargeError
		switch {
		case err == nil:
			got = append(got, string(line))
		case errors.As(err, &tl):
			if tl.Limit != r.max {
				t.Errorf("TooLargeError.Limit = %d, want %d", tl.Limit, r.max)
			}
			if line != nil {
				t.Errorf("Next returned %q with a TooLargeError", line)
			}
			got = append(got, tooLarge)
		default:
			if line != nil {
				t.Errorf("Next returned %q with %v", line, err)
			}
			return got, err
		}
	}
}

// readers are the ways a test feeds a Reader: DIGEST C2 says a reader must not assume one
// message per read.
var readers = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"one byte at a time", iotest.OneByteReader},
	{"half reads", iotest.HalfReader},
	{"data with EOF", iotest.DataErrReader},
	{"one byte at a time with EOF", func(r io.Reader) io.Reader { return iotest.DataErrReader(iotest.OneByteReader(r)) }},
}

func TestReader(t *testing.T) {
	long := strings.Repeat("x", 65)
	cases := []struct {
		name  string
		max   int
		input string
		want  []string
	}{
		{name: "DIGEST C2 frames split across reads", max: 64,
			input: `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"method":"ping"}`}},
		{name: "DIGEST C2 multiple frames in one read", max: 64,
			input: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
			want:  []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}},
		{name: "DIGEST A12 trailing \\r accepted", max: 64,
			input: "{\"a\":1}\r\n{\"b\":2}\r\n",
			want:  []string{`{"a":1}`, `{"b":2}`}},
		{name: "DIGEST A12 \\r inside a line is kept", max: 64,
			input: "a\rb\r\n",
			want:  []string{"a\rb"}},
		{name: "DIGEST A12 every trailing \\r is stripped: a frame never ends in \\r", max: 64,
			input: "x\r\r\n{}\r\r\r\n",
			want:  []string{"x", "{}"}},
		{name: "DIGEST C2 blank lines skipped", max: 64,
			input: "\n\n \t \n\r\n\r\r\n{\"a\":1}\n\n \r\n",
			want:  []string{`{"a":1}`}},
		{name: "DIGEST C2 leading and trailing white space of a frame is the decoder's", max: 64,
			input: "  {} \t\n",
			want:  []string{"  {} \t"}},
		{name: "DIGEST C2 final line without newline returned before io.EOF", max: 64,
			input: "{\"a\":1}\n{\"b\":2}",
			want:  []string{`{"a":1}`, `{"b":2}`}},
		{name: "DIGEST C2 final line with only \\r returned before io.EOF", max: 64,
			input: "{\"b\":2}\r",
			want:  []string{`{"b":2}`}},
		{name: "DIGEST C2 final blank line without newline is skipped", max: 64,
			input: "{}\n \t",
			want:  []string{"{}"}},
		{name: "DIGEST C2 empty input is io.EOF at once", max: 64, input: "", want: nil},
		{name: "DIGEST C2 only blank lines is io.EOF", max: 64, input: "\n\r\n  \n", want: nil},
		{name: "limit: a line of exactly max bytes is served", max: 64,
			input: strings.Repeat("m", 64) + "\n" + strings.Repeat("n", 64),
			want:  []string{strings.Repeat("m", 64), strings.Repeat("n", 64)}},
		{name: "limit: an oversize line is discarded with *TooLargeError and the next frame still served", max: 64,
			input: long + "\n{\"next\":1}\n",
			want:  []string{tooLarge, `{"next":1}`}},
		{name: "limit: an oversize line at EOF", max: 64,
			input: "{\"a\":1}\n" + long,
			want:  []string{`{"a":1}`, tooLarge}},
		{name: "limit: an oversize line at EOF ending in \\n", max: 64,
			input: long + "\n",
			want:  []string{tooLarge}},
		{name: "limit: the limit counts a trailing \\r", max: 64,
			input: strings.Repeat("r", 64) + "\r\n" + strings.Repeat("s", 63) + "\r\n",
			want:  []string{tooLarge, strings.Repeat("s", 63)}},
		{name: "limit: an oversize blank line is still reported", max: 4,
			input: "      \n{}\n",
			want:  []string{tooLarge, "{}"}},
		{name: "limit: one error per oversize line", max: 8,
			input: strings.Repeat("a", 100) + "\n" + strings.Repeat("b", 9) + "\n1\n" + strings.Repeat("c", 30) + "\n" + strings.Repeat("d", 17),
			want:  []string{tooLarge, tooLarge, "1", tooLarge, tooLarge}},
		{name: "limit: max 1 serves one-byte frames", max: 1,
			input: "1\n22\n3\r\n\r\n4",
			want:  []string{"1", tooLarge, tooLarge, "4"}},
		{name: "limit: lines longer than the initial buffer grow it", max: 200 << 10,
			input: strings.Repeat("g", 150<<10) + "\n{}\n",
			want:  []string{strings.Repeat("g", 150<<10), "{}"}},
	}
	for _, tc := range cases {
		for _, rd := range readers {
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				r := NewReader(rd.wrap(strings.NewReader(tc.input)), tc.max)
				got, err := readAll(t, r)
				if err != io.EOF {
					t.Errorf("final error %v, want io.EOF", err)
				}
				if !equalFrames(got, tc.want) {
					t.Errorf("frames:\n got  %s\n want %s", summarize(got), summarize(tc.want))
				}
				// After the end, the Reader keeps saying so.
				if line, err := r.Next(); line != nil || err != io.EOF {
					t.Errorf("Next after the end = %q, %v; want nil, io.EOF", line, err)
				}
			})
		}
	}
}

func equalFrames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// summarize prints frames, shortening long ones.
func summarize(frames []string) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, f := range frames {
		if i > 0 {
			sb.WriteString(", ")
		}
		if len(f) > 40 {
			fmt.Fprintf(&sb, "%q…(%d bytes)", f[:20], len(f))
		} else {
			fmt.Fprintf(&sb, "%q", f)
		}
	}
	sb.WriteByte(']')
	return sb.String()
}

// TestReaderReadError checks that a read error other than EOF ends input like EOF does: the
// final line first, then the error, every time Next is called again.
func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("{\"a\":1}\n{\"b\""), iotest.ErrReader(boom)), 64)
	got, err := readAll(t, r)
	if err != boom || !equalFrames(got, []string{`{"a":1}`, `{"b"`}) {
		t.Errorf("got %s, %v; want the two lines and boom", summarize(got), err)
	}
	if _, err := r.Next(); err != boom {
		t.Errorf("Next after the error = %v, want boom again", err)
	}
}

// TestReaderErrorWhileDiscarding checks a read error in the middle of an oversize line.
func TestReaderErrorWhileDiscarding(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader(strings.Repeat("x", 100)), iotest.ErrReader(boom)), 8)
	got, err := readAll(t, r)
	if err != boom || !equalFrames(got, []string{tooLarge}) {
		t.Errorf("got %s, %v; want one TooLargeError then boom", summarize(got), err)
	}
}

func TestTooLargeError(t *testing.T) {
	var err error = &TooLargeError{Limit: 1024}
	if got := err.Error(); got != "stdio: discarded a line longer than 1024 bytes" {
		t.Errorf("Error() = %q", got)
	}
}

func TestNewReaderDefaultMax(t *testing.T) {
	for _, n := range []int{0, -1} {
		if r := NewReader(strings.NewReader(""), n); r.max != DefaultMaxFrame {
			t.Errorf("NewReader(_, %d).max = %d, want DefaultMaxFrame", n, r.max)
		}
	}
	if r := NewReader(strings.NewReader(""), 0); len(r.buf) != initialBuffer {
		t.Errorf("initial buffer %d bytes, want %d", len(r.buf), initialBuffer)
	}
	if r := NewReader(strings.NewReader(""), 10); len(r.buf) != 11 {
		t.Errorf("initial buffer for max 10 is %d bytes, want 11", len(r.buf))
	}
}

// TestReaderSmallFramesKeepTheBufferSmall checks that many small frames never grow the buffer.
func TestReaderSmallFramesKeepTheBufferSmall(t *testing.T) {
	frame := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}` + "\n"
	r := NewReader(strings.NewReader(strings.Repeat(frame, 20000)), 0)
	got, err := readAll(t, r)
	if err != io.EOF || len(got) != 20000 {
		t.Fatalf("read %d frames, %v", len(got), err)
	}
	if cap(r.buf) != initialBuffer {
		t.Errorf("buffer grew to %d bytes for %d-byte frames", cap(r.buf), len(frame))
	}
}

// lineSource produces one line of n bytes of 'x', a newline, and then tail, without holding
// the line in memory; after every Read it checks the Reader's buffer.
type lineSource struct {
	r       *Reader // the Reader reading this source
	n, sent int
	tail    *strings.Reader
	bufMax  int
	reads   int
}

func (s *lineSource) Read(p []byte) (int, error) {
	if s.r != nil {
		s.bufMax = max(s.bufMax, cap(s.r.buf))
	}
	s.reads++
	if s.sent < s.n {
		k := min(len(p), s.n-s.sent)
		for i := range p[:k] {
			p[i] = 'x'
		}
		s.sent += k
		return k, nil
	}
	if s.sent == s.n {
		s.sent++
		if len(p) == 0 {
			return 0, nil
		}
		p[0] = '\n'
		return 1, nil
	}
	return s.tail.Read(p)
}

// TestReaderMemoryIsBoundedByMax checks that a 48 MiB line with a 1 MiB limit is discarded
// without the Reader ever holding more than max+1 bytes, and the next frame is served.
func TestReaderMemoryIsBoundedByMax(t *testing.T) {
	const maxFrame = 1 << 20
	src := &lineSource{n: 48 << 20, tail: strings.NewReader("{\"after\":true}\n")}
	r := NewReader(src, maxFrame)
	src.r = r

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := r.Next()
	runtime.ReadMemStats(&after)

	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != maxFrame {
		t.Fatalf("Next = %v, want a *TooLargeError with limit %d", err, maxFrame)
	}
	if src.bufMax > maxFrame+1 || cap(r.buf) > maxFrame+1 {
		t.Errorf("the buffer reached %d bytes (now %d); want at most max+1 = %d", src.bufMax, cap(r.buf), maxFrame+1)
	}
	// Growing by doubling up to max and then by one byte more would allocate about 3*max; the
	// Reader jumps to max+1 once past half of it, so discarding costs less than 2*max.
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 2*maxFrame {
		t.Errorf("discarding a 48 MiB line allocated %d bytes; want less than 2*max", allocated)
	}
	line, err := r.Next()
	if err != nil || string(line) != `{"after":true}` {
		t.Errorf("next frame = %q, %v", line, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("end = %v, want io.EOF", err)
	}
}
