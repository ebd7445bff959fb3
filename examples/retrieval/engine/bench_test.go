package engine

import (
	"context"
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
