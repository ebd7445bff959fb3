//go:build unix

package supervise

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestProxyBoundsTheLogOfAChildsBadLines runs a child that writes 100,000 lines that are not
// JSON to its stdout (as `relay supervise -- sh -c yes` does without end): each is dropped,
// and logged at most 10 times a second, with one summary that counts the rest.
func TestProxyBoundsTheLogOfAChildsBadLines(t *testing.T) {
	const n = 100_000
	var log bytes.Buffer
	enc := zap.NewProductionEncoderConfig()
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(&log)), zapcore.DebugLevel))
	spec := Spec{
		Command: Command{Path: "sh", Args: []string{"-c",
			`yes | head -n 100000; echo '{"jsonrpc":"2.0","method":"notifications/done"}'; exec cat >/dev/null`}},
		Child: ChildOptions{Logger: zap.NewNop()},
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	proxied := make(chan error, 1)
	start := time.Now()
	go func() {
		err := Proxy(context.Background(), New(spec), inR, outW, &ProxyOptions{Logger: logger})
		outW.Close()
		inR.Close()
		proxied <- err
	}()
	seen, read := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "notifications/done") {
				close(seen)
			}
		}
	}()
	select {
	case <-seen: // the child's notification comes after its bad lines: they have all been read
	case <-time.After(30 * time.Second):
		t.Fatal("the child's notification never reached the host")
	}
	inW.Close()
	if err := <-proxied; err != nil {
		t.Fatal(err)
	}
	<-read
	seconds := math.Ceil(time.Since(start).Seconds())

	if bound := int(seconds+1) * 11 << 10; log.Len() > bound {
		t.Errorf("%d bad lines made %d bytes of log in %.0f s; want at most %d", n, log.Len(), seconds, bound)
	}
	logged, more := 0, 0
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		var e struct {
			Msg, Like string
			More      int
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("a log line is not JSON: %q", sc.Text())
		}
		switch {
		case e.Msg == "the child wrote a malformed frame; dropped":
			logged++
		case e.Like == "the child wrote a malformed frame; dropped":
			more += e.More
		}
	}
	if logged > 10*int(seconds+1) || logged+more != n {
		t.Errorf("%d entries and %d summarised in %.0f s; want at most 10 a second, and all %d lines counted", logged, more, seconds, n)
	}
}
