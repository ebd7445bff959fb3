package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzReader: whatever a file holds, the reader returns frames or an error, never panics;
// every frame it returns is one ParseFrame accepts again after encoding, with the same
// content; and Parse and Compare take any frame it accepts.
func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"t":"2026-12-01T19:53:34.123456789Z","dir":"in","msg":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}` + "\n"))
	f.Add([]byte(`{"t":"2026-12-01T19:53:34Z","dir":"out","msg":{"jsonrpc":"2.0","id":1,"result":{"_meta":{}}}}` + "\n\n" +
		`{"t":"2026-12-01T19:53:35Z","dir":"in","raw":"not json"}`))
	f.Add([]byte(`{"t":"2026-12-01T19:53:34Z","dir":"in","skipped":17000000}`))
	f.Add([]byte(`{"t":"x","dir":"in","msg":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := NewReader(bytes.NewReader(data), 4096)
		for {
			fr, err := rd.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				return
			}
			b, err := fr.AppendLine(nil)
			if err != nil {
				t.Fatalf("a frame read cannot be encoded: %v", err)
			}
			again, err := ParseFrame(b)
			if err != nil {
				t.Fatalf("a frame read is refused once encoded: %v\n%s", err, b)
			}
			if !again.T.Equal(fr.T) || again.Dir != fr.Dir || again.Raw != fr.Raw || again.Skipped != fr.Skipped || !jsonEqual(again.Msg, fr.Msg) {
				t.Fatalf("round trip changed the frame: %+v → %+v", fr, again)
			}
			m := fr.Parse()
			if len(fr.Msg) > 0 {
				if ds := Compare(fr.Msg, fr.Msg, nil); len(ds) != 0 {
					t.Fatalf("a message differs from itself: %v", ds)
				}
				if m.Kind == Request && !Matches(m.Params, m.Params) {
					t.Fatalf("params do not match themselves: %s", m.Params)
				}
			}
		}
	})
}

func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y bytes.Buffer
	json.Compact(&x, a)
	json.Compact(&y, b)
	return x.String() == y.String()
}
