package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// recordingWriter records every Write call.
type recordingWriter struct {
	mu     sync.Mutex
	writes [][]byte
	err    error         // returned by every Write when set
	wrote  chan struct{} // signalled after each Write when set
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes = append(w.writes, append([]byte(nil), p...))
	err := w.err
	w.mu.Unlock()
	if w.wrote != nil {
		w.wrote <- struct{}{}
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *recordingWriter) output() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Join(w.writes, nil)
}

func (w *recordingWriter) calls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

// queued returns a closed channel holding frames, so that writeLoop finds them all waiting.
func queued(frames ...[]byte) chan []byte {
	ch := make(chan []byte, len(frames))
	for _, f := range frames {
		ch <- f
	}
	close(ch)
	return ch
}

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

func TestWriteLoopFraming(t *testing.T) {
	cases := []struct {
		name    string
		frames  []string
		want    string
		dropped int // frames logged as dropped
	}{
		{name: "DIGEST C2 every frame ends with exactly one newline",
			frames: []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","method":"notifications/progress"}`},
			want:   "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n"},
		{name: "DIGEST A12 pretty JSON is compacted to one line",
			frames: []string{"{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"result\": {\n    \"a\": [\n      1,\n      2\n    ]\n  }\n}"},
			want:   "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":[1,2]}}\n"},
		{name: "DIGEST A12 CRLF-pretty JSON is compacted to one line",
			frames: []string{"{\r\n\t\"id\": 1,\r\n\t\"result\": null\r\n}"},
			want:   "{\"id\":1,\"result\":null}\n"},
		{name: "DIGEST C2 a frame that already ends in a newline gets no second one",
			frames: []string{"{\"id\":1}\n", "{\"id\":2}\r\n"},
			want:   "{\"id\":1}\n{\"id\":2}\n"},
		{name: "DIGEST A12 escaped newlines inside strings are kept, spaces in strings too",
			frames: []string{"{\n \"text\": \"line one\\nline two\",\n \"s\": \"a  b\"\n}"},
			want:   "{\"text\":\"line one\\nline two\",\"s\":\"a  b\"}\n"},
		{name: "DIGEST A12 compaction does not escape HTML",
			frames: []string{"{\n\"h\": \"<a&b>\"\n}"},
			want:   "{\"h\":\"<a&b>\"}\n"},
		{name: "DIGEST A12 invalid JSON containing a newline is dropped and logged; its neighbours are written",
			frames: []string{`{"id":1}`, "{\"id\":\n", `{"id":3}`},
			want:   "{\"id\":1}\n{\"id\":3}\n", dropped: 1},
		{name: "DIGEST A12 a raw newline inside a string is invalid JSON and dropped",
			frames: []string{"{\"text\":\"a\nb\"}"},
			want:   "", dropped: 1},
		{name: "DIGEST A12 two JSON values on two lines are not one frame and are dropped",
			frames: []string{"{\"id\":1}\n{\"id\":2}"},
			want:   "", dropped: 1},
		{name: "DIGEST A12 a frame that is only a newline is dropped, never written as a blank line",
			frames: []string{"\n", "\r\n", " \n "},
			want:   "", dropped: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var frames [][]byte
			for _, f := range tc.frames {
				frames = append(frames, []byte(f))
			}
			w := &recordingWriter{}
			log, logs := observed()
			if err := writeLoop(w, queued(frames...), log, func(error) { t.Error("failed called") }, nil); err != nil {
				t.Fatalf("writeLoop: %v", err)
			}
			out := w.output()
			if string(out) != tc.want {
				t.Errorf("output %q, want %q", out, tc.want)
			}
			checkLines(t, out)
			dropped := logs.FilterMessage("dropped an outgoing frame that is not valid JSON")
			if dropped.Len() != tc.dropped {
				t.Errorf("logged %d dropped frames, want %d: %v", dropped.Len(), tc.dropped, logs.All())
			}
			for _, e := range dropped.All() {
				if e.Level != zapcore.ErrorLevel {
					t.Errorf("dropped frame logged at %v", e.Level)
				}
			}
		})
	}
}

// checkLines checks DIGEST A12 and C2 on written output: lines ended by exactly one "\n",
// each line one valid JSON value, no blank line.
func checkLines(t *testing.T, out []byte) {
	t.Helper()
	if len(out) == 0 {
		return
	}
	if out[len(out)-1] != '\n' {
		t.Errorf("output does not end in a newline: %q", out)
	}
	for _, line := range bytes.Split(out[:len(out)-1], []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			t.Errorf("blank line written: %q", out)
		} else if !json.Valid(line) {
			t.Errorf("line is not valid JSON: %q", line)
		}
	}
}

// TestWriteLoopCoalesces checks that frames queued before the loop runs are joined into fewer
// writes than frames, each ending on a frame boundary.
func TestWriteLoopCoalesces(t *testing.T) {
	var frames [][]byte
	var want bytes.Buffer
	for i := range 500 {
		f := jsonFrame(i, 100)
		frames = append(frames, f)
		want.Write(f)
		want.WriteByte('\n')
	}
	w := &recordingWriter{}
	if err := writeLoop(w, queued(frames...), zap.NewNop(), func(error) { t.Error("failed called") }, nil); err != nil {
		t.Fatal(err)
	}
	if w.calls() >= len(frames) {
		t.Errorf("%d frames took %d writes; want fewer writes than frames", len(frames), w.calls())
	}
	if w.calls() != 1 {
		t.Errorf("%d frames of %d bytes, all queued, took %d writes; want 1", len(frames), len(frames[0]), w.calls())
	}
	if !bytes.Equal(w.output(), want.Bytes()) {
		t.Error("coalesced output differs from the frames in order")
	}
}

// TestWriteLoopCoalesceLimit checks that one write never joins more than maxCoalesce bytes of
// frames (plus the frame that crosses it), and that writes split only between frames.
func TestWriteLoopCoalesceLimit(t *testing.T) {
	var frames [][]byte
	var want bytes.Buffer
	for i := range 7 {
		f := jsonFrame(i, 600<<10)
		frames = append(frames, f)
		want.Write(f)
		want.WriteByte('\n')
	}
	w := &recordingWriter{}
	if err := writeLoop(w, queued(frames...), zap.NewNop(), func(error) { t.Error("failed called") }, nil); err != nil {
		t.Fatal(err)
	}
	if w.calls() != 4 { // two 600 KiB frames cross 1 MiB: 2+2+2+1
		t.Errorf("7 frames of 600 KiB took %d writes, want 4", w.calls())
	}
	for i, p := range w.writes {
		if p[len(p)-1] != '\n' {
			t.Errorf("write %d does not end on a frame boundary", i)
		}
		if len(p) >= maxCoalesce+600<<10+2 {
			t.Errorf("write %d is %d bytes", i, len(p))
		}
	}
	if !bytes.Equal(w.output(), want.Bytes()) {
		t.Error("output differs from the frames in order")
	}
}

// jsonFrame returns a valid one-line JSON frame of about size bytes.
func jsonFrame(id, size int) []byte {
	f := jsonrpcResult(id, strings.Repeat("p", max(size-40, 1)))
	return f
}

func jsonrpcResult(id int, text string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": text})
	return b
}

// TestWriteLoopIdleFlushesEachFrame checks that an idle writer writes a frame at once, without
// waiting for more.
func TestWriteLoopIdleFlushesEachFrame(t *testing.T) {
	w := &recordingWriter{wrote: make(chan struct{})}
	frames := make(chan []byte)
	done := make(chan error, 1)
	go func() { done <- writeLoop(w, frames, zap.NewNop(), func(error) {}, nil) }()
	for i := range 3 {
		frames <- jsonrpcResult(i, "x")
		select {
		case <-w.wrote:
		case <-time.After(10 * time.Second):
			t.Fatalf("frame %d was not written while the writer was idle", i)
		}
	}
	close(frames)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w.calls() != 3 {
		t.Errorf("%d writes, want 3", w.calls())
	}
}

// TestWriteLoopKeepsDrainingAfterAWriteError checks that after a write fails the loop reports
// the error once through failed, writes nothing more, keeps taking frames so that no sender
// blocks, and returns the error when frames is closed.
func TestWriteLoopKeepsDrainingAfterAWriteError(t *testing.T) {
	broken := errors.New("broken pipe")
	w := &recordingWriter{err: broken}
	log, logs := observed()
	frames := make(chan []byte) // unbuffered: every send needs the loop to take it
	var failedCalls []error
	var mu sync.Mutex
	done := make(chan error, 1)
	go func() {
		done <- writeLoop(w, frames, log, func(err error) {
			mu.Lock()
			failedCalls = append(failedCalls, err)
			mu.Unlock()
		}, nil)
	}()
	deadline := time.After(20 * time.Second)
	for i := range 2000 {
		select {
		case frames <- jsonrpcResult(i, "lost"):
		case <-deadline:
			t.Fatalf("sender blocked at frame %d after the write error", i)
		}
	}
	close(frames)
	if err := <-done; !errors.Is(err, broken) {
		t.Errorf("writeLoop returned %v, want %v", err, broken)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failedCalls) != 1 || !errors.Is(failedCalls[0], broken) {
		t.Errorf("failed called with %v, want once with %v", failedCalls, broken)
	}
	if w.calls() != 1 {
		t.Errorf("%d writes, want 1: nothing is written after a failure", w.calls())
	}
	if n := logs.FilterMessage("cannot write to the protocol output; discarding further frames").Len(); n != 1 {
		t.Errorf("write error logged %d times, want 1", n)
	}
}

// TestWriteLoopNothingToWrite checks that a closed empty channel ends the loop without a write.
func TestWriteLoopNothingToWrite(t *testing.T) {
	w := &recordingWriter{}
	if err := writeLoop(w, queued(), zap.NewNop(), func(error) { t.Error("failed called") }, nil); err != nil {
		t.Fatal(err)
	}
	if w.calls() != 0 {
		t.Errorf("%d writes, want 0", w.calls())
	}
}

// TestWriteLoopOnlyDroppedFramesWriteNothing checks that a batch of frames that are all dropped
// makes no (empty) write.
func TestWriteLoopOnlyDroppedFramesWriteNothing(t *testing.T) {
	w := &recordingWriter{}
	if err := writeLoop(w, queued([]byte("{\n"), []byte("[\n")), zap.NewNop(), func(error) {}, nil); err != nil {
		t.Fatal(err)
	}
	if w.calls() != 0 {
		t.Errorf("%d writes of %q, want none", w.calls(), w.output())
	}
}
