package stdio

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// chunkReader serves data in reads whose sizes come from cuts, cycling: a cut byte c gives a
// read of at most (c&0x7f)+1 bytes, and a set high bit returns io.EOF together with the last
// bytes when that read reaches the end. No cuts means one byte per read.
type chunkReader struct {
	data []byte
	cuts []byte
	i    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	size, eofWithData := 1, false
	if len(r.cuts) > 0 {
		c := r.cuts[r.i%len(r.cuts)]
		r.i++
		size, eofWithData = int(c&0x7f)+1, c&0x80 != 0
	}
	n := copy(p[:min(len(p), size)], r.data)
	r.data = r.data[n:]
	if len(r.data) == 0 && eofWithData {
		return n, io.EOF
	}
	return n, nil
}

// refSplit is the framing rule of DIGEST A12 and C2 written as plainly as possible: split on
// "\n"; a line (without its "\n") longer than max is one *TooLargeError (the limit counts a
// "\r" before the "\n"); otherwise trailing "\r"s are stripped and a line that is empty or only
// spaces, tabs and "\r"s is skipped. An unterminated final line counts as a line.
func refSplit(data []byte, max int) []string {
	var out []string
	lines := bytes.Split(data, []byte("\n"))
	for i, line := range lines {
		if i == len(lines)-1 && len(line) == 0 {
			break // the input ended with "\n" (or was empty)
		}
		if len(line) > max {
			out = append(out, tooLarge)
			continue
		}
		line = bytes.TrimRight(line, "\r")
		if len(bytes.Trim(line, " \t\r")) == 0 {
			continue
		}
		out = append(out, string(line))
	}
	return out
}

// readerConfigs are the limits FuzzReader tries, some with a tiny first buffer so that fill's
// growth is exercised (with the real initialBuffer of 64 KiB, small limits never grow).
var readerConfigs = []struct{ max, initial int }{
	{max: 1}, {max: 7}, {max: 64}, {max: 64, initial: 2}, {max: 100, initial: 3}, {max: 33, initial: 1},
}

// FuzzReader feeds arbitrary bytes through a Reader in reads of arbitrary sizes, with small
// limits, and checks every frame against the framing rules and against refSplit.
func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\n"), []byte{})
	f.Add([]byte("x\r\n\n  \n{}"), []byte{0x83})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		for _, cfg := range readerConfigs {
			max := cfg.max
			r := NewReader(&chunkReader{data: data, cuts: cuts}, max)
			if cfg.initial > 0 {
				r.buf = make([]byte, cfg.initial) // as if initialBuffer were tiny, to exercise growth
			}
			var got []string
			for calls := 0; ; calls++ {
				if calls > len(data)+2 {
					t.Fatalf("max %d: Next called %d times for %d bytes without ending", max, calls, len(data))
				}
				line, err := r.Next()
				var tl *TooLargeError
				if errors.As(err, &tl) {
					got = append(got, tooLarge)
					continue
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("max %d: Next: %v", max, err)
				}
				switch {
				case bytes.IndexByte(line, '\n') >= 0:
					t.Fatalf("max %d: frame %q holds a newline", max, line)
				case len(bytes.Trim(line, " \t\r")) == 0:
					t.Fatalf("max %d: blank frame %q", max, line)
				case line[len(line)-1] == '\r':
					t.Fatalf("max %d: frame %q ends in \\r", max, line)
				case len(line) > max:
					t.Fatalf("max %d: frame of %d bytes", max, len(line))
				case cap(r.buf) > max+1:
					t.Fatalf("max %d: buffer of %d bytes", max, cap(r.buf))
				}
				got = append(got, string(line))
			}
			if want := refSplit(data, max); !equalFrames(got, want) {
				t.Fatalf("max %d, input %q:\n got  %q\n want %q", max, data, got, want)
			}
		}
	})
}
