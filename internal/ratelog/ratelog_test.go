package ratelog_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/relayrt/relay/internal/ratelog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a fake time that tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// jsonLog returns a logger writing JSON lines, the production encoding, into buf.
func jsonLog(buf *bytes.Buffer) *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(buf), zapcore.DebugLevel))
}

type entry struct {
	Msg         string `json:"msg"`
	Frame       string `json:"frame"`
	FrameLength int    `json:"frameLength"`
	Like        string `json:"like"`
	More        int    `json:"more"`
}

func entries(t *testing.T, buf *bytes.Buffer) []entry {
	t.Helper()
	var out []entry
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("a log line is not JSON: %v: %q", err, sc.Text())
		}
		out = append(out, e)
	}
	return out
}

// TestBoundedUnderAFlood feeds 100,000 malformed frames of 4 KiB each (about 400 MiB) over
// five seconds and checks that the log stays small: per second at most 10 entries and one
// summary, frames cut to 256 bytes, and every frame accounted for.
func TestBoundedUnderAFlood(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(1_000_000, 0)}
	l := ratelog.New(jsonLog(&buf), &ratelog.Options{Now: c.now})
	frame := bytes.Repeat([]byte{'{', 0x01, 0xff}, 4096/3) // escapes and invalid UTF-8: the costliest bytes to log
	const n = 100_000
	for range n {
		l.Warn("dropped a malformed frame", frame)
		c.advance(50 * time.Microsecond)
	}
	l.Flush()

	if buf.Len() > 64<<10 {
		t.Fatalf("%d frames (%d bytes) made %d bytes of log; want at most 64 KiB", n, n*len(frame), buf.Len())
	}
	logged, more, summaries := 0, 0, 0
	for _, e := range entries(t, &buf) {
		switch e.Msg {
		case "dropped a malformed frame":
			logged++
			if e.FrameLength != len(frame) {
				t.Errorf("frameLength = %d; want the original %d", e.FrameLength, len(frame))
			}
		default:
			summaries++
			more += e.More
			if e.Like != "dropped a malformed frame" || !strings.HasSuffix(e.Msg, " more like this in the last second") {
				t.Errorf("unexpected summary %+v", e)
			}
		}
	}
	if logged > 10*5 || summaries > 5 {
		t.Errorf("over 5 s: %d entries and %d summaries; want at most 10 and 1 per second", logged, summaries)
	}
	if logged+more != n {
		t.Errorf("%d logged + %d summarised = %d; want all %d", logged, more, logged+more, n)
	}
}

func TestSummaryComesWithTheFirstCallAfterTheSecond(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(1_000_000, 0)}
	l := ratelog.New(jsonLog(&buf), &ratelog.Options{PerSecond: 2, Now: c.now})
	for range 5 {
		l.Warn("bad", []byte("x"))
	}
	if got := len(entries(t, &buf)); got != 2 {
		t.Fatalf("within the second: %d entries; want 2", got)
	}
	c.advance(time.Second)
	l.Warn("bad", []byte("y"))
	es := entries(t, &buf)
	if len(es) != 4 || es[2].Msg != "3 more like this in the last second" || es[2].More != 3 || es[3].Frame != "y" {
		t.Fatalf("after the second: %+v; want the summary of 3, then the new entry", es)
	}
	l.Flush() // nothing held back since: nothing to say
	if got := len(entries(t, &buf)); got != 4 {
		t.Fatalf("Flush with nothing held back logged %d entries more", got-4)
	}
}

func TestKindsAreLimitedApart(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(1_000_000, 0)}
	l := ratelog.New(jsonLog(&buf), &ratelog.Options{PerSecond: 1, Now: c.now})
	for range 3 {
		l.Warn("a", nil)
		l.Warn("b", nil)
	}
	l.Flush()
	var msgs []string
	for _, e := range entries(t, &buf) {
		msgs = append(msgs, e.Msg+"/"+e.Like)
	}
	want := "a/ b/ 2 more like this in the last second/a 2 more like this in the last second/b"
	if got := strings.Join(msgs, " "); got != want {
		t.Fatalf("got %q; want %q", got, want)
	}
}

func TestFramesAreCutOnARuneBoundary(t *testing.T) {
	var buf bytes.Buffer
	l := ratelog.New(jsonLog(&buf), &ratelog.Options{MaxBytes: 5})
	l.Warn("bad", []byte("abcdé…")) // é is two bytes: bytes 4 and 5
	l.Warn("bad", []byte("abcé…"))  // é ends at byte 5
	l.Warn("bad", []byte("ab"))
	es := entries(t, &buf)
	for i, want := range []struct {
		frame  string
		length int
	}{{"abcd", 9}, {"abcé", 8}, {"ab", 2}} {
		if es[i].Frame != want.frame || es[i].FrameLength != want.length || !utf8.ValidString(es[i].Frame) {
			t.Errorf("entry %d: frame %q (length %d); want %q (%d)", i, es[i].Frame, es[i].FrameLength, want.frame, want.length)
		}
	}
}

func TestTheLoggedFrameIsACopy(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel) // keeps fields after Warn returns
	l := ratelog.New(zap.New(core), nil)
	frame := []byte("first")
	l.Warn("bad", frame)
	copy(frame, "XXXXX") // the caller reuses its buffer
	if got := logs.All()[0].ContextMap()["frame"]; got != "first" {
		t.Fatalf("the entry's frame changed with the caller's buffer: %q", got)
	}
}

func TestNoFrameNoFrameFields(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	l := ratelog.New(zap.New(core), nil)
	l.Warn("refused a request: in-flight limit and queue are full", nil, zap.Int("queued", 3))
	if got := logs.All()[0].ContextMap(); len(got) != 1 || got["queued"] != int64(3) {
		t.Fatalf("fields %v; want only the caller's", got)
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"abé", 3, "ab"},                            // é's second byte would be cut off
		{"ab€x", 4, "ab"},                           // € is three bytes
		{"ab€x", 5, "ab€"},                          // it fits
		{"a😀", 4, "a"},                              // four bytes
		{"\xff\xff\xff\xff\xff", 3, "\xff\xff\xff"}, // not UTF-8: cut as bytes
		{"\x80\x80\x80\x80\x80", 4, "\x80\x80\x80\x80"},
	} {
		if got := ratelog.Cut(tc.in, tc.max); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q; want %q", tc.in, tc.max, got, tc.want)
		}
		if got := ratelog.Cut([]byte(tc.in), tc.max); string(got) != tc.want {
			t.Errorf("Cut([]byte(%q), %d) = %q; want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
