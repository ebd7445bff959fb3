package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/relayrt/relay/stdio"
)

// frameSizes are the frame lengths measured, newline excluded.
var frameSizes = []int{64, 1 << 10, 64 << 10}

// pipeFrames starts a writer that sends n frames of size bytes over a real pipe and returns
// the read end. The writer is stopped and waited for by the returned cleanup.
func pipeFrames(b *testing.B, size, n int) (*os.File, func()) {
	b.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	frame := append(bytes.Repeat([]byte{'x'}, size), '\n')
	per := max(1, (256<<10)/len(frame))
	chunk := bytes.Repeat(frame, per)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Close()
		for sent := 0; sent < n; sent += per {
			c := chunk
			if left := n - sent; left < per {
				c = chunk[:left*len(frame)]
			}
			if _, err := w.Write(c); err != nil {
				return
			}
		}
	}()
	return r, func() { r.Close(); <-done }
}

// BenchmarkFraming measures frames per second over a real pipe: Relay's Reader, the
// bufio.Scanner baseline, and a bare read loop that does no framing at all (the limit).
func BenchmarkFraming(b *testing.B) {
	for _, size := range frameSizes {
		b.Run(fmt.Sprintf("reader=relay/size=%s", sizeName(size)), func(b *testing.B) {
			b.SetBytes(int64(size + 1))
			b.ReportAllocs()
			r, stop := pipeFrames(b, size, b.N)
			defer stop()
			fr := stdio.NewReader(r, 0)
			b.ResetTimer()
			for range b.N {
				if _, err := fr.Next(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("reader=scanner/size=%s", sizeName(size)), func(b *testing.B) {
			b.SetBytes(int64(size + 1))
			b.ReportAllocs()
			r, stop := pipeFrames(b, size, b.N)
			defer stop()
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), stdio.DefaultMaxFrame)
			b.ResetTimer()
			for range b.N {
				if !sc.Scan() {
					b.Fatal(sc.Err())
				}
			}
		})
		b.Run(fmt.Sprintf("reader=bare/size=%s", sizeName(size)), func(b *testing.B) {
			b.SetBytes(int64(size + 1))
			b.ReportAllocs()
			r, stop := pipeFrames(b, size, b.N)
			defer stop()
			buf := make([]byte, 64<<10)
			want := int64(b.N) * int64(size+1)
			b.ResetTimer()
			for got := int64(0); got < want; {
				n, err := r.Read(buf)
				got += int64(n)
				if err != nil && err != io.EOF {
					b.Fatal(err)
				}
			}
		})
	}
}

func sizeName(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
