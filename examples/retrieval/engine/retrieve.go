package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fusion methods of hybrid retrieval (§16.3).
const (
	FusionRRF      = "rrf"      // reciprocal rank fusion, the default
	FusionWeighted = "weighted" // scores min-max normalised per list, weighted
	FusionConvex   = "convex"   // scores normalised from each list's theoretical floor, α-weighted
)

// The theoretical floors of the two recall scores (§6.1, §16.3): cosine of unit vectors, and
// BM25 with idf = ln(1 + (N − df + 0.5)/(df + 0.5)) ≥ 0.
const (
	denseFloor  = -1.0
	sparseFloor = 0.0
)

// ScoreFloor is the least score any hit can carry, in every mode and after every stage
// (§6.1): cosine, MMR (λ·relevance − (1−λ)·redundancy, relevance in [0, 1] and
// redundancy a cosine) and the rerank stage's mean MaxSim are ≥ −1; BM25 and every fused
// score are ≥ 0.
const ScoreFloor = -1.0

// Retrieval modes.
const (
	ModeDense  = "dense"
	ModeSparse = "sparse"
	ModeHybrid = "hybrid"
)

// Defaults for what a retrieve leaves out.
const (
	DefaultCandidateK = 100 // at least k, and at least rerank.topN
	DefaultTopN       = 30  // at least k, at most candidateK
	DefaultRRFK       = 60
	DefaultLambda     = 0.5
	DefaultAlpha      = 0.5 // convex fusion's weight of the dense list (§16.3)
)

// plan is a validated retrieve request with every default and clamp applied.
type plan struct {
	query          string
	mode           string
	k, candidateK  int
	rerank         bool
	topN           int
	fusion         string
	rrfK           float64
	alpha          float64
	wDense         float64
	wSparse        float64
	filter         *Filter
	minScore       *float64
	mmr            bool
	lambda         float64
	tokenBudget    int
	includeText    bool
	includeVectors bool
	cursor         string
	notes          []string
}

// option handles a requested option value this engine does not implement: under strict (the
// default) it is an *OptionError, otherwise it is ignored with a note in usage.notes.
func (pl *plan) option(strict bool, option, value, fallback string) error {
	if strict {
		return &OptionError{Option: option, Value: value}
	}
	pl.notes = append(pl.notes, fmt.Sprintf("%s %q is not supported; %s", option, value, fallback))
	return nil
}

// newPlan validates p: structural problems first (*FieldError), then the options
// (*OptionError), then it settles the funnel sizes.
func (e *Engine) newPlan(p *RetrieveParams) (*plan, error) {
	strict := p.Strict == nil || *p.Strict
	pl := &plan{fusion: FusionRRF, rrfK: DefaultRRFK, alpha: DefaultAlpha, wDense: 1, wSparse: 1, lambda: DefaultLambda,
		includeText: p.IncludeText == nil || *p.IncludeText, includeVectors: p.IncludeVectors,
		filter: p.Filter, minScore: p.MinScore, cursor: p.Cursor}

	// Structure, and the funnel candidateK ≥ rerank.topN ≥ k (§3.3), on the values asked for.
	if p.K < 1 {
		return nil, fieldErr("k", "must be an integer ≥ 1, got %d", p.K)
	}
	if p.CandidateK != nil && *p.CandidateK < 1 {
		return nil, fieldErr("candidateK", "must be an integer ≥ 1, got %d", *p.CandidateK)
	}
	var topN *int
	if p.Rerank != nil {
		topN = p.Rerank.TopN
		if topN != nil && *topN < 1 {
			return nil, fieldErr("rerank.topN", "must be an integer ≥ 1, got %d", *topN)
		}
	}
	if p.CandidateK != nil {
		floor, name := p.K, "k"
		if topN != nil && *topN > floor {
			floor, name = *topN, "rerank.topN"
		}
		if *p.CandidateK < floor {
			return nil, fieldErr("candidateK", "must be ≥ %s (%d), got %d: the funnel is candidateK ≥ rerank.topN ≥ k",
				name, floor, *p.CandidateK)
		}
	}
	if topN != nil && *topN < p.K {
		return nil, fieldErr("rerank.topN", "must be ≥ k (%d), got %d: the funnel is candidateK ≥ rerank.topN ≥ k",
			p.K, *topN)
	}
	if f := p.Fusion; f != nil {
		if f.RRFK != nil {
			if *f.RRFK < 0 {
				return nil, fieldErr("fusion.rrfK", "must not be negative, got %d", *f.RRFK)
			}
			pl.rrfK = float64(*f.RRFK)
		}
		for _, name := range []string{ModeDense, ModeSparse} {
			w, ok := f.Weights[name]
			if !ok {
				continue
			}
			if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
				return nil, fieldErr("fusion.weights."+name, "must be a finite number ≥ 0")
			}
			if name == ModeDense {
				pl.wDense = w
			} else {
				pl.wSparse = w
			}
		}
		if f.Alpha != nil && !(*f.Alpha >= 0 && *f.Alpha <= 1) {
			return nil, fieldErr("fusion.alpha", "must be between 0 and 1")
		}
	}
	if p.MMR != nil {
		pl.mmr = true
		if l := p.MMR.Lambda; l != nil {
			if !(*l >= 0 && *l <= 1) {
				return nil, fieldErr("mmr.lambda", "must be between 0 and 1")
			}
			pl.lambda = *l
		}
	}
	if p.MinScore != nil && (math.IsNaN(*p.MinScore) || math.IsInf(*p.MinScore, 0)) {
		return nil, fieldErr("minScore", "must be a finite number")
	}
	if p.Level != nil && *p.Level < 0 {
		return nil, fieldErr("level", "must not be negative, got %d", *p.Level)
	}
	if p.TokenBudget != nil {
		if *p.TokenBudget < 1 {
			return nil, fieldErr("tokenBudget", "must be an integer ≥ 1, got %d", *p.TokenBudget)
		}
		pl.tokenBudget = *p.TokenBudget
	}
	if p.Filter != nil {
		if err := e.checkFilter(p.Filter, "filter"); err != nil {
			return nil, err
		}
	}

	// Options.
	var err error
	if pl.query, err = inputText(p.Query, strict, &pl.notes); err != nil {
		return nil, err
	}
	switch pl.mode = p.Mode; pl.mode {
	case "":
		pl.mode = ModeHybrid
	case ModeDense, ModeSparse, ModeHybrid:
	default:
		if err := pl.option(strict, "mode", p.Mode, "using hybrid"); err != nil {
			return nil, err
		}
		pl.mode = ModeHybrid
	}
	if p.Modality != "" && p.Modality != "text" {
		if err := pl.option(strict, "modality", p.Modality, "treating the query as text"); err != nil {
			return nil, err
		}
	}
	if f := p.Fusion; f != nil {
		switch f.Method {
		case "", FusionRRF:
		case FusionWeighted, FusionConvex:
			pl.fusion = f.Method
		default:
			if err := pl.option(strict, "fusion.method", f.Method, "using rrf"); err != nil {
				return nil, err
			}
		}
		if f.Alpha != nil {
			if pl.fusion == FusionConvex {
				pl.alpha = *f.Alpha
			} else {
				pl.notes = append(pl.notes, "fusion.alpha ignored: it applies to convex fusion only")
			}
		}
		if f.RRFK != nil && pl.fusion != FusionRRF {
			pl.notes = append(pl.notes, "fusion.rrfK ignored: it applies to rrf fusion only")
		}
		if f.Weights != nil && pl.fusion == FusionConvex {
			pl.notes = append(pl.notes, "fusion.weights ignored: convex fusion weighs the lists by alpha")
		}
	}
	if r := p.Rerank; r != nil {
		pl.rerank = true
		if r.Method != "" && r.Method != "colbert" {
			if err := pl.option(strict, "rerank.method", r.Method, "using colbert"); err != nil {
				return nil, err
			}
		}
		if r.Model != "" {
			if err := pl.option(strict, "rerank.model", r.Model, "using the built-in colbert scorer"); err != nil {
				return nil, err
			}
		}
	}
	if p.Rewrite != "" {
		if err := pl.option(strict, "rewrite", p.Rewrite, "the query is used as given"); err != nil {
			return nil, err
		}
	}
	if p.Recency != nil {
		if err := pl.option(strict, "recency", p.Recency.Field, "no recency boost applied"); err != nil {
			return nil, err
		}
	}
	if p.Unit != "" && p.Unit != "document" {
		if err := pl.option(strict, "unit", p.Unit, "returning documents"); err != nil {
			return nil, err
		}
	}
	if p.Level != nil && *p.Level > 0 {
		if err := pl.option(strict, "level", strconv.Itoa(*p.Level), "the corpus is flat; using level 0"); err != nil {
			return nil, err
		}
	}

	// Sizes: defaults from the values asked for, then clamps to the limits. Clamping keeps
	// the funnel's order because every limit is at least the one below it.
	ck := max(DefaultCandidateK, p.K)
	if topN != nil {
		ck = max(ck, *topN)
	}
	if p.CandidateK != nil {
		ck = *p.CandidateK
	}
	pl.k = min(p.K, e.cfg.MaxK)
	if pl.k < p.K {
		pl.notes = append(pl.notes, fmt.Sprintf("k clamped to maxK %d", pl.k))
	}
	pl.candidateK = min(ck, e.cfg.MaxCandidateK)
	if pl.rerank {
		t := max(p.K, min(ck, DefaultTopN))
		if topN != nil {
			t = *topN
		}
		pl.topN = min(t, e.cfg.MaxRerankCandidates, pl.candidateK)
		pl.k = min(pl.k, pl.topN)
	}
	return pl, nil
}

// inputText returns the text of a query or passage. A block that is not text is an
// *OptionError (modality) under strict, and is skipped with a note otherwise.
func inputText(in Input, strict bool, notes *[]string) (string, error) {
	if len(in.Blocks) == 0 {
		return in.Text, nil
	}
	var parts []string
	for _, b := range in.Blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
			continue
		}
		if strict {
			return "", &OptionError{Option: "modality", Value: b.Type}
		}
		*notes = append(*notes, fmt.Sprintf("a %q content block was skipped: only text is supported", b.Type))
	}
	return strings.Join(parts, "\n"), nil
}

// hash fingerprints everything that shapes the ranked list, so a cursor can only continue
// the request that issued it.
func (pl *plan) hash() uint64 {
	b, _ := json.Marshal(struct {
		Q            string
		Mode         string
		K, CK, TopN  int
		Rerank       bool
		Fusion       string
		RRFK, WD, WS float64
		Alpha        float64
		Filter       *Filter
		MinScore     *float64
		MMR          bool
		Lambda       float64
		Budget       int
	}{pl.query, pl.mode, pl.k, pl.candidateK, pl.topN, pl.rerank, pl.fusion, pl.rrfK, pl.wDense, pl.wSparse,
		pl.alpha, pl.filter, pl.minScore, pl.mmr, pl.lambda, pl.tokenBudget})
	return hash64('c', string(b))
}

// A cursor is "offset.indexVersion.planHash", base64url-encoded: opaque to clients.
func encodeCursor(offset int, version string, h uint64) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d.%s.%x", offset, version, h))
}

func decodeCursor(s string) (offset int, version string, h uint64, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, "", 0, false
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 {
		return 0, "", 0, false
	}
	offset, err1 := strconv.Atoi(parts[0])
	h, err2 := strconv.ParseUint(parts[2], 16, 64)
	if err1 != nil || err2 != nil || offset < 0 || offset > maxInteger {
		return 0, "", 0, false
	}
	return offset, parts[1], h, true
}

// cand is a document on its way through the pipeline, with its score at each stage.
type cand struct {
	d                      *entry
	score                  float64 // the score the list is currently ordered by
	dense, sparse, fusedAt float64 // fusedAt: the score fusion gave
	rerank, mmr            float64
	inDense, inSparse      bool
	fused, reranked, mmred bool
}

// byScore orders candidates by descending score, ties by ascending id.
func byScore(a, b cand) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	}
	return strings.Compare(a.d.id, b.d.id)
}

// progress reports completed stages as fractions of the whole, strictly increasing, ending at 1.
type progress struct {
	fn          func(float64)
	done, total int
}

func (p *progress) step() {
	p.done++
	if p.fn != nil {
		p.fn(float64(p.done) / float64(p.total))
	}
}

// Retrieve serves retrieve (§7.7): recall (dense, sparse or both fused by rrf, weighted or
// convex fusion, §16.3), optional
// ColBERT-style rerank of the top rerank.topN, optional minScore and MMR, then a page of at
// most k hits, packed under tokenBudget when one is given.
//
// Limits are clamped: k to MaxK, candidateK to MaxCandidateK, rerank.topN to
// MaxRerankCandidates. Errors: *FieldError, *OptionError, ErrIndexVersionUnavailable,
// ErrCursorExpired, or ctx.Err() when ctx ends first.
//
// progress, when not nil, is called after each stage with the fraction of stages done,
// strictly increasing and ending at 1. It runs on the caller's goroutine while the index is
// read-locked, so it must not block for long nor call back into the engine's write methods.
func (e *Engine) Retrieve(ctx context.Context, p RetrieveParams, progressFn func(fraction float64)) (RetrieveResult, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return RetrieveResult{}, err
	}
	pl, err := e.newPlan(&p)
	if err != nil {
		return RetrieveResult{}, err
	}
	prog := &progress{fn: progressFn, total: 1} // pack
	if pl.mode == ModeHybrid {
		prog.total += 3 // dense, sparse, fuse
	} else {
		prog.total++
	}
	if pl.rerank {
		prog.total++
	}
	if pl.mmr {
		prog.total++
	}

	e.mu.RLock()
	defer e.mu.RUnlock()

	version := e.versionLocked()
	if p.IndexVersion != "" && p.IndexVersion != version {
		return RetrieveResult{}, fmt.Errorf("%w: asked for %q, serving %q", ErrIndexVersionUnavailable, p.IndexVersion, version)
	}
	planHash := pl.hash()
	offset := 0
	if pl.cursor != "" {
		off, v, h, ok := decodeCursor(pl.cursor)
		switch {
		case !ok:
			return RetrieveResult{}, fieldErr("cursor", "is not a cursor this server issued")
		case h != planHash:
			return RetrieveResult{}, fieldErr("cursor", "belongs to a different request; repeat the request that returned it")
		case v != version:
			return RetrieveResult{}, ErrCursorExpired
		}
		offset = off
	}

	qt := tokenize(pl.query)
	var dense, sparse []cand
	if pl.mode != ModeSparse {
		if dense, err = e.denseRecall(ctx, embed(qt), pl.filter, pl.candidateK); err != nil {
			return RetrieveResult{}, err
		}
		prog.step()
	}
	if pl.mode != ModeDense {
		if sparse, err = e.sparseRecall(ctx, qt, pl.filter, pl.candidateK); err != nil {
			return RetrieveResult{}, err
		}
		prog.step()
	}
	var list []cand
	switch pl.mode {
	case ModeDense:
		list = dense
	case ModeSparse:
		list = sparse
	default:
		list = fuse(dense, sparse, pl)
		prog.step()
	}
	usage := &Usage{Candidates: len(list)}

	if pl.rerank {
		list = list[:min(len(list), pl.topN)]
		q := queryVectors(qt)
		for i := range list {
			if i%32 == 0 {
				if err := ctx.Err(); err != nil {
					return RetrieveResult{}, err
				}
			}
			c := &list[i]
			c.rerank = maxSim(q, c.d.toks)
			c.score, c.reranked = c.rerank, true
		}
		slices.SortFunc(list, byScore)
		usage.Reranked = len(list)
		prog.step()
	}
	if pl.minScore != nil {
		if cut := slices.IndexFunc(list, func(c cand) bool { return c.score < *pl.minScore }); cut >= 0 {
			list = list[:cut]
		}
	}
	total := len(list)
	if pl.mmr {
		if list, err = diversify(ctx, list, offset+pl.k, pl.lambda); err != nil {
			return RetrieveResult{}, err
		}
		prog.step()
	}

	// The page: at most k hits from offset, and no more words than tokenBudget.
	page := list[min(offset, len(list)):min(offset+pl.k, len(list))]
	if pl.tokenBudget > 0 {
		n := 0
		for i, c := range page {
			if usage.Tokens+c.d.words > pl.tokenBudget {
				page = page[:i]
				break
			}
			usage.Tokens += c.d.words
			n++
		}
		page = page[:n]
	}
	res := RetrieveResult{Hits: make([]Hit, len(page)), IndexVersion: version, Usage: usage}
	for i, c := range page {
		res.Hits[i] = pl.hit(c)
	}
	if len(page) > 0 && offset+len(page) < total {
		res.NextCursor = encodeCursor(offset+len(page), version, planHash)
	}
	prog.step()
	usage.Notes = pl.notes
	usage.LatencyMs = math.Round(float64(time.Since(start).Microseconds())) / 1000
	return res, nil
}

// hit builds the wire form of a candidate.
func (pl *plan) hit(c cand) Hit {
	h := Hit{ID: c.d.id, Score: finite(c.score), Unit: "document", Meta: cloneMeta(c.d.meta),
		Scores: map[string]float64{}}
	if pl.includeText {
		h.Text = c.d.text
	}
	if pl.includeVectors {
		h.Vector = make([]float64, len(c.d.vec))
		for i, x := range c.d.vec {
			h.Vector[i] = finite(float64(x))
		}
	}
	for _, s := range []struct {
		name string
		ok   bool
		v    float64
	}{{"dense", c.inDense, c.dense}, {"sparse", c.inSparse, c.sparse}, {pl.fusion, c.fused, c.fusedAt},
		{"rerank", c.reranked, c.rerank}, {"mmr", c.mmred, c.mmr}} {
		if s.ok {
			h.Scores[s.name] = finite(s.v)
		}
	}
	return h
}

// denseRecall ranks the documents by the cosine of their embedding with the query's, keeping
// those above 0 that pass the filter, best first, at most limit of them.
func (e *Engine) denseRecall(ctx context.Context, q []float32, f *Filter, limit int) ([]cand, error) {
	// A query has few tokens, so its embedding has few non-zero components: the dot product
	// over those alone is the same cosine at a fraction of the cost.
	var qs sparseVec
	for i, x := range q {
		if x != 0 {
			qs.idx = append(qs.idx, uint8(i))
			qs.val = append(qs.val, x)
		}
	}
	if len(qs.idx) == 0 {
		return nil, nil // no query tokens
	}
	var out []cand
	for i, d := range e.slots {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if d == nil || (f != nil && !match(f, d.meta)) {
			continue
		}
		if s := finite(dotSparse(d.vec, qs)); s > 0 {
			out = append(out, cand{d: d, score: s, dense: s, inDense: true})
		}
	}
	slices.SortFunc(out, byScore)
	return out[:min(len(out), limit)], nil
}

// sparseRecall ranks the documents holding at least one query term by BM25, keeping those
// that pass the filter, best first, at most limit of them. Term statistics cover the whole
// index, whatever the filter.
func (e *Engine) sparseRecall(ctx context.Context, qt []string, f *Filter, limit int) ([]cand, error) {
	n := len(e.byID)
	if n == 0 || e.totalLen == 0 || len(qt) == 0 {
		return nil, nil
	}
	avgLen := float64(e.totalLen) / float64(n)
	terms := slices.Compact(slices.Sorted(slices.Values(qt)))
	acc := make([]float64, len(e.slots))
	var touched []int32
	for _, t := range terms {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ps := e.postings[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		for _, p := range ps {
			d := e.slots[p.slot]
			tf := float64(p.tf)
			norm := bm25K1 * (1 - bm25B + bm25B*float64(d.len)/avgLen)
			if acc[p.slot] == 0 {
				touched = append(touched, p.slot)
			}
			acc[p.slot] += idf * tf * (bm25K1 + 1) / (tf + norm)
		}
	}
	out := make([]cand, 0, len(touched))
	for _, slot := range touched {
		d := e.slots[slot]
		if f != nil && !match(f, d.meta) {
			continue
		}
		if s := finite(acc[slot]); s > 0 {
			out = append(out, cand{d: d, score: s, sparse: s, inSparse: true})
		}
	}
	slices.SortFunc(out, byScore)
	return out[:min(len(out), limit)], nil
}

// fuse merges the dense and sparse rankings by the plan's fusion method (§16.3), keeps the
// best candidateK, and orders them by the fused score, ties by id:
//
//   - rrf: the sum over the lists holding a document of weight / (rrfK + rank), ranks
//     counted from 1;
//   - weighted: the sum of weight × (score − min) / (max − min), min and max over that list;
//   - convex: α × norm(dense) + (1 − α) × norm(sparse), where norm(s) = (s − floor) /
//     (max − floor) with each list's theoretical floor (cosine −1, BM25 0) instead of the
//     smallest score that came back, so that a list of good matches and a list of poor ones
//     no longer normalise alike.
//
// A list that does not hold a document adds nothing to its score.
func fuse(dense, sparse []cand, pl *plan) []cand {
	at := map[*entry]int{}
	var out []cand
	add := func(list []cand, w float64, floor float64, score func(cand) float64) {
		lo, hi := floor, 0.0
		for i, c := range list {
			if s := score(c); i == 0 || s > hi {
				hi = s
			}
			if pl.fusion == FusionWeighted {
				if s := score(c); i == 0 || s < lo {
					lo = s
				}
			}
		}
		for r, c := range list {
			i, ok := at[c.d]
			if !ok {
				i = len(out)
				at[c.d] = i
				out = append(out, cand{d: c.d, fused: true})
			}
			o := &out[i]
			if c.inDense {
				o.dense, o.inDense = c.dense, true
			}
			if c.inSparse {
				o.sparse, o.inSparse = c.sparse, true
			}
			switch pl.fusion {
			case FusionRRF:
				o.fusedAt += w / (pl.rrfK + float64(r+1))
			default:
				if hi > lo {
					o.fusedAt += w * (score(c) - lo) / (hi - lo)
				} else if pl.fusion == FusionWeighted {
					o.fusedAt += w // every score of the list is the same: all equally its best
				}
			}
			o.score = finite(o.fusedAt)
		}
	}
	wDense, wSparse := pl.wDense, pl.wSparse
	if pl.fusion == FusionConvex {
		wDense, wSparse = pl.alpha, 1-pl.alpha
	}
	add(dense, wDense, denseFloor, func(c cand) float64 { return c.dense })
	add(sparse, wSparse, sparseFloor, func(c cand) float64 { return c.sparse })
	slices.SortFunc(out, byScore)
	return out[:min(len(out), pl.candidateK)]
}

// diversify reorders list by maximal marginal relevance and returns its first need entries.
// Relevance is the current score min-max scaled to [0, 1]; redundancy is the largest cosine
// with an already chosen document (counted from 0). Each pick's MMR value becomes its score;
// those values never increase from one pick to the next, because a document's redundancy can
// only grow, so the result stays in descending score order.
func diversify(ctx context.Context, list []cand, need int, lambda float64) ([]cand, error) {
	need = min(need, len(list))
	if need == 0 {
		return nil, nil
	}
	lo, hi := list[0].score, list[0].score
	for _, c := range list {
		lo, hi = min(lo, c.score), max(hi, c.score)
	}
	rel := make([]float64, len(list))
	for i, c := range list {
		rel[i] = 1
		if hi > lo {
			rel[i] = (c.score - lo) / (hi - lo)
		}
	}
	redundancy := make([]float64, len(list))
	chosen := make([]bool, len(list))
	out := make([]cand, 0, need)
	for len(out) < need {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		best, bestV := -1, 0.0
		for i := range list {
			if chosen[i] {
				continue
			}
			v := lambda*rel[i] - (1-lambda)*redundancy[i]
			if best < 0 || v > bestV || (v == bestV && list[i].d.id < list[best].d.id) {
				best, bestV = i, v
			}
		}
		chosen[best] = true
		c := list[best]
		c.mmr, c.mmred, c.score = finite(bestV), true, finite(bestV)
		out = append(out, c)
		for i := range list {
			if !chosen[i] {
				redundancy[i] = max(redundancy[i], finite(dot(list[i].d.vec, c.d.vec)))
			}
		}
	}
	return out, nil
}
