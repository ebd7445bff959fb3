//go:build unix

package supervise

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The child's stderr is passed on as it comes, one Write per line, each prefixed with the
// child's name and cut to MaxStderrLine bytes with the bytes cut counted; the last lines are
// kept for StderrTail.
func TestChildPassesStderrOnLineByLine(t *testing.T) {
	var out syncBuffer
	c, _ := tcStart(t, "echo,stderr=hello from the child,noisy-line", &ChildOptions{StopWait: time.Second, Stderr: &out, MaxStderrLine: 100})
	c.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`))
	tcFrame(t, c, 10*time.Second) // the long line is written before the answer
	tcStop(t, c, 10*time.Second, nil)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	long := "test-child: " + strings.Repeat("y", 100) + " … (" + strconv.Itoa(3<<19-100) + " more bytes)"
	// The child writes its long line before each frame: its hello and its answer.
	if len(lines) != 3 || lines[0] != "test-child: hello from the child" || lines[1] != long || lines[2] != long {
		t.Errorf("the child's stderr was passed on as %d lines %.300q, want its greeting and two long lines cut to 100 bytes", len(lines), lines)
	}
	if tail := c.StderrTail(); len(tail) != 3 || tail[0] != "hello from the child" || len(tail[1]) > stderrTailLine+40 {
		t.Errorf("StderrTail = %.200q", tail)
	}
	tcNoProcessesLeft(t)
}

// Relay's own warnings about a child's output are rate-limited: a child that writes 100,000
// lines over the frame limit to its stdout makes at most 10 warnings a second, and a summary
// that counts the rest.
func TestChildWarningsAboutItsOutputAreRateLimited(t *testing.T) {
	const n = 100_000
	core, logs := observer.New(zapcore.DebugLevel)
	start := time.Now()
	c, err := StartChild(Command{Path: "sh", Args: []string{"-c", "yes 'a line longer than the frame limit' | head -n " + strconv.Itoa(n)}},
		&ChildOptions{MaxFrame: 16, Logger: zap.New(core), StopWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for range c.Frames() {
		t.Error("a frame over the limit was delivered")
	}
	<-c.Done()
	seconds := int(time.Since(start).Seconds()) + 1
	const msg = "discarded a line of the child's stdout over the size limit"
	logged, more := logs.FilterMessage(msg).Len(), 0
	for _, e := range logs.All() {
		if e.ContextMap()["like"] == msg {
			more += int(e.ContextMap()["more"].(int64))
		}
	}
	if logged > 10*seconds || logged+more != n {
		t.Errorf("%d warnings and %d summarised in %d s; want at most 10 a second, and all %d lines counted", logged, more, seconds, n)
	}
	tcNoProcessesLeft(t)
}
