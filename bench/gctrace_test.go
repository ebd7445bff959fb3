package bench

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// gcTrace reads a Go server's standard error under GODEBUG=gctrace=1 and adds up the CPU time
// of its collections as the runtime reports it, one line per collection:
//
//	gc 2 @0.061s 1%: 0.40+0.37+0.003 ms clock, 0.81+0.33/0.38/0.003+0.007 ms cpu, ...
//
// The cpu field is the stop-the-world pause before marking, the marking done by allocating
// goroutines (assists), by the collector's own workers and on otherwise idle processors, and
// the pause after it; a pause counts every processor, as the runtime counts it. Sweeping, which
// allocation pays as it goes, is not in it. Other lines pass through untouched.
type gcTrace struct {
	mu      sync.Mutex
	partial []byte        // a line not yet ended
	cpu     time.Duration // of every collection so far
	cycles  int
}

func (g *gcTrace) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.partial = append(g.partial, p...)
	for {
		i := bytes.IndexByte(g.partial, '\n')
		if i < 0 {
			break
		}
		g.line(string(g.partial[:i]))
		g.partial = g.partial[i+1:]
	}
	if len(g.partial) > 1<<16 { // no gctrace line is this long
		g.partial = g.partial[:0]
	}
	return len(p), nil
}

// line adds one collection's CPU time, if the line reports one.
func (g *gcTrace) line(l string) {
	if !strings.HasPrefix(l, "gc ") {
		return
	}
	_, after, ok := strings.Cut(l, " ms clock, ")
	if !ok {
		return
	}
	field, _, ok := strings.Cut(after, " ms cpu")
	if !ok {
		return
	}
	var ms float64
	for _, n := range strings.FieldsFunc(field, func(r rune) bool { return r == '+' || r == '/' }) {
		v, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return
		}
		ms += v
	}
	g.cpu += time.Duration(ms * float64(time.Millisecond))
	g.cycles++
}

// total returns the CPU time of the collections read so far and how many there were.
func (g *gcTrace) total() (time.Duration, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cpu, g.cycles
}

// TestGCTrace reads lines as go1.26 writes them, cut anywhere, among other output.
func TestGCTrace(t *testing.T) {
	out := "starting\n" +
		"gc 1 @0.052s 0%: 0.31+1.3+0.011 ms clock, 0.63+0/0.88/0.58+0.023 ms cpu, 3->4->0 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P\n" +
		"a log line that mentions gc 3 ms clock, 5 ms cpu\n" +
		"gc 2 @0.061s 1%: 0.40+0.37+0.003 ms clock, 0.81+0.33/0.38/0.003+0.007 ms cpu, 3->3->0 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P\n" +
		"gc 3 @0.070s 1%: 0.40+0.37+0.003 ms clock, 1+1/1/1+1 ms cpu, 3->3->0 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P" // not ended: not counted
	var g gcTrace
	for i := 0; i < len(out); i += 7 {
		g.Write([]byte(out[i:min(i+7, len(out))]))
	}
	cpu, cycles := g.total()
	want := time.Duration((0.63 + 0 + 0.88 + 0.58 + 0.023 + 0.81 + 0.33 + 0.38 + 0.003 + 0.007) * float64(time.Millisecond))
	if cycles != 2 || (cpu-want).Abs() > time.Microsecond {
		t.Errorf("gcTrace read %d collections, %v; want 2, %v", cycles, cpu, want)
	}
}
