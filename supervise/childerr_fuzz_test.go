package supervise

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
)

// The child's stderr, cut into lines: every byte the child wrote is either passed on or
// counted as cut, each line passed on carries the child's name and at most MaxStderrLine
// bytes of the child's, and there is one line passed on per line written.
func FuzzChildStderrLines(f *testing.F) {
	for _, seed := range []string{"", "hello\n", "a\r\nb\n", "no newline at the end", "\n\n\n",
		strings.Repeat("x", 40) + "\n", "é" + strings.Repeat("€", 12) + "\nrest", "\xff\xfe\n\xc3"} {
		f.Add([]byte(seed), 16)
	}
	f.Fuzz(func(t *testing.T, in []byte, maxLine int) {
		if maxLine < 1 || maxLine > 1<<10 {
			return
		}
		var out bytes.Buffer
		c := &Child{name: "kid", stderr: &out, maxLine: maxLine}
		done := make(chan struct{})
		c.drainStderr(io.NopCloser(bytes.NewReader(in)), done)
		<-done

		want := bytes.Split(in, []byte("\n"))
		ended := len(want[len(want)-1]) == 0
		if ended {
			want = want[:len(want)-1] // the text ended with a newline, or was empty
		}
		got := strings.Split(out.String(), "\n")
		if got[len(got)-1] != "" {
			t.Fatalf("the output does not end with a newline: %q", out.String())
		}
		got = got[:len(got)-1]
		if len(got) != len(want) {
			t.Fatalf("%d lines passed on for %d written: %q", len(got), len(want), got)
		}
		for i, line := range got {
			rest, ok := strings.CutPrefix(line, "kid: ")
			if !ok {
				t.Fatalf("line %d %q lacks the child's name", i, line)
			}
			more := 0
			if j := strings.LastIndex(rest, " … ("); j >= 0 && strings.HasSuffix(rest, " more bytes)") {
				n, err := strconv.Atoi(rest[j+len(" … (") : len(rest)-len(" more bytes)")])
				if err == nil && n > 0 {
					rest, more = rest[:j], n
				}
			}
			if len(rest) > maxLine {
				t.Fatalf("line %d keeps %d bytes, over the limit of %d", i, len(rest), maxLine)
			}
			w := want[i]
			if i < len(want)-1 || ended { // a line ended by CR LF loses its CR
				w = bytes.TrimSuffix(w, []byte("\r"))
			}
			if len(rest)+more != len(w) || !bytes.HasPrefix(w, []byte(rest)) {
				t.Fatalf("line %d: %q and %d cut, for %q written", i, rest, more, w)
			}
		}
	})
}
