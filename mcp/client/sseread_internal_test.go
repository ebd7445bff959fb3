package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// event is what a test expects of one dispatched event.
type event struct{ name, data string }

// readAll reads every event of stream with the limit max; err is what ended the reading.
func readAll(stream string, max int) (events []event, r *sseReader, err error) {
	r = newSSEReader(strings.NewReader(stream), max)
	for {
		name, data, err := r.next()
		if err != nil {
			return events, r, err
		}
		events = append(events, event{name, string(data)})
	}
}

// The event stream format as HTML's Server-sent events section parses it: fields, comments,
// one space dropped after the colon, data lines joined by LF, CRLF line ends, an event with
// no data line dispatches nothing, and an event the stream cuts short is dropped.
func TestSSEReader_ParsesTheEventStreamFormat(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []event
		lastID       string
		retry        time.Duration
	}{
		{"one message", "event: message\ndata: {\"a\":1}\n\n", []event{{"message", `{"a":1}`}}, "", 0},
		{"unnamed", "data: x\n\n", []event{{"", "x"}}, "", 0},
		{"data lines joined", "data: a\ndata: b\ndata:c\n\n", []event{{"", "a\nb\nc"}}, "", 0},
		{"only one space dropped", "data:  two\n\n", []event{{"", " two"}}, "", 0},
		{"CRLF", "event: endpoint\r\ndata: /messages?s=1\r\n\r\n", []event{{"endpoint", "/messages?s=1"}}, "", 0},
		{"comments skipped", ": keep-alive\n\n: more\ndata: x\n\n", []event{{"", "x"}}, "", 0},
		{"a field without a colon", "data\n\n", []event{{"", ""}}, "", 0},
		{"priming event: id, retry, empty data", "id: 7\nretry: 500\ndata: \n\n", []event{{"", ""}}, "7", 500 * time.Millisecond},
		{"no data: nothing dispatched, name forgotten", "event: x\nid: 3\n\ndata: y\n\n", []event{{"", "y"}}, "3", 0},
		{"retry that is not digits ignored", "retry: 5s\nretry: -1\ndata: x\n\n", []event{{"", "x"}}, "", 0},
		{"id with NUL ignored", "id: 1\nid: a\x00b\ndata: x\n\n", []event{{"", "x"}}, "1", 0},
		{"unknown fields ignored", "foo: bar\ndata: x\n\n", []event{{"", "x"}}, "", 0},
		{"an event cut short is dropped", "data: x\n\ndata: y\n", []event{{"", "x"}}, "", 0},
		{"a line cut short is dropped", "data: x\n\ndata: y", []event{{"", "x"}}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, r, err := readAll(tc.stream, 1<<20)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("ended with %v, want io.EOF", err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			if r.lastID != tc.lastID || r.retry != tc.retry {
				t.Fatalf("last id %q retry %v, want %q %v", r.lastID, r.retry, tc.lastID, tc.retry)
			}
		})
	}
}

// endless is a stream of one line that never ends; n counts the bytes taken from it.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	e.n += len(p)
	return len(p), nil
}

// A line longer than the limit is refused once the limit is passed: the reader holds no
// more than the limit and its buffer, whatever the server sends (here, a line that never
// ends).
func TestSSEReader_RefusesALineOverTheLimitHavingReadNoMoreThanIt(t *testing.T) {
	const max = 1 << 20
	for _, prefix := range []string{"data: ", ": a comment ", "event: ", "id: "} {
		src := &endless{}
		r := newSSEReader(io.MultiReader(strings.NewReader(prefix), src), max)
		_, _, err := r.next()
		if !errors.Is(err, ErrMessageTooLarge) {
			t.Fatalf("%q: %v, want ErrMessageTooLarge", prefix, err)
		}
		if !strings.Contains(err.Error(), "MaxMessage") {
			t.Errorf("the error %q does not say what to do", err)
		}
		if limit := max + 2*sseBufferSize; src.n > limit {
			t.Errorf("%q: read %d bytes of the line, want at most %d", prefix, src.n, limit)
		}
	}
}

// An event whose data lines together pass the limit is refused, each line being short.
func TestSSEReader_RefusesAnEventOverTheLimit(t *testing.T) {
	line := "data: " + strings.Repeat("x", 100) + "\n"
	stream := strings.Repeat(line, 200) + "\n" // 20,000 bytes of data, and 199 LFs
	if _, _, err := readAll(stream, 20_000+199); !errors.Is(err, io.EOF) {
		t.Fatalf("at the limit: %v, want the event and io.EOF", err)
	}
	if _, _, err := readAll(stream, 20_000+198); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("one byte over: %v, want ErrMessageTooLarge", err)
	}
}

// An event of 20,000 data lines is read in time linear in its size: the reader's
// allocations do not grow with the number of lines (a copy of the event so far per line
// would allocate once per line, 20,000 times, and copy 20,000²/2 lines' bytes).
func TestSSEReader_ManyDataLinesAllocateLikeOne(t *testing.T) {
	const lines = 20_000
	stream := strings.Repeat("data: x\n", lines) + "\n"
	want := strings.TrimSuffix(strings.Repeat("x\n", lines), "\n")
	var got []byte
	var err error
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	allocs := testing.AllocsPerRun(1, func() {
		_, got, err = newSSEReader(strings.NewReader(stream), 1<<20).next()
	})
	runtime.ReadMemStats(&after)
	if err != nil || string(got) != want {
		t.Fatalf("read %d bytes (%v), want the %d lines joined", len(got), err, lines)
	}
	if allocs > 100 {
		t.Errorf("%v allocations for one event of %d lines, want them not to grow with the lines (at most 100)", allocs, lines)
	}
	// AllocsPerRun runs the function twice (a warm-up): each run may take its buffer (64 KiB),
	// and the data's growth by doubling, at most 4 times its size.
	if total, most := after.TotalAlloc-before.TotalAlloc, uint64(2*(sseBufferSize+4*len(stream))); total > most {
		t.Errorf("%d bytes allocated to read %d, want at most %d", total, len(stream), most)
	}
}

// FuzzSSEReader checks the reader against a plain reading of the format (HTML, Server-sent
// events › Parsing an event stream) with the same limits: the same events, last id and
// retry, and ErrMessageTooLarge exactly where the plain reading passes a limit, whatever
// the bytes.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"event: message\ndata: {}\n\n",
		"id: 1\nretry: 10\ndata: \n\n",
		"data: a\r\ndata: b\r\n\r\n",
		": comment\n\ndata\n\n",
		"data: x\n\ndata: y",
	} {
		f.Add([]byte(s), 64)
	}
	f.Fuzz(func(t *testing.T, stream []byte, max int) {
		if max < 1 || max > 1<<16 {
			max = 1 << 16
		}
		want, wantID, wantRetry, over := referenceEvents(stream, max)
		r := newSSEReader(bytes.NewReader(stream), max)
		var got []event
		var err error
		for {
			var name string
			var data []byte
			if name, data, err = r.next(); err != nil {
				break
			}
			if len(data) > max {
				t.Fatalf("an event of %d bytes passed the limit %d", len(data), max)
			}
			got = append(got, event{name, string(data)})
		}
		if errors.Is(err, ErrMessageTooLarge) != over || (!over && !errors.Is(err, io.EOF)) {
			t.Fatalf("ended with %v, want a refusal: %v", err, over)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || r.lastID != wantID || r.retry != wantRetry {
			t.Fatalf("got %q id %q retry %v\nwant %q id %q retry %v", got, r.lastID, r.retry, want, wantID, wantRetry)
		}
	})
}

// referenceEvents reads stream as the format's algorithm says, lines ending in LF or CRLF
// (a lone CR ends no line here, as in the reader), and stops (over) at the first line of
// more than max+8 bytes, its end included, or the first data line that takes the event's
// data past max bytes.
func referenceEvents(stream []byte, max int) (events []event, lastID string, retry time.Duration, over bool) {
	lines := strings.SplitAfter(string(stream), "\n")
	var data strings.Builder
	var name string
	for _, line := range lines {
		if len(line) > max+8 {
			return events, lastID, retry, true
		}
		if !strings.HasSuffix(line, "\n") {
			break // cut short by the end of the stream: dropped
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if data.Len() > 0 {
				events = append(events, event{name, strings.TrimSuffix(data.String(), "\n")})
			}
			data.Reset()
			name = ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			if data.Len()+len(value) > max { // data holds an LF after each line: the joins
				return events, lastID, retry, true
			}
			data.WriteString(value + "\n")
		case "id":
			if !strings.Contains(value, "\x00") {
				lastID = value
			}
		case "retry":
			if value != "" && strings.Trim(value, "0123456789") == "" {
				if ms, err := strconv.Atoi(value); err == nil {
					retry = time.Duration(ms) * time.Millisecond
				}
			}
		}
	}
	return events, lastID, retry, false
}
