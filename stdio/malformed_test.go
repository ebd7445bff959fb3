package stdio_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/stdio"
)

// TestMalformedInputLogIsBounded feeds a server 100,000 malformed lines through Serve. Each
// one that JSON-RPC answers is still answered (-32700 for text that is not JSON; MCP
// 2026-07-28, Base Protocol › Error Codes); the ones that cannot be answered (a malformed
// notification or response) are logged, at most 10 entries of each kind per second and one
// summary that counts the rest, so the log stays small however much the peer writes.
func TestMalformedInputLogIsBounded(t *testing.T) {
	kinds := map[string]string{ // line → the entry it causes
		`{"result":0}`: "dropped a malformed response; it cannot be answered",
		`{"method":0}`: "dropped a malformed notification; it cannot be answered",
		`{"jsonrpc":"2.0","method":"notifications/x","params":1}`: "dropped a notification whose params are not an object",
	}
	const notJSON = "y"
	const n = 100_000
	var in bytes.Buffer
	sent := map[string]int{}
	var lines []string
	for line := range kinds {
		lines = append(lines, line)
	}
	lines = append(lines, notJSON)
	for i := range n {
		line := lines[i%len(lines)]
		sent[line]++
		in.WriteString(line + "\n")
	}

	size := in.Len()
	var log bytes.Buffer
	enc := zap.NewProductionEncoderConfig()
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(&log), zapcore.WarnLevel))
	srv := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, nil).Runtime(runtime.WithLogger(logger))
	var out bytes.Buffer
	start := time.Now()
	if err := stdio.Serve(context.Background(), srv, &in, &out, stdio.WithLogger(logger)); err != nil {
		t.Fatal(err)
	}
	seconds := math.Ceil(time.Since(start).Seconds())

	answers := bytes.Count(out.Bytes(), []byte("\n"))
	if parseErrors := bytes.Count(out.Bytes(), []byte(`"code":-32700`)); answers != sent[notJSON] || parseErrors != answers {
		t.Errorf("%d answers, %d of them -32700; want one -32700 for each of the %d lines that are not JSON", answers, parseErrors, sent[notJSON])
	}

	// Per second and kind: 10 entries of at most about 1 KiB, and one summary.
	if bound := int(seconds+1) * len(kinds) * 11 << 10; log.Len() > bound {
		t.Errorf("%d malformed lines (%d bytes) made %d bytes of log in %.0f s; want at most %d", n, size, log.Len(), seconds, bound)
	}
	logged, more := map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		var e struct {
			Msg, Like string
			More      int
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("a log line is not JSON: %q", sc.Text())
		}
		if e.Like != "" {
			if !strings.HasSuffix(e.Msg, " more like this in the last second") {
				t.Errorf("a summary says %q", e.Msg)
			}
			more[e.Like] += e.More
			continue
		}
		logged[e.Msg]++
	}
	for line, msg := range kinds {
		if logged[msg] > 10*int(seconds+1) {
			t.Errorf("%q: %d entries in %.0f s; want at most 10 a second", msg, logged[msg], seconds)
		}
		if logged[msg]+more[msg] != sent[line] {
			t.Errorf("%q: %d logged + %d summarised; want the %d lines %s", msg, logged[msg], more[msg], sent[line], line)
		}
	}
}
