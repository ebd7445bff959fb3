package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// decodeRetrieve decodes retrieve params the way the protocol layer will.
func decodeRetrieve(t testing.TB, js string) RetrieveParams {
	t.Helper()
	var p RetrieveParams
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatalf("decoding %s: %v", js, err)
	}
	return p
}

func retrieve(t testing.TB, e *Engine, js string) RetrieveResult {
	t.Helper()
	r, err := e.Retrieve(context.Background(), decodeRetrieve(t, js), nil)
	if err != nil {
		t.Fatalf("retrieve %s: %v", js, err)
	}
	return r
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// checkHits asserts the invariants every retrieve result must keep.
func checkHits(t *testing.T, r RetrieveResult, k int) {
	t.Helper()
	if r.Hits == nil {
		t.Fatal("hits is nil; it must encode as []")
	}
	if len(r.Hits) > k {
		t.Fatalf("%d hits for k=%d", len(r.Hits), k)
	}
	seen := map[string]bool{}
	for i, h := range r.Hits {
		if seen[h.ID] {
			t.Fatalf("duplicate id %q in %v", h.ID, ids(r.Hits))
		}
		seen[h.ID] = true
		if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
			t.Fatalf("hit %q has score %v", h.ID, h.Score)
		}
		if i > 0 {
			prev := r.Hits[i-1]
			if prev.Score < h.Score || (prev.Score == h.Score && prev.ID > h.ID) {
				t.Fatalf("hits out of order at %d: %q %v before %q %v", i, prev.ID, prev.Score, h.ID, h.Score)
			}
		}
	}
	if _, err := json.Marshal(r); err != nil { // fails on NaN and ±Inf anywhere
		t.Fatalf("result does not encode: %v", err)
	}
}

func TestRankingIsDescendingAndUnique(t *testing.T) {
	e := NewDefault()
	queries := []string{"parse JSON", "http server", "compress data with gzip", "cryptographic hash functions",
		"a", "Ünïcödé 漢字 テキスト", "x x x x x x", "encoding encoding/json json.Marshal"}
	variants := []string{`"mode":"dense"`, `"mode":"sparse"`, `"mode":"hybrid"`, `"rerank":{}`,
		`"rerank":{"topN":12},"mmr":{"lambda":0.3}`, `"mmr":{}`, `"fusion":{"rrfK":0,"weights":{"dense":2}}`,
		`"minScore":0.02`, `"tokenBudget":40`}
	for _, q := range queries {
		for _, v := range variants {
			qj, _ := json.Marshal(q)
			r := retrieve(t, e, fmt.Sprintf(`{"query":%s,"k":8,%s}`, qj, v))
			checkHits(t, r, 8)
		}
	}
}

func TestParseJSONFindsEncodingJSON(t *testing.T) {
	e := NewDefault()
	for _, mode := range []string{ModeDense, ModeSparse, ModeHybrid} {
		r := retrieve(t, e, `{"query":"parse JSON","k":3,"mode":"`+mode+`"}`)
		if !slices.Contains(ids(r.Hits), "encoding/json") {
			t.Errorf("%s: encoding/json is not in the top 3 for \"parse JSON\": %v", mode, ids(r.Hits))
		}
	}
	r := retrieve(t, e, `{"query":"parse JSON","k":1}`)
	if got := ids(r.Hits); !reflect.DeepEqual(got, []string{"encoding/json"}) {
		t.Errorf("hybrid top hit = %v, want encoding/json", got)
	}
	if h := r.Hits[0]; h.Text == "" || h.Meta["top"] != "encoding" || h.Unit != "document" {
		t.Errorf("hit lacks text, meta or unit: %+v", h)
	}
}

func TestKCeilingAndClamp(t *testing.T) {
	e := NewDefault()
	r := retrieve(t, e, `{"query":"package","k":3,"mode":"dense"}`) // "package" is a stop word
	checkHits(t, r, 3)

	r = retrieve(t, e, `{"query":"implements reading and writing of data formats","k":1000000}`)
	checkHits(t, r, e.Capabilities().Retrieve.MaxK)
	if len(r.Hits) != 100 {
		t.Errorf("k=1e6 gave %d hits, want the ceiling 100", len(r.Hits))
	}
	if !slices.ContainsFunc(r.Usage.Notes, func(n string) bool { return strings.Contains(n, "clamped") }) {
		t.Errorf("usage.notes does not mention the clamp: %v", r.Usage.Notes)
	}

	small := New(Config{MaxK: 5}, DefaultCorpus())
	if got := small.Capabilities().Retrieve.MaxK; got != 5 {
		t.Fatalf("maxK advertised %d, want 5", got)
	}
	r = retrieve(t, small, `{"query":"encoding","k":50,"candidateK":60,"rerank":{"topN":55}}`)
	if len(r.Hits) != 5 {
		t.Errorf("k=50 with maxK=5 gave %d hits", len(r.Hits))
	}
	r = retrieve(t, e, `{"query":"encoding","k":9007199254740993}`) // beyond 2^53: clamped too
	checkHits(t, r, 100)
}

func asFieldError(t *testing.T, err error, field string) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FieldError", err, err)
	}
	if fe.Field != field {
		t.Fatalf("FieldError.Field = %q, want %q (%v)", fe.Field, field, fe)
	}
}

func asOptionError(t *testing.T, err error, option, value string) {
	t.Helper()
	var oe *OptionError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T) is not an *OptionError", err, err)
	}
	if oe.Option != option || oe.Value != value {
		t.Fatalf("OptionError = %q %q, want %q %q", oe.Option, oe.Value, option, value)
	}
}

func TestInvalidK(t *testing.T) {
	e := NewDefault()
	ctx := context.Background()
	// Decoding reports malformed k as a *FieldError, through json.Unmarshal.
	for _, js := range []string{`{"query":"x","k":2.5}`, `{"query":"x","k":"3"}`, `{"query":"x"}`,
		`{"query":"x","k":null}`, `{"query":"x","K":3}`, `{"query":"x","k":true}`} {
		var p RetrieveParams
		asFieldError(t, json.Unmarshal([]byte(js), &p), "k")
	}
	// Negative and zero k decode, and Retrieve refuses them.
	for _, js := range []string{`{"query":"x","k":-5}`, `{"query":"x","k":0}`, `{"query":"x","k":-1e300}`} {
		_, err := e.Retrieve(ctx, decodeRetrieve(t, js), nil)
		asFieldError(t, err, "k")
	}
	_, err := e.Retrieve(ctx, RetrieveParams{Query: Text("x"), K: -1}, nil)
	asFieldError(t, err, "k")
	// Integral values written as floats are integers.
	checkHits(t, retrieve(t, e, `{"query":"json","k":2.0}`), 2)
}

func TestFunnel(t *testing.T) {
	e := NewDefault()
	for js, field := range map[string]string{
		`{"query":"test","k":10,"candidateK":2}`:                                  "candidateK",
		`{"query":"test","k":10,"rerank":{"topN":5}}`:                             "rerank.topN",
		`{"query":"test","k":10,"candidateK":20,"rerank":{"topN":50}}`:            "candidateK",
		`{"query":"test","k":10,"candidateK":2,"rerank":{"topN":5}}`:              "candidateK",
		`{"query":"test","k":10,"candidateK":0}`:                                  "candidateK",
		`{"query":"test","k":1,"rerank":{"topN":0}}`:                              "rerank.topN",
		`{"query":"test","k":1,"rerank":{"topN":1.5}}`:                            "rerank.topN",
		`{"query":"test","k":1,"candidateK":"many"}`:                              "candidateK",
		`{"query":"test","k":1,"rerank":true}`:                                    "rerank",
		`{"query":"test","k":1,"fusion":{"rrfK":-1}}`:                             "fusion.rrfK",
		`{"query":"test","k":1,"fusion":{"weights":{"sparse":-1}}}`:               "fusion.weights.sparse",
		`{"query":"test","k":1,"mmr":{"lambda":2}}`:                               "mmr.lambda",
		`{"query":"test","k":1,"tokenBudget":0}`:                                  "tokenBudget",
		`{"query":"test","k":1,"level":-1}`:                                       "level",
		`{"query":42,"k":1}`:                                                      "query",
		`{"query":[{"text":"no type"}],"k":1}`:                                    "query[0].type",
		`{"query":"test","k":1,"filter":{"and":[]}}`:                              "filter.and",
		`{"query":"test","k":1,"filter":{"field":"lang","op":"eq","value":"en"}}`: "filter.lang",
		`{"query":"test","k":1,"filter":{"field":"top","op":"eq","value":3}}`:     "filter.top",
		`{"query":"test","k":1,"filter":{"field":"top","op":"like","value":"x"}}`: "filter.op",
		`{"query":"test","k":1,"filter":{"field":"top","op":"eq","value":"x","not":{"field":"top","op":"exists","value":true}}}`: "filter",
	} {
		var p RetrieveParams
		err := json.Unmarshal([]byte(js), &p)
		if err == nil {
			_, err = e.Retrieve(context.Background(), p, nil)
		}
		t.Run(js, func(t *testing.T) { asFieldError(t, err, field) })
	}

	r := retrieve(t, e, `{"query":"encoding data","k":10,"candidateK":50,"rerank":{"topN":20}}`)
	checkHits(t, r, 10)
	if r.Usage.Reranked != 20 || r.Usage.Candidates > 50 {
		t.Errorf("usage = %+v, want 20 reranked of at most 50 candidates", r.Usage)
	}
	// The funnel may be tight.
	checkHits(t, retrieve(t, e, `{"query":"encoding data","k":4,"candidateK":4,"rerank":{"topN":4}}`), 4)
}

func TestUnsupportedOptions(t *testing.T) {
	e := NewDefault()
	cases := []struct{ params, option, value string }{
		{`"mode":"semantic"`, "mode", "semantic"},
		{`"mode":"HYBRID"`, "mode", "HYBRID"}, // enums are case-sensitive
		{`"fusion":{"method":"borda"}`, "fusion.method", "borda"},
		{`"rerank":{"method":"cross-encoder"}`, "rerank.method", "cross-encoder"},
		{`"rerank":{"model":"bge-reranker"}`, "rerank.model", "bge-reranker"},
		{`"rewrite":"hyde"`, "rewrite", "hyde"},
		{`"modality":"image"`, "modality", "image"},
		{`"unit":"community"`, "unit", "community"},
		{`"level":2`, "level", "2"},
		{`"recency":{"field":"ts","halfLifeDays":3}`, "recency", "ts"},
		{`"filter":{"field":"top","op":"gt","value":"a"}`, "filter.op", "gt"},
	}
	for _, c := range cases {
		_, err := e.Retrieve(context.Background(), decodeRetrieve(t, `{"query":"json","k":2,`+c.params+`}`), nil)
		asOptionError(t, err, c.option, c.value)
	}
	_, err := e.Retrieve(context.Background(), RetrieveParams{K: 1,
		Query: Input{Blocks: []Content{{Type: "image", MimeType: "image/png", URI: "file:///x.png"}}}}, nil)
	asOptionError(t, err, "modality", "image")

	// strict:false degrades instead, and says so.
	for _, c := range cases[:len(cases)-1] { // a filter operator is refused whatever strict says
		r := retrieve(t, e, `{"query":"json","k":2,"strict":false,`+c.params+`}`)
		checkHits(t, r, 2)
		if len(r.Usage.Notes) == 0 {
			t.Errorf("%s with strict:false: no usage note", c.params)
		}
	}
	// Things that are accepted as given: rerank:false, rewrite:false, level 0, unit document,
	// seed, sessionId, modality text, a text block.
	r := retrieve(t, e, `{"query":[{"type":"text","text":"parse"},{"type":"text","text":"JSON"}],"k":2,
		"rerank":false,"rewrite":false,"level":0,"unit":"document","seed":7,"sessionId":"s","modality":"text",
		"fusion":{"method":"rrf","rrfK":10},"x-acme":{"anything":true},"_meta":{"progressToken":1}}`)
	if len(r.Hits) == 0 || r.Hits[0].ID != "encoding/json" {
		t.Errorf("block query: %v", ids(r.Hits))
	}
}

func TestHybridCombinesBothRankings(t *testing.T) {
	e := NewDefault()
	// With a narrow candidate list the two recalls disagree; the fusion keeps documents
	// from each that the other did not find.
	r := retrieve(t, e, `{"query":"compress data with gzip","k":10,"candidateK":10}`)
	dense := retrieve(t, e, `{"query":"compress data with gzip","k":10,"candidateK":10,"mode":"dense"}`)
	sparse := retrieve(t, e, `{"query":"compress data with gzip","k":10,"candidateK":10,"mode":"sparse"}`)
	var denseOnly, sparseOnly []string
	for _, h := range r.Hits {
		inD, inS := slices.Contains(ids(dense.Hits), h.ID), slices.Contains(ids(sparse.Hits), h.ID)
		_, hasD := h.Scores["dense"]
		_, hasS := h.Scores["sparse"]
		if inD != hasD || inS != hasS {
			t.Errorf("%s: scores %v disagree with the recall lists (dense %v, sparse %v)", h.ID, h.Scores, inD, inS)
		}
		switch {
		case inD && !inS:
			denseOnly = append(denseOnly, h.ID)
		case inS && !inD:
			sparseOnly = append(sparseOnly, h.ID)
		case !inD && !inS:
			t.Errorf("%s is in neither recall list", h.ID)
		}
	}
	if len(denseOnly) == 0 || len(sparseOnly) == 0 {
		t.Errorf("hybrid %v: dense-only %v, sparse-only %v; want some of each", ids(r.Hits), denseOnly, sparseOnly)
	}

	// A controlled case: "tokenizing" shares no token with the document (so sparse misses it)
	// but most of its trigrams (so dense finds it).
	small := New(Config{}, []Document{{ID: "tok", Text: "A tokenizer splits source text."},
		{ID: "zip", Text: "Zip archives hold files."}})
	for mode, want := range map[string]bool{ModeSparse: false, ModeDense: true, ModeHybrid: true} {
		r := retrieve(t, small, `{"query":"tokenizing","k":2,"mode":"`+mode+`"}`)
		if got := slices.Contains(ids(r.Hits), "tok"); got != want {
			t.Errorf("%s: found the tokenizer document = %v, want %v (%v)", mode, got, want, ids(r.Hits))
		}
	}
}

func TestRerank(t *testing.T) {
	e := NewDefault()
	ctx := context.Background()
	var p RerankParams
	if err := json.Unmarshal([]byte(`{"query":"gzip compression","passages":["the gzip file format",
		"bananas are yellow", {"type":"text","text":"gzip compression of streams"}, ""],"method":"colbert"}`), &p); err != nil {
		t.Fatal(err)
	}
	r, err := e.Rerank(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Scores) != 4 || !reflect.DeepEqual(r.Order, []int{2, 0, 1, 3}) {
		t.Fatalf("rerank = %+v, want order [2 0 1 3]", r)
	}
	if r.Scores[2] < 0.99 || r.Scores[3] != 0 {
		t.Errorf("scores %v: an exact two-token match should score ~1 (the mean over the query's tokens) and an empty passage 0", r.Scores)
	}
	if want := []RerankScore{{2, r.Scores[2]}, {0, r.Scores[0]}, {1, r.Scores[1]}, {3, r.Scores[3]}}; !reflect.DeepEqual(r.Results, want) {
		t.Errorf("results %+v, want %+v: order's indices, each with its score", r.Results, want)
	}
	top := 2
	p.TopN = &top
	if r, _ := e.Rerank(ctx, p); !reflect.DeepEqual(r.Order, []int{2, 0}) || len(r.Scores) != 4 || len(r.Results) != 2 {
		t.Errorf("topN=2: %+v", r)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}

	p.Method = "cross-encoder"
	_, err = e.Rerank(ctx, p)
	asOptionError(t, err, "method", "cross-encoder")
	p.Method, p.Model = "", "m"
	_, err = e.Rerank(ctx, p)
	asOptionError(t, err, "model", "m")
	p.Model, p.Passages = "", append(p.Passages, Input{Blocks: []Content{{Type: "audio", MimeType: "audio/wav", Data: "AA=="}}})
	_, err = e.Rerank(ctx, p)
	asOptionError(t, err, "modality", "audio")

	_, err = e.Rerank(ctx, RerankParams{Query: Text("q"), Passages: make([]Input, 201)})
	asFieldError(t, err, "passages")
	zero := 0
	_, err = e.Rerank(ctx, RerankParams{Query: Text("q"), TopN: &zero})
	asFieldError(t, err, "topN")
	// documents, the other name clients send for passages (§7.6), is the same list.
	var alias RerankParams
	if err := json.Unmarshal([]byte(`{"query":"gzip compression","documents":["the gzip file format",
		"bananas are yellow", {"type":"text","text":"gzip compression of streams"}, ""],"method":"colbert"}`), &alias); err != nil {
		t.Fatal(err)
	}
	if ra, err := e.Rerank(ctx, alias); err != nil || !reflect.DeepEqual(ra.Order, []int{2, 0, 1, 3}) {
		t.Errorf("documents: %+v %v, want the order of passages", ra, err)
	}
	for js, field := range map[string]string{`{"query":"q"}`: "passages", `{"passages":[]}`: "query",
		`{"query":"q","passages":[],"documents":[]}`: "documents", `{"query":"q","documents":[1]}`: "documents[0]",
		`{"query":"q","passages":[1]}`: "passages[0]", `{"query":"q","passages":[],"topN":0.5}`: "topN"} {
		var p RerankParams
		asFieldError(t, json.Unmarshal([]byte(js), &p), field)
	}
	if r, err := e.Rerank(ctx, RerankParams{Query: Text(""), Passages: []Input{Text("a b")}}); err != nil ||
		r.Scores[0] != 0 {
		t.Errorf("empty query: %+v %v", r, err)
	}

	// Inside retrieve, the reranked hits are ordered by their MaxSim score.
	res := retrieve(t, e, `{"query":"compress data with gzip","k":10,"rerank":{"method":"colbert","topN":25}}`)
	checkHits(t, res, 10)
	var texts []Input
	for _, h := range res.Hits {
		if h.Scores["rerank"] != h.Score {
			t.Errorf("%s: score %v is not its rerank score %v", h.ID, h.Score, h.Scores["rerank"])
		}
		texts = append(texts, Text(h.Text))
	}
	// The rerank method agrees with the built-in stage.
	rr, err := e.Rerank(ctx, RerankParams{Query: Text("compress data with gzip"), Passages: texts})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range res.Hits {
		if math.Abs(rr.Scores[i]-h.Score) > 1e-9 {
			t.Errorf("%s: rerank method %v, retrieve stage %v", h.ID, rr.Scores[i], h.Score)
		}
	}
	if res.Usage.Reranked != 25 {
		t.Errorf("usage.reranked = %d, want 25", res.Usage.Reranked)
	}
}

func TestIndexAddUpsertDelete(t *testing.T) {
	e := NewDefault()
	ctx := context.Background()
	n0, v0 := e.Len(), e.IndexVersion()

	var add IndexAddParams
	if err := json.Unmarshal([]byte(`{"documents":[{"id":"zoo/quokka","text":"The quokka is a small marsupial.",
		"meta":{"top":"zoo","package":"zoo/quokka"}},{"text":"An unnamed note about wombats."}]}`), &add); err != nil {
		t.Fatal(err)
	}
	res, err := e.IndexAdd(ctx, add)
	if err != nil || len(res.IDs) != 2 || res.IDs[0] != "zoo/quokka" || res.IDs[1] == "" {
		t.Fatalf("index/add = %+v, %v", res, err)
	}
	minted := res.IDs[1]
	if e.Len() != n0+2 || e.IndexVersion() == v0 {
		t.Fatalf("after add: len %d, version %s", e.Len(), e.IndexVersion())
	}
	r := retrieve(t, e, `{"query":"quokka marsupial","k":3}`)
	if len(r.Hits) == 0 || r.Hits[0].ID != "zoo/quokka" || r.Hits[0].Meta["top"] != "zoo" {
		t.Fatalf("the new document is not the top hit: %v", ids(r.Hits))
	}
	if r := retrieve(t, e, `{"query":"wombats","k":1}`); len(r.Hits) != 1 || r.Hits[0].ID != minted {
		t.Fatalf("the minted document is not found: %v", ids(r.Hits))
	}
	r = retrieve(t, e, `{"query":"marsupial","k":5,"filter":{"field":"top","op":"eq","value":"zoo"}}`)
	if !reflect.DeepEqual(ids(r.Hits), []string{"zoo/quokka"}) {
		t.Errorf("filtered: %v", ids(r.Hits))
	}

	// Upsert: same id, new text; no duplicate, the old text is gone.
	v1 := e.IndexVersion()
	res, err = e.IndexAdd(ctx, IndexAddParams{Documents: []IndexDocument{{ID: "zoo/quokka", Text: "Platypus eggs."}}})
	if err != nil || !reflect.DeepEqual(res.IDs, []string{"zoo/quokka"}) || e.Len() != n0+2 {
		t.Fatalf("upsert: %+v %v, len %d", res, err, e.Len())
	}
	if r := retrieve(t, e, `{"query":"quokka","k":5}`); slices.Contains(ids(r.Hits), "zoo/quokka") {
		t.Errorf("the replaced text still matches: %v", ids(r.Hits))
	}
	if r := retrieve(t, e, `{"query":"platypus","k":1}`); len(r.Hits) != 1 || r.Hits[0].ID != "zoo/quokka" {
		t.Errorf("the new text does not match: %v", ids(r.Hits))
	}
	// Re-adding identical content is observationally a no-op.
	v2 := e.IndexVersion()
	e.Add([]Document{{ID: "zoo/quokka", Text: "Platypus eggs."}})
	if e.IndexVersion() != v2 || v2 == v1 || e.Len() != n0+2 {
		t.Errorf("identical re-add changed the index: %s -> %s", v2, e.IndexVersion())
	}
	// Documents without ids are not idempotent: each add mints a new id.
	a := e.Add([]Document{{Text: "same"}, {Text: "same"}})
	if a[0] == a[1] || a[0] == minted || e.Len() != n0+4 {
		t.Errorf("minted ids %v (earlier %s), len %d", a, minted, e.Len())
	}

	// Delete is idempotent and counts only what it removed.
	del, err := e.IndexDelete(ctx, IndexDeleteParams{IDs: []string{"zoo/quokka", "nope", minted, a[0], a[1]}})
	if err != nil || del.Deleted != 4 {
		t.Fatalf("delete = %+v %v", del, err)
	}
	if del, _ := e.IndexDelete(ctx, IndexDeleteParams{IDs: []string{"zoo/quokka"}}); del.Deleted != 0 {
		t.Errorf("second delete removed %d", del.Deleted)
	}
	if r := retrieve(t, e, `{"query":"platypus","k":5}`); slices.Contains(ids(r.Hits), "zoo/quokka") {
		t.Errorf("a deleted document is still retrieved")
	}
	// Back to the original content, back to the original version.
	if e.Len() != n0 || e.IndexVersion() != v0 {
		t.Errorf("after deleting everything added: len %d (want %d), version %s (want %s)", e.Len(), n0, e.IndexVersion(), v0)
	}

	_, err = e.IndexAdd(ctx, IndexAddParams{Chunk: true})
	asOptionError(t, err, "chunk", "true")
	for js, field := range map[string]string{`{}`: "documents", `{"documents":[{"id":"x"}]}`: "documents[0].text",
		`{"documents":[{"text":"t","id":5}]}`: "documents[0].id", `{"documents":[{"text":"t","meta":[]}]}`: "documents[0].meta",
		`[]`: "params"} {
		var p IndexAddParams
		asFieldError(t, json.Unmarshal([]byte(js), &p), field)
	}
	for js, field := range map[string]string{`{}`: "ids", `{"ids":"x"}`: "ids", `{"ids":["a",null]}`: "ids[1]"} {
		var p IndexDeleteParams
		asFieldError(t, json.Unmarshal([]byte(js), &p), field)
	}
}

func TestDeterminism(t *testing.T) {
	js := `{"query":"read and write compressed files","k":10,"rerank":{"topN":20},"mmr":{"lambda":0.7},"includeVectors":true}`
	e := NewDefault()
	a, b := retrieve(t, e, js), retrieve(t, e, js)
	a.Usage.LatencyMs, b.Usage.LatencyMs = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same query twice gave different results")
	}
	// The order documents were added in does not matter either.
	docs := DefaultCorpus()
	slices.Reverse(docs)
	c := retrieve(t, New(Config{}, docs), js)
	c.Usage.LatencyMs = 0
	if !reflect.DeepEqual(a, c) {
		t.Fatalf("insertion order changed the result:\n%v\n%v", ids(a.Hits), ids(c.Hits))
	}
}

func TestEmptyQueryAndEmptyIndex(t *testing.T) {
	empty := New(Config{}, nil)
	full := NewDefault()
	for _, e := range []*Engine{empty, full} {
		for _, q := range []string{`""`, `"the of and"`, `"   ...!!!"`, `[]`} {
			for _, opts := range []string{`"mode":"dense"`, `"mode":"sparse"`, `"mode":"hybrid"`,
				`"rerank":{},"mmr":{},"tokenBudget":5,"minScore":0`} {
				r := retrieve(t, e, `{"query":`+q+`,"k":5,`+opts+`}`)
				checkHits(t, r, 5)
				if len(r.Hits) != 0 || r.NextCursor != "" {
					t.Errorf("query %s (%s): %v", q, opts, ids(r.Hits))
				}
			}
		}
	}
	r := retrieve(t, empty, `{"query":"json","k":5,"rerank":{},"mmr":{}}`)
	checkHits(t, r, 5)
	if len(r.Hits) != 0 {
		t.Errorf("empty index: %v", ids(r.Hits))
	}
	// A corpus of empty texts has no terms at all.
	blank := New(Config{}, []Document{{ID: "a"}, {ID: "b", Text: "!!"}})
	checkHits(t, retrieve(t, blank, `{"query":"json","k":5,"rerank":{},"mmr":{}}`), 5)
}

func TestFilter(t *testing.T) {
	e := NewDefault()
	check := func(js string, ok func(Hit) bool) {
		t.Helper()
		r := retrieve(t, e, js)
		checkHits(t, r, 20)
		if len(r.Hits) == 0 {
			t.Errorf("%s: no hits", js)
		}
		for _, h := range r.Hits {
			if !ok(h) {
				t.Errorf("%s: hit %s (%v) fails the filter", js, h.ID, h.Meta)
			}
		}
	}
	top := func(h Hit) string { return h.Meta["top"].(string) }
	check(`{"query":"encoding data","k":20,"filter":{"field":"top","op":"eq","value":"encoding"}}`,
		func(h Hit) bool { return top(h) == "encoding" })
	check(`{"query":"encoding data","k":20,"filter":{"field":"top","op":"in","value":["crypto","hash"]}}`,
		func(h Hit) bool { return top(h) == "crypto" || top(h) == "hash" })
	check(`{"query":"encoding data","k":20,"filter":{"not":{"field":"top","op":"eq","value":"encoding"}}}`,
		func(h Hit) bool { return top(h) != "encoding" })
	check(`{"query":"encoding data","k":20,"filter":{"and":[{"field":"top","op":"nin","value":["encoding"]},
		{"or":[{"field":"package","op":"eq","value":"compress/gzip"},{"field":"top","op":"ne","value":"compress"}]},
		{"field":"package","op":"exists","value":true}]}}`,
		func(h Hit) bool { return top(h) != "encoding" && (top(h) != "compress" || h.ID == "compress/gzip") })
	r := retrieve(t, e, `{"query":"encoding","k":5,"filter":{"field":"top","op":"exists","value":false}}`)
	if len(r.Hits) != 0 {
		t.Errorf("exists:false matched %v", ids(r.Hits))
	}
	// Filtering can be switched off; then no field is filterable.
	off := New(Config{FilterFields: []string{}}, DefaultCorpus())
	if off.Capabilities().Filter != nil {
		t.Error("filter advertised with no fields")
	}
	_, err := off.Retrieve(context.Background(),
		decodeRetrieve(t, `{"query":"x","k":1,"filter":{"field":"top","op":"eq","value":"a"}}`), nil)
	asFieldError(t, err, "filter.top")
}

func TestPagination(t *testing.T) {
	e := NewDefault()
	ctx := context.Background()
	base := `{"query":"encoding data formats","k":7,"candidateK":30`
	all := retrieve(t, e, `{"query":"encoding data formats","k":30,"candidateK":30}`)
	var paged []Hit
	cursor := ""
	for page := 0; ; page++ {
		js := base + "}"
		if cursor != "" {
			js = base + `,"cursor":"` + cursor + `"}`
		}
		r := retrieve(t, e, js)
		checkHits(t, r, 7)
		paged = append(paged, r.Hits...)
		if r.NextCursor == "" {
			break
		}
		cursor = r.NextCursor
		if page > 10 {
			t.Fatal("pagination does not end")
		}
	}
	if !reflect.DeepEqual(ids(paged), ids(all.Hits)) || len(paged) != 30 {
		t.Fatalf("pages %v\n  != one call %v", ids(paged), ids(all.Hits))
	}

	first := retrieve(t, e, base+"}")
	_, err := e.Retrieve(ctx, decodeRetrieve(t, `{"query":"other","k":7,"candidateK":30,"cursor":"`+first.NextCursor+`"}`), nil)
	asFieldError(t, err, "cursor")
	_, err = e.Retrieve(ctx, decodeRetrieve(t, base+`,"cursor":"!!not a cursor"}`), nil)
	asFieldError(t, err, "cursor")
	e.Add([]Document{{ID: "new", Text: "new data"}})
	_, err = e.Retrieve(ctx, decodeRetrieve(t, base+`,"cursor":"`+first.NextCursor+`"}`), nil)
	if !errors.Is(err, ErrCursorExpired) {
		t.Errorf("cursor after a write: %v, want ErrCursorExpired", err)
	}
}

func TestIndexVersionPin(t *testing.T) {
	e := NewDefault()
	v := e.IndexVersion()
	r := retrieve(t, e, `{"query":"json","k":1,"indexVersion":"`+v+`"}`)
	if r.IndexVersion != v {
		t.Errorf("served %q, pinned %q", r.IndexVersion, v)
	}
	e.Delete([]string{"encoding/json"})
	_, err := e.Retrieve(context.Background(), decodeRetrieve(t, `{"query":"json","k":1,"indexVersion":"`+v+`"}`), nil)
	if !errors.Is(err, ErrIndexVersionUnavailable) {
		t.Errorf("stale pin: %v", err)
	}
}

func TestTokenBudget(t *testing.T) {
	e := NewDefault()
	r := retrieve(t, e, `{"query":"encoding data","k":20,"tokenBudget":50}`)
	checkHits(t, r, 20)
	words := 0
	for _, h := range r.Hits {
		words += wordCount(h.Text)
	}
	if len(r.Hits) == 0 || words > 50 || words != r.Usage.Tokens {
		t.Errorf("%d hits with %d words, usage.tokens %d, budget 50", len(r.Hits), words, r.Usage.Tokens)
	}
	full := retrieve(t, e, `{"query":"encoding data","k":20}`)
	if !slices.Equal(ids(r.Hits), ids(full.Hits)[:len(r.Hits)]) || len(r.Hits) == len(full.Hits) {
		t.Errorf("budgeted hits %v are not a strict prefix of %v", ids(r.Hits), ids(full.Hits))
	}
}

func TestMMR(t *testing.T) {
	e := NewDefault()
	plain := retrieve(t, e, `{"query":"encoding data","k":10}`)
	pure := retrieve(t, e, `{"query":"encoding data","k":10,"mmr":{"lambda":1}}`)
	if !slices.Equal(ids(plain.Hits), ids(pure.Hits)) {
		t.Errorf("lambda=1 changed the order:\n%v\n%v", ids(plain.Hits), ids(pure.Hits))
	}
	diverse := retrieve(t, e, `{"query":"encoding data","k":10,"mmr":{"lambda":0.2}}`)
	checkHits(t, diverse, 10)
	if slices.Equal(ids(plain.Hits), ids(diverse.Hits)) {
		t.Error("lambda=0.2 changed nothing")
	}
	for _, h := range diverse.Hits {
		if _, ok := h.Scores["mmr"]; !ok {
			t.Errorf("%s has no mmr score", h.ID)
		}
	}
}

func TestProgressAndCancellation(t *testing.T) {
	e := NewDefault()
	var got []float64
	_, err := e.Retrieve(context.Background(), decodeRetrieve(t, `{"query":"json","k":3,"rerank":{},"mmr":{}}`),
		func(f float64) { got = append(got, f) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 || got[len(got)-1] != 1 {
		t.Errorf("progress %v: want 6 strictly increasing fractions ending at 1", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Errorf("progress not strictly increasing: %v", got)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Retrieve(ctx, decodeRetrieve(t, `{"query":"json","k":3}`), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled retrieve: %v", err)
	}
	if _, err := e.Rerank(ctx, RerankParams{Query: Text("q")}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled rerank: %v", err)
	}
	if _, err := e.IndexAdd(ctx, IndexAddParams{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled add: %v", err)
	}
	// Cancelled midway: the progress callback cancels after the first stage.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	_, err = e.Retrieve(ctx, decodeRetrieve(t, `{"query":"json data","k":3,"rerank":{},"mmr":{}}`),
		func(float64) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("retrieve cancelled midway: %v", err)
	}
}

func TestConcurrentReadsAndWrites(t *testing.T) {
	e := NewDefault()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 30 {
				id := fmt.Sprintf("w%d-%d", w, i)
				e.Add([]Document{{ID: id, Text: "concurrent document about json " + id}})
				if i%2 == 0 {
					e.Delete([]string{id})
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 30 {
				r, err := e.Retrieve(context.Background(),
					RetrieveParams{Query: Text("json document"), K: 10, Rerank: &RerankStage{}}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				checkHits(t, r, 10)
			}
		}()
	}
	wg.Wait()
	if want := 176 + 4*15; e.Len() != want {
		t.Errorf("len %d, want %d", e.Len(), want)
	}
}

func TestCapabilities(t *testing.T) {
	e := NewDefault()
	b, err := json.Marshal(e.Capabilities().Map())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(b, &got)
	want := map[string]any{
		"embed": map[string]any{"dimension": 256.0, "identity": "relay-hashed-features-256-v1", "batchLimit": 256.0,
			"normalized": true, "modalities": []any{"text"}, "encodings": []any{"json", "f32-base64"}},
		"retrieve": map[string]any{"maxK": 100.0, "modes": []any{"dense", "sparse", "hybrid"}, "fusion": []any{"rrf", "weighted", "convex"},
			"mmr": true, "rerankBuiltin": true, "units": []any{"document"}, "tokenBudget": true,
			"scoreScale": "unbounded", "scoreFloor": -1.0, "defaultMode": "hybrid", "deterministic": true, "snapshots": true,
			"modalities": []any{"text"}},
		"rerank":     map[string]any{"methods": []any{"colbert"}, "maxCandidates": 200.0},
		"index":      map[string]any{"writable": true},
		"filter":     map[string]any{"fields": map[string]any{"package": "keyword", "top": "keyword"}, "operators": []any{"eq", "ne", "in", "nin", "exists"}},
		"pagination": map[string]any{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("capabilities:\n got %s", b)
	}
}

func TestDefaultCorpus(t *testing.T) {
	docs := DefaultCorpus()
	if len(docs) < 150 {
		t.Fatalf("%d documents", len(docs))
	}
	seen := map[string]bool{}
	for _, d := range docs {
		if d.ID == "" || d.Text == "" || seen[d.ID] || d.Metadata["package"] != d.ID ||
			!strings.HasPrefix(d.ID, d.Metadata["top"].(string)) || strings.Contains(d.ID, "internal") {
			t.Errorf("bad document %+v", d)
		}
		seen[d.ID] = true
	}
	docs[0].Metadata["top"] = "changed" // a copy: the next call is unaffected
	if DefaultCorpus()[0].Metadata["top"] == "changed" {
		t.Error("DefaultCorpus shares its metadata")
	}
}

func TestWireRoundTrip(t *testing.T) {
	in := `{"query":"q","k":3,"mode":"sparse","candidateK":9,"fusion":{"method":"rrf","rrfK":5},
		"rerank":{"method":"colbert","topN":4},"mmr":{"lambda":0.5},"filter":{"or":[{"field":"top","op":"exists","value":false}]},
		"minScore":0,"includeText":false,"includeVectors":true,"strict":false,"cursor":"c","indexVersion":"v"}`
	p := decodeRetrieve(t, in)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var again RetrieveParams
	if err := json.Unmarshal(b, &again); err != nil || !reflect.DeepEqual(p, again) {
		t.Errorf("round trip changed the params: %s, %v", b, err)
	}
	if *p.MinScore != 0 || *p.IncludeText || *p.Strict || p.Filter.Or[0].Value != false {
		t.Errorf("explicit zero values lost: %+v", p)
	}
	if b, _ := json.Marshal(Input{Blocks: []Content{{Type: "text", Text: "t"}}}); string(b) != `[{"type":"text","text":"t"}]` {
		t.Errorf("blocks encode as %s", b)
	}
	b, _ = json.Marshal(RetrieveResult{Hits: []Hit{}})
	if string(b) != `{"hits":[]}` {
		t.Errorf("empty result encodes as %s", b)
	}
}

func TestLongQuery(t *testing.T) {
	e := NewDefault()
	long := strings.Repeat("json parse compress archive ", 5000) + strings.Repeat("x", 100000)
	r, err := e.Retrieve(context.Background(), RetrieveParams{Query: Text(long), K: 5, Rerank: &RerankStage{}, MMR: &MMR{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkHits(t, r, 5)
	if _, err := e.Rerank(context.Background(), RerankParams{Query: Text(long), Passages: []Input{Text(long)}}); err != nil {
		t.Fatal(err)
	}
}
