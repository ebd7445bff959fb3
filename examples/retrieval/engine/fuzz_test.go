package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"
)

// fuzzEngine is shared by the fuzz target's iterations: retrieval never writes, and building
// the index once keeps each iteration cheap.
var fuzzEngine = NewDefault()

// FuzzRetrieve throws arbitrary query text and k at every mode, with and without the optional
// stages: Retrieve must never panic, must refuse only a k below 1, and must never return a
// NaN or an infinity.
func FuzzRetrieve(f *testing.F) {
	f.Add("parse JSON", 5, uint8(0))
	f.Add("", 0, uint8(1))
	f.Add("\xff\xfe invalid utf-8 \x00", -3, uint8(2))
	f.Add("Ünïcödé 漢字 ﷽ 🙂", 1<<40, uint8(7))
	f.Fuzz(func(t *testing.T, query string, k int, opts uint8) {
		p := RetrieveParams{Query: Text(query), K: k}
		p.Mode = []string{ModeHybrid, ModeDense, ModeSparse, ""}[opts%4]
		if opts&4 != 0 {
			p.Rerank = &RerankStage{}
		}
		if opts&8 != 0 {
			p.MMR = &MMR{}
		}
		if opts&16 != 0 {
			budget := 1 + int(opts)
			p.TokenBudget = &budget
		}
		p.IncludeVectors = opts&32 != 0
		r, err := fuzzEngine.Retrieve(context.Background(), p, nil)
		if k < 1 {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "k" {
				t.Fatalf("k=%d: error %v, want a FieldError for k", k, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		if len(r.Hits) > min(k, 100) {
			t.Fatalf("%d hits for k=%d", len(r.Hits), k)
		}
		seen := map[string]bool{}
		for i, h := range r.Hits {
			floats := append([]float64{h.Score}, h.Vector...)
			for _, s := range h.Scores {
				floats = append(floats, s)
			}
			for _, x := range floats {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("hit %s carries %v", h.ID, x)
				}
			}
			if seen[h.ID] || (i > 0 && r.Hits[i-1].Score < h.Score) {
				t.Fatalf("hits not unique and descending: %v", ids(r.Hits))
			}
			seen[h.ID] = true
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}

		// The same text through rerank, as query and as passage.
		rr, err := fuzzEngine.Rerank(context.Background(), RerankParams{Query: Text(query),
			Passages: []Input{Text(query), Text("parse JSON"), Text("")}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(rr); err != nil {
			t.Fatal(err)
		}
	})
}
