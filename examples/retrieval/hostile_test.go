package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/examples/retrieval/engine"
)

// Hostile input through the real server: each request is answered, within bounds that do not
// depend on how hostile it is, and the server goes on serving.

const initializeQuiet = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"client":{"name":"test"}}}`

// deepFilter is a retrieve whose filter nests depth nots: 9,900 make a 79 KB body.
func deepFilter(id, depth int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"retrieve","params":{"query":"x","k":1,"filter":%s{"field":"top","op":"eq","value":"x"}%s}}`,
		id, strings.Repeat(`{"not":`, depth), strings.Repeat("}", depth))
}

// killAfter ends the server if the test has not finished with it within d, so that a stalled
// server fails the test (its reads see EOF) instead of hanging it.
func killAfter(t *testing.T, st *stdioTransport, d time.Duration) {
	timer := time.AfterFunc(d, func() { st.cmd.Process.Kill() })
	t.Cleanup(func() { timer.Stop() })
}

// peakRSS returns the peak resident memory of process pid (VmHWM), or false where /proc does
// not tell it.
func peakRSS(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// §8, §12: a filter nested 9,900 deep is -32602 naming the first node beyond the depth limit,
// over both transports, and the server answers the next request as usual.
func TestDeepFilterIsInvalidParams(t *testing.T) {
	for name, start := range transports {
		t.Run(name, func(t *testing.T) {
			tr := start(t)
			if _, code, _ := answer(t, tr.call(t, initializeQuiet)); code != 0 {
				t.Fatalf("initialize: %d", code)
			}
			frames := tr.call(t, deepFilter(1, 9900))
			last := frames[len(frames)-1]
			var e struct {
				Code    int64
				Message string
				Data    map[string]any
			}
			json.Unmarshal(last["error"], &e)
			field, _ := e.Data["field"].(string)
			if e.Code != -32602 || field != "filter"+strings.Repeat(".not", engine.MaxFilterDepth) ||
				!strings.Contains(e.Message, strconv.Itoa(engine.MaxFilterDepth)) {
				t.Fatalf("error %d %q, field %q: want -32602 naming the node at depth %d and the limit",
					e.Code, e.Message, field, engine.MaxFilterDepth+1)
			}
			res, code, _ := answer(t, tr.call(t, `{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"parse JSON","k":1}}`))
			if code != 0 || len(hits(t, res)) != 1 {
				t.Fatalf("the next retrieve: code %d, %v", code, res)
			}
		})
	}
}

// §8: six 9,900-deep filters sent at once are all refused within 10 s, and the server's
// memory stays far from the gigabytes that decoding them used to take.
func TestSixDeepFiltersAtOnce(t *testing.T) {
	st := startStdio(t)
	killAfter(t, st, 10*time.Second)
	if _, code, _ := answer(t, st.call(t, initializeQuiet)); code != 0 {
		t.Fatalf("initialize: %d", code)
	}
	for id := range 6 {
		fmt.Fprintln(st.in, deepFilter(id, 9900))
	}
	for range 6 {
		line, err := st.out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading the answers: %v (the server took more than 10 s)", err)
		}
		if m := decodeFrame(t, line); !strings.Contains(string(m["error"]), `"code":-32602`) {
			t.Fatalf("answer %s, want -32602", line)
		}
	}
	if peak, ok := peakRSS(st.cmd.Process.Pid); ok {
		t.Logf("server peak RSS: %d MiB", peak>>20)
		if peak > 256<<20 {
			t.Errorf("the server's peak RSS is %d MiB, over 256 MiB", peak>>20)
		}
	}
}

// bigAdd is an index/add of n documents of about size bytes each, one word in ten of them
// never seen before.
func bigAdd(id, n, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"index/add","params":{"documents":[`, id)
	words := strings.Fields("parse encode decode stream archive compress buffer reader writer socket")
	for d := range n {
		if d > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"big-%d","text":"`, d)
		start := b.Len()
		for i := 0; b.Len()-start < size; i++ {
			if i%10 == 0 {
				fmt.Fprintf(&b, "w%dx%d ", d, i)
			} else {
				b.WriteString(words[(i*7)%len(words)])
				b.WriteByte(' ')
			}
		}
		b.WriteString(`"}`)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// §7.10, §7.5: while an index/add of 14 documents of almost 1 MiB each (the default limit) is
// served, retrieves sent after it go on being answered, each in a fraction of the add's time.
func TestRetrievesAnsweredDuringALargeIndexAdd(t *testing.T) {
	st := startStdio(t)
	killAfter(t, st, 60*time.Second)
	if _, code, _ := answer(t, st.call(t, initializeQuiet)); code != 0 {
		t.Fatalf("initialize: %d", code)
	}
	add := bigAdd(1, 14, 1<<20-64)
	start := time.Now()
	fmt.Fprintln(st.in, add)
	var took, longest time.Duration
	answered := 0
	for id := 100; took == 0; id++ {
		sent := time.Now()
		fmt.Fprintf(st.in, `{"jsonrpc":"2.0","id":%d,"method":"retrieve","params":{"query":"parse JSON","k":3}}`+"\n", id)
		for {
			line, err := st.out.ReadBytes('\n')
			if err != nil {
				t.Fatalf("reading the answers: %v", err)
			}
			m := decodeFrame(t, line)
			if string(m["id"]) == "1" {
				if m["error"] != nil {
					t.Fatalf("index/add: %s", m["error"])
				}
				took = time.Since(start)
				continue
			}
			if string(m["id"]) == strconv.Itoa(id) {
				if m["error"] != nil {
					t.Fatalf("retrieve: %s", m["error"])
				}
				// Every retrieve was sent while the add was in flight; one that waited for its
				// lock is answered after it.
				longest = max(longest, time.Since(sent))
				if took == 0 {
					answered++
				}
				break
			}
		}
	}
	t.Logf("index/add of %d MiB answered in %v; %d retrieves answered meanwhile, the longest in %v",
		len(add)>>20, took, answered, longest)
	// Decoding the 14 MiB of params takes about as long as tokenising them, and it never held
	// the lock: a quarter of the add's time is what a retrieve waited for when the write lock
	// covered the tokenising, and what it must now stay well below.
	if answered < 5 || longest > took/4 {
		t.Errorf("retrieves waited for the write: %d answered during a %v index/add, the longest in %v", answered, took, longest)
	}
}

// §7.10, §12: a document over the default 1 MiB is -32013 naming it, and an index/add that
// would take the index past its 100,000 documents is -32016; neither stores anything, over
// both transports.
func TestIndexLimits(t *testing.T) {
	for name, start := range transports {
		t.Run(name, func(t *testing.T) {
			tr := start(t)
			if _, code, _ := answer(t, tr.call(t, initializeQuiet)); code != 0 {
				t.Fatalf("initialize: %d", code)
			}
			big := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"index/add","params":{"documents":[{"id":"a","text":"small"},{"id":"b","text":"%s"}]}}`,
				strings.Repeat("x", 1<<20+1))
			_, code, data := answer(t, tr.call(t, big))
			if code != -32013 || data["field"] != "documents[1]" {
				t.Fatalf("a document over 1 MiB: code %d data %v, want -32013 naming documents[1]", code, data)
			}

			var b strings.Builder
			b.WriteString(`{"jsonrpc":"2.0","id":2,"method":"index/add","params":{"documents":[`)
			for i := range 100_000 {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"text":"zzqx"}`)
			}
			b.WriteString(`]}}`)
			frames := tr.call(t, b.String())
			_, code, _ = answer(t, frames)
			if code != -32016 || !strings.Contains(string(frames[len(frames)-1]["error"]), "index/delete") {
				t.Fatalf("an index/add past 100,000 documents: %s, want -32016 saying what to do", frames[len(frames)-1]["error"])
			}

			// Nothing of either was stored.
			res, code, _ := answer(t, tr.call(t, `{"jsonrpc":"2.0","id":3,"method":"index/delete","params":{"ids":["a"]}}`))
			if code != 0 || string(res["deleted"]) != "0" {
				t.Errorf("index/delete of a document from the refused index/add: %v %d", res, code)
			}
			res, code, _ = answer(t, tr.call(t, `{"jsonrpc":"2.0","id":4,"method":"retrieve","params":{"query":"zzqx","k":1,"mode":"sparse"}}`))
			if code != 0 || len(hits(t, res)) != 0 {
				t.Errorf("a document of the refused index/add is retrieved: %v %d", res, code)
			}
		})
	}
}
