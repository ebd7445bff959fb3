package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// benchToolText returns n bytes of the kind of text a tool answers with: lines of prose, with
// quotes and new lines that a JSON string must escape.
func benchToolText(n int) string {
	const line = `The "quick" brown fox jumps over the lazy dog; lorem ipsum dolor sit amet.` + "\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// BenchmarkEncodeTextResult measures turning a tool's text result (one text item of 64 B or
// 64 KiB) into the bytes of its JSON, the step every tools/call that answers with text takes.
// impl=relay is the fast path, textResult.AppendJSON (here in its initialize-generation form),
// writing into a reused buffer; impl=encoding-json is json.Marshal of a plain struct of the same shape, the
// cost the fast path exists to avoid (reflection, and a second pass over the output to check
// it). Both write the same bytes, so SetBytes (the encoded size) makes their MB/s comparable.
func BenchmarkEncodeTextResult(b *testing.B) {
	type wireItem struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type wireResult struct {
		Content []wireItem `json:"content"`
	}
	for _, size := range []struct {
		name string
		n    int
	}{{"64B", 64}, {"64KiB", 64 << 10}} {
		text := benchToolText(size.n)
		r := TextResult(text)
		std := &wireResult{Content: []wireItem{{Type: "text", Text: text}}}
		if !r.textOnly() {
			b.Fatal("a text result took the slow path")
		}
		fast := &textResult{open: legacyOpen, r: r}
		want := fast.AppendJSON(nil)
		if got, err := json.Marshal(std); err != nil || !bytes.Equal(got, want) {
			b.Fatalf("the encoders differ: %v\nrelay %s\njson  %s", err, want, got)
		}
		b.Run("size="+size.name+"/impl=relay", func(b *testing.B) {
			buf := make([]byte, 0, len(want))
			b.SetBytes(int64(len(want)))
			b.ReportAllocs()
			for b.Loop() {
				buf = fast.AppendJSON(buf[:0])
			}
		})
		b.Run("size="+size.name+"/impl=encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(want)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(std); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
