package engine

import (
	"context"
	"encoding/json"
	"testing"
)

// BenchmarkRetrieve measures one retrieve over the default corpus (176 documents) per mode,
// and with the rerank and MMR stages.
func BenchmarkRetrieve(b *testing.B) {
	e := NewDefault()
	cases := []struct {
		name string
		p    RetrieveParams
	}{
		{"dense", RetrieveParams{Mode: ModeDense}},
		{"sparse", RetrieveParams{Mode: ModeSparse}},
		{"hybrid", RetrieveParams{Mode: ModeHybrid}},
		{"hybrid+rerank", RetrieveParams{Rerank: &RerankStage{}}},
		{"hybrid+rerank+mmr", RetrieveParams{Rerank: &RerankStage{}, MMR: &MMR{}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			p := c.p
			p.Query, p.K = Text("read and write compressed archive files"), 10
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Retrieve(context.Background(), p, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRerank measures the rerank method on 30 passages.
func BenchmarkRerank(b *testing.B) {
	e := NewDefault()
	p := RerankParams{Query: Text("read and write compressed archive files")}
	for _, d := range DefaultCorpus()[:30] {
		p.Passages = append(p.Passages, Text(d.Text))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Rerank(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdd measures indexing the default corpus from scratch.
func BenchmarkAdd(b *testing.B) {
	docs := DefaultCorpus()
	b.ReportAllocs()
	for b.Loop() {
		New(Config{}, docs)
	}
}

// BenchmarkDecodeFilter measures decoding retrieve params whose filter is at both limits
// (MaxFilterDepth deep, about MaxFilterNodes nodes), and params whose filter nests 9,900
// deep, which the depth limit refuses.
func BenchmarkDecodeFilter(b *testing.B) {
	for _, c := range []struct {
		name string
		body []byte
		ok   bool
	}{
		{"at-the-limits", []byte(underTheLimits()), true},
		{"9900-deep", []byte(`{"query":"x","k":1,"filter":` + nested(9900, `{"not":`, `}`) + `}`), false},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				var p RetrieveParams
				if err := json.Unmarshal(c.body, &p); (err == nil) != c.ok {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIndexAdd measures an index/add that replaces one document of 1 MiB (the default
// limit), one word in ten of it seen nowhere else, in an engine holding the default corpus.
func BenchmarkIndexAdd(b *testing.B) {
	e := NewDefault()
	p := IndexAddParams{Documents: []IndexDocument{{ID: "big", Text: hostileText(1<<20 - 32)}}}
	b.SetBytes(int64(len(p.Documents[0].Text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.IndexAdd(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}
