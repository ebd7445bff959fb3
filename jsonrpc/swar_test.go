package jsonrpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestSWARBoundaries puts one or two interesting bytes at every position of strings around
// the 8- and 16-byte steps of AppendString and the string scanner, and checks both against
// encoding/json: the word-at-a-time tests must neither miss a byte nor stop at a wrong one.
func TestSWARBoundaries(t *testing.T) {
	specials := []byte{0x00, 0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0xc3, 0xff}
	check := func(s []byte) {
		t.Helper()
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(string(s))
		if got := AppendString(nil, string(s)); !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want.Bytes())
		}
		frame := []byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"` + string(s) + `"}}`)
		if _, err := Decode(frame); (err == nil) != json.Valid(frame) {
			t.Fatalf("Decode of a string %q: error %v, but json.Valid says %v", s, err, json.Valid(frame))
		}
	}
	// Past one 16-byte and one 8-byte step of AppendString, and past the string scanner's
	// first 8-byte step and one 32-byte step after it.
	lengths := []int{39, 40, 41, 47, 48}
	for n := 24; n >= 1; n-- {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for i := range n {
			for _, a := range specials {
				s := bytes.Repeat([]byte{'a'}, n)
				s[i] = a
				check(s)
				for j := i + 1; j < min(n, i+9); j++ { // the second one in the same or the next word
					for _, b := range specials {
						s[j] = b
						check(s)
						s[j] = 'a'
					}
				}
			}
		}
	}
}
