package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/relayrt/relay/stdio"
)

// runBenchFraming measures Relay's frame reader alone over a real pipe, against a bare read
// loop that does no framing (the limit), for a few frame sizes.
func runBenchFraming(args []string) int {
	fs := flag.NewFlagSet("bench framing", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: relay bench framing [flags]\n\nMeasures MB/s and frames/s of Relay's NDJSON reader over a real pipe, against a bare read loop.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	duration := fs.Duration("duration", 2*time.Second, "how long each measurement reads")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	fmt.Printf("%-8s %-7s %12s %14s %10s\n", "frame", "reader", "MB/s", "frames/s", "vs bare")
	for _, size := range []int{64, 1 << 10, 64 << 10} {
		bare, err := framingRun(size, *duration, false)
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay bench framing:", err)
			return 1
		}
		relay, err := framingRun(size, *duration, true)
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay bench framing:", err)
			return 1
		}
		name := fmt.Sprintf("%d B", size)
		if size >= 1<<10 {
			name = fmt.Sprintf("%d KiB", size>>10)
		}
		for _, r := range []struct {
			reader string
			rate   float64
		}{{"relay", relay}, {"bare", bare}} {
			fmt.Printf("%-8s %-7s %12.0f %14.0f %9.0f%%\n", name, r.reader, r.rate/1e6, r.rate/float64(size+1), 100*r.rate/bare)
		}
	}
	return 0
}

// framingRun writes frames of size bytes into a pipe for d and reads them back, with Relay's
// Reader or with a bare read loop; it returns bytes per second.
func framingRun(size int, d time.Duration, framed bool) (float64, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	frame := append(bytes.Repeat([]byte{'x'}, size), '\n')
	chunk := bytes.Repeat(frame, max(1, (256<<10)/len(frame)))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the writer, owned by this run: it stops when stop closes or the pipe breaks
		defer close(done)
		defer w.Close()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}()
	var n int64
	start := time.Now()
	if framed {
		fr := stdio.NewReader(r, 0)
		for time.Since(start) < d {
			for range 1024 {
				line, err := fr.Next()
				if err != nil {
					return 0, err
				}
				n += int64(len(line) + 1)
			}
		}
	} else {
		buf := make([]byte, 64<<10)
		for time.Since(start) < d {
			m, err := r.Read(buf)
			if err != nil && err != io.EOF {
				return 0, err
			}
			n += int64(m)
		}
	}
	elapsed := time.Since(start)
	close(stop)
	r.Close()
	<-done
	return float64(n) / elapsed.Seconds(), nil
}
