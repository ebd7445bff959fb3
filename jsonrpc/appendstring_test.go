package jsonrpc

import (
	"encoding/json"
	"testing"
)

// FuzzAppendString checks AppendString against encoding/json: the same string comes back
// when decoded, and the output is what json.Marshal writes once HTML escaping is set aside.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain ascii text, long enough for words", "quote \" back \\ slash", "tab\tnew\nline\r",
		"\x00\x01\x1f", "é ü 漢字 🙂", "\u2028\u2029", "\xff\xfe bad utf8", "<html>&amp;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s: not a JSON string: %v", s, out, err)
		}
		var want string
		std, _ := json.Marshal(s)
		json.Unmarshal(std, &want)
		if back != want {
			t.Fatalf("AppendString(%q) decodes to %q; encoding/json's to %q", s, back, want)
		}
	})
}
