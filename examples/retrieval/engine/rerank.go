package engine

import (
	"context"
	"slices"
)

// MaxQueryTokens bounds the query tokens late interaction looks at (ColBERT also cuts its
// queries, at 32): each costs a dense vector and a pass over every passage token.
const MaxQueryTokens = 64

// queryVectors returns one dense, normalised vector per query token (every occurrence counts,
// as in ColBERT), for the first MaxQueryTokens tokens.
func queryVectors(toks []string) [][]float32 {
	toks = toks[:min(len(toks), MaxQueryTokens)]
	seen := map[string][]float32{}
	out := make([][]float32, len(toks))
	for i, t := range toks {
		v, ok := seen[t]
		if !ok {
			v = make([]float32, Dim)
			addToken(v, t)
			normalize(v)
			seen[t] = v
		}
		out[i] = v
	}
	return out
}

// passageVectors returns one sparse vector per distinct token of a passage.
func passageVectors(text string) []sparseVec {
	toks := slices.Compact(slices.Sorted(slices.Values(tokenize(text))))
	out := make([]sparseVec, len(toks))
	for i, t := range toks {
		out[i] = tokenVector(t)
	}
	return out
}

// maxSim is the late-interaction score: the mean over query tokens of the best cosine with
// any passage token, so that it lies in [−1, 1] whatever the query's length (ScoreFloor). A
// passage without tokens, or a query without tokens, scores 0.
func maxSim(q [][]float32, doc []sparseVec) float64 {
	if len(q) == 0 {
		return 0
	}
	var total float64
	for _, qv := range q {
		best := 0.0
		for j, dv := range doc {
			if s := dotSparse(qv, dv); j == 0 || s > best {
				best = s
			}
		}
		total += best
	}
	return finite(total / float64(len(q)))
}

// Rerank serves rerank (§7.6) with the "colbert" method: Scores[i] is the MaxSim score of
// Passages[i] (in [−1, 1]), and Order lists the passage indices best first (ties by index),
// cut to TopN when given; Results pairs each index of Order with its score. More than
// MaxRerankCandidates passages is a *FieldError; another method, any named model or a block
// that is not text is an *OptionError.
func (e *Engine) Rerank(ctx context.Context, p RerankParams) (RerankResult, error) {
	if err := ctx.Err(); err != nil {
		return RerankResult{}, err
	}
	if p.TopN != nil && *p.TopN < 1 {
		return RerankResult{}, fieldErr("topN", "must be an integer ≥ 1, got %d", *p.TopN)
	}
	if len(p.Passages) > e.cfg.MaxRerankCandidates {
		return RerankResult{}, fieldErr("passages", "at most %d passages per call, got %d",
			e.cfg.MaxRerankCandidates, len(p.Passages))
	}
	if p.Method != "" && p.Method != "colbert" {
		return RerankResult{}, &OptionError{Option: "method", Value: p.Method}
	}
	if p.Model != "" {
		return RerankResult{}, &OptionError{Option: "model", Value: p.Model}
	}
	query, err := inputText(p.Query, true, nil)
	if err != nil {
		return RerankResult{}, err
	}
	q := queryVectors(tokenize(query))
	res := RerankResult{Scores: make([]float64, len(p.Passages)), Order: make([]int, len(p.Passages))}
	for i, in := range p.Passages {
		if i%16 == 0 {
			if err := ctx.Err(); err != nil {
				return RerankResult{}, err
			}
		}
		text, err := inputText(in, true, nil)
		if err != nil {
			return RerankResult{}, err
		}
		res.Scores[i] = maxSim(q, passageVectors(text))
		res.Order[i] = i
	}
	slices.SortStableFunc(res.Order, func(a, b int) int {
		switch sa, sb := res.Scores[a], res.Scores[b]; {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return a - b
	})
	if p.TopN != nil {
		res.Order = res.Order[:min(*p.TopN, len(res.Order))]
	}
	res.Results = make([]RerankScore, len(res.Order))
	for i, at := range res.Order {
		res.Results[i] = RerankScore{Index: at, Score: res.Scores[at]}
	}
	return res, nil
}
