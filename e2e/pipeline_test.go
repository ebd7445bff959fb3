package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestPipelinedEchoIDsAndTexts writes 2,000 tools/call requests without waiting for any answer
// and checks that each is answered exactly once, with its id echoed byte for byte (DIGEST A1:
// the response echoes the same id; ids are strings or integers, so 12345678901234567890 must
// not be rounded through a float) and its text returned unchanged (DIGEST A1: UTF-8; DIGEST
// A12: a frame never spans lines, so text newlines and raw U+2028 must survive the framing).
func TestPipelinedEchoIDsAndTexts(t *testing.T) {
	t.Parallel()
	const n = 2000

	// Ids that each appear once: raw JSON, compared as bytes (DIGEST A1: an id must not repeat
	// one still in flight, so every id here is distinct).
	special := []string{
		`12345678901234567890`, `-7`, `0`, `-12345678901234567890`,
		`"abc"`, `""`, `"with \"quotes\""`, `"back\\slash"`, `"tab\there"`,
		`"ünïcødé"`, `"日本語"`, `"🚀"`, `"\u00e9t\u00e9"`, `"\ud83d\ude00 escaped surrogates"`,
		`"line\u2028sep"`, "\"raw\u2028sep\"", `" "`, `"1"`,
	}
	unit := "70 KB of text, with \"quotes\" and \\ and ü; "
	big := strings.Repeat(unit, (70<<10)/len(unit)+1) // a little over 70 KB, whole runes
	texts := []string{
		"plain",
		"",
		`"quoted"`,
		`back\slash \\ \n (not a newline) \u0041`,
		"new\nline\r\nand\ttab",
		"unicode: ü é 日本語 🚀🎉 👩‍👩‍👧",
		"line separator \u2028 and paragraph separator \u2029",
		"control \x01\x1f bytes",
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		"<html> & entities",
		big,
	}

	ids := make([]string, n)
	want := make(map[string]string, n)
	var buf bytes.Buffer
	for i := range n {
		id := fmt.Sprint(i + 1)
		switch {
		case i < len(special):
			id = special[i]
		case i%7 == 0:
			id = fmt.Sprintf(`"s-%d"`, i)
		case i%11 == 0:
			id = fmt.Sprintf(`"ü-%d-🚀"`, i)
		}
		text := texts[i%len(texts)]
		if i%len(texts) == len(texts)-1 && i > 200 {
			text = texts[0] // keep the 70 KB text to a handful of requests
		}
		if _, dup := want[id]; dup {
			t.Fatalf("test bug: id %s twice", id)
		}
		ids[i] = id
		want[id] = text
		buf.WriteString(echoLine(id, text))
		buf.WriteByte('\n')
	}

	c := start(t)
	c.write(buf.Bytes()) // all 2,000 at once; the reader goroutine keeps stdout drained
	msgs := c.waitFor(fmt.Sprintf("%d responses", n), func(ms []msg) bool { return len(ms) >= n })

	seen := make(map[string]int, n)
	for _, m := range msgs {
		if !m.isResponse() {
			t.Errorf("unexpected notification: %.200s", m)
			continue
		}
		id := string(m.ID)
		seen[id]++
		text, ok := want[id]
		if !ok {
			t.Errorf("response with id %s, which was never sent (ids must be echoed byte for byte, DIGEST A1): %.200s", id, m)
			continue
		}
		if got := toolText(t, m, true); got != text {
			t.Errorf("id %s: text = %.80q (%d bytes), want %.80q (%d bytes)", id, got, len(got), text, len(text))
		}
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("id %s answered %d times, want exactly once", id, seen[id])
		}
	}
	c.closeStdin()
	if code := c.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if extra := len(c.snapshot()) - n; extra != 0 {
		t.Errorf("%d messages beyond the %d responses", extra, n)
	}
}
