package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

// lists returns the dense and sparse recall lists of a query, as retrieve in each mode gives
// them with k = candidateK = n: the lists that hybrid fusion merges.
func lists(t *testing.T, e *Engine, query string, n int) (dense, sparse map[string]float64, denseHi, denseLo, sparseHi, sparseLo float64) {
	t.Helper()
	get := func(mode string) (map[string]float64, float64, float64) {
		r := retrieve(t, e, fmt.Sprintf(`{"query":%q,"k":%d,"candidateK":%d,"mode":%q}`, query, n, n, mode))
		m := map[string]float64{}
		for _, h := range r.Hits {
			m[h.ID] = h.Score
		}
		if len(r.Hits) < 2 || r.NextCursor != "" {
			t.Fatalf("%s recall of %q: %d hits, cursor %q: want 2 to %d on one page", mode, query, len(r.Hits), r.NextCursor, n)
		}
		return m, r.Hits[0].Score, r.Hits[len(r.Hits)-1].Score
	}
	dense, denseHi, denseLo = get(ModeDense)
	sparse, sparseHi, sparseLo = get(ModeSparse)
	return
}

func TestFusion_16_3(t *testing.T) {
	e := NewDefault()
	const query, n = "parse JSON documents into structs", 40
	dense, sparse, dHi, dLo, sHi, sLo := lists(t, e, query, n)

	cases := []struct {
		fusion string
		want   func(d, s float64, inD, inS bool) float64
	}{
		// Convex: each list normalised from its theoretical floor (cosine −1, BM25 0) to
		// its best score, α = 0.3 for the dense list and 0.7 for the sparse one.
		{`{"method":"convex","alpha":0.3}`, func(d, s float64, inD, inS bool) float64 {
			var f float64
			if inD {
				f += 0.3 * (d - -1) / (dHi - -1)
			}
			if inS {
				f += 0.7 * s / sHi
			}
			return f
		}},
		// Weighted: min-max over each list's returned set, then the weights.
		{`{"method":"weighted","weights":{"dense":2,"sparse":1}}`, func(d, s float64, inD, inS bool) float64 {
			var f float64
			if inD {
				f += 2 * (d - dLo) / (dHi - dLo)
			}
			if inS {
				f += (s - sLo) / (sHi - sLo)
			}
			return f
		}},
	}
	for _, c := range cases {
		r := retrieve(t, e, fmt.Sprintf(`{"query":%q,"k":10,"candidateK":%d,"mode":"hybrid","fusion":%s}`, query, n, c.fusion))
		if len(r.Hits) != 10 {
			t.Fatalf("%s: %d hits", c.fusion, len(r.Hits))
		}
		method := c.fusion[len(`{"method":"`):strings.Index(c.fusion, `",`)]
		for i, h := range r.Hits {
			d, inD := dense[h.ID]
			s, inS := sparse[h.ID]
			if want := c.want(d, s, inD, inS); math.Abs(h.Score-want) > 1e-9 || math.Abs(h.Scores[method]-want) > 1e-9 {
				t.Errorf("%s: hit %d (%s) scored %v (scores %v), want %v", c.fusion, i, h.ID, h.Score, h.Scores, want)
			}
			if i > 0 && h.Score > r.Hits[i-1].Score {
				t.Errorf("%s: hits not in descending score order at %d", c.fusion, i)
			}
		}
	}

	// α = 1 ranks by the dense list alone, α = 0 by the sparse list alone.
	for alpha, mode := range map[string]string{"1": ModeDense, "0": ModeSparse} {
		fused := retrieve(t, e, fmt.Sprintf(`{"query":%q,"k":5,"candidateK":%d,"mode":"hybrid","fusion":{"method":"convex","alpha":%s}}`, query, n, alpha))
		alone := retrieve(t, e, fmt.Sprintf(`{"query":%q,"k":5,"candidateK":%d,"mode":%q}`, query, n, mode))
		if got, want := ids(fused.Hits), ids(alone.Hits); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("convex with alpha %s ranks %v; %s alone ranks %v", alpha, got, mode, want)
		}
	}

	// Convex keeps what min-max loses: the worst hit of a list is not normalised to 0.
	r := retrieve(t, e, fmt.Sprintf(`{"query":%q,"k":%d,"candidateK":%d,"mode":"hybrid","fusion":{"method":"convex","alpha":1}}`, query, n, n))
	if last := r.Hits[len(r.Hits)-1]; last.Score <= 0 {
		t.Errorf("convex, alpha 1: the dense list's worst hit normalised to %v, want (cosine + 1) / (best + 1) > 0", last.Score)
	}

	// A cursor belongs to its fusion: one from rrf does not continue a convex listing.
	first := retrieve(t, e, fmt.Sprintf(`{"query":%q,"k":2,"mode":"hybrid"}`, query))
	_, err := e.Retrieve(context.Background(), decodeRetrieve(t, fmt.Sprintf(
		`{"query":%q,"k":2,"mode":"hybrid","fusion":{"method":"convex"},"cursor":%q}`, query, first.NextCursor)), nil)
	asFieldError(t, err, "cursor")

	// What does not apply to a fusion method is ignored, and usage.notes says so.
	r = retrieve(t, e, fmt.Sprintf(`{"query":%q,"k":2,"mode":"hybrid","fusion":{"method":"convex","rrfK":10,"weights":{"dense":3}}}`, query))
	if notes := strings.Join(r.Usage.Notes, "; "); !strings.Contains(notes, "rrfK ignored") || !strings.Contains(notes, "weights ignored") {
		t.Errorf("notes %q", notes)
	}
	_, err = e.Retrieve(context.Background(), decodeRetrieve(t, `{"query":"x","k":2,"fusion":{"method":"convex","alpha":1.5}}`), nil)
	asFieldError(t, err, "fusion.alpha")
}

// TestScoreFloor_6_1: the advertised scoreFloor is a floor of every hit's score, in every
// mode, fusion and stage, whatever the query, long ones included (the rerank stage's MaxSim
// is a mean over the query's tokens, not a sum that grows with them).
func TestScoreFloor_6_1(t *testing.T) {
	e := NewDefault()
	if f := e.Capabilities().Retrieve.ScoreFloor; f == nil || *f != ScoreFloor {
		t.Fatalf("scoreFloor advertised as %v, want %v", f, ScoreFloor)
	}
	queries := []string{"json", "zzz qqq unrelated words", strings.Repeat("parse encode decode compress archive certificate ", 8)}
	for _, q := range queries {
		for _, mode := range []string{ModeDense, ModeSparse, ModeHybrid} {
			for _, stages := range []string{``, `,"rerank":{}`, `,"mmr":{"lambda":0}`, `,"rerank":{},"mmr":{"lambda":0.2}`,
				`,"fusion":{"method":"convex"}`, `,"fusion":{"method":"weighted"},"rerank":{}`} {
				r := retrieve(t, e, fmt.Sprintf(`{"query":%q,"k":20,"mode":%q%s}`, q, mode, stages))
				for _, h := range r.Hits {
					if h.Score < ScoreFloor {
						t.Errorf("%q %s%s: %s scored %v, under the floor %v", q, mode, stages, h.ID, h.Score, ScoreFloor)
					}
					for stage, v := range h.Scores {
						if v < ScoreFloor || (stage == "rerank" && v > 1) {
							t.Errorf("%q %s%s: %s's %s score %v out of bounds", q, mode, stages, h.ID, stage, v)
						}
					}
				}
			}
		}
	}
	var p RerankParams
	p.Query = Text(queries[2])
	for _, text := range []string{"parse encode decode", "certificate archive", "", "unrelated bananas"} {
		p.Passages = append(p.Passages, Text(text))
	}
	r, err := e.Rerank(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range r.Scores {
		if s < -1 || s > 1 {
			t.Errorf("rerank of a long query: passage %d scored %v, outside [-1, 1]", i, s)
		}
	}
}
