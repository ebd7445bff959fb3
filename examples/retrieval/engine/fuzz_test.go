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

// FuzzFilter checks the one-pass filter decoder (RCP/1 §8) against referenceFilter, the
// decoder it replaced, which reads each object into a map and each level again from its own
// bytes: both must accept the same filters, decode them to the same value, and refuse the
// others with the same *FieldError, except that only the one-pass decoder refuses a filter
// beyond MaxFilterDepth or MaxFilterNodes.
func FuzzFilter(f *testing.F) {
	f.Add([]byte(`{"field":"top","op":"eq","value":"encoding"}`))
	f.Add([]byte(`{"and":[{"not":{"field":"top","op":"in","value":["a","b"]}},{"or":[]}],"x":{"and":1}}`))
	f.Add([]byte(`{"not":{"not":{"field":"top","op":"exists","value":true,"value":false}}}`))
	f.Add([]byte(` {"fi\u0065ld":"top","op":null,"op":"ne","value":1e400} `))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := decodeFilter(raw, "filter")
		want, werr := referenceFilter(raw, "filter")
		var fe *FieldError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("%s: error %v (%T) is not a *FieldError", raw, err, err)
		}
		if fe != nil && strings.Contains(fe.Reason, "the limit of") {
			// Refused for its size: the reference must have seen a larger filter, or an error
			// (and then it has no filter to measure).
			if werr != nil {
				return
			}
			if depth, nodes := filterShape(want); depth <= MaxFilterDepth && nodes <= MaxFilterNodes {
				t.Fatalf("%s: refused (%v), but it is within the limits", raw, err)
			}
			return
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s: error %v, reference error %v", raw, err, werr)
		}
		if err != nil {
			if err.Error() != werr.Error() {
				t.Fatalf("%s: error %v, reference error %v", raw, err, werr)
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decoded %+v, reference %+v", raw, got, want)
		}
		if depth, nodes := filterShape(got); depth > MaxFilterDepth || nodes > MaxFilterNodes {
			t.Fatalf("%s: accepted, but %d deep and %d nodes", raw, depth, nodes)
		}
	})
}

// filterShape returns the depth of f and its number of nodes.
func filterShape(f *Filter) (depth, nodes int) {
	nodes = 1
	for _, c := range append(slices.Clone(f.And), f.Or...) {
		d, n := filterShape(&c)
		depth, nodes = max(depth, d), nodes+n
	}
	if f.Not != nil {
		d, n := filterShape(f.Not)
		depth, nodes = max(depth, d), nodes+n
	}
	return depth + 1, nodes
}

// referenceFilter is the filter decoder that decodeFilter replaced: correct, and quadratic in
// the depth of the filter, which is why it lives only here.
func referenceFilter(raw []byte, path string) (*Filter, error) {
	o, err := decodeObject(raw, path)
	if err != nil {
		return nil, err
	}
	var f Filter
	kinds := 0
	for _, comb := range []struct {
		name string
		dst  *[]Filter
	}{{"and", &f.And}, {"or", &f.Or}} {
		raw, ok := o.get(comb.name)
		if !ok {
			continue
		}
		kinds++
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fieldErr(o.name(comb.name), "must be an array of filters")
		}
		*comb.dst = make([]Filter, 0, len(items))
		for i, it := range items {
			c, err := referenceFilter(it, fmt.Sprintf("%s[%d]", o.name(comb.name), i))
			if err != nil {
				return nil, err
			}
			*comb.dst = append(*comb.dst, *c)
		}
	}
	if raw, ok := o.get("not"); ok {
		kinds++
		if f.Not, err = referenceFilter(raw, o.name("not")); err != nil {
			return nil, err
		}
	}
	_, hasField := o.get("field")
	_, hasOp := o.get("op")
	if hasField || hasOp {
		kinds++
		if err := o.str("field", &f.Field); err != nil {
			return nil, err
		}
		if err := o.str("op", &f.Op); err != nil {
			return nil, err
		}
		if raw, ok := o.m["value"]; ok {
			if err := json.Unmarshal(raw, &f.Value); err != nil {
				return nil, fieldErr(o.name("value"), "must be a JSON value")
			}
		}
	}
	if kinds != 1 {
		return nil, fieldErr(orFilter(path), "must be exactly one of a comparison {field, op, value}, and, or, not")
	}
	return &f, nil
}
