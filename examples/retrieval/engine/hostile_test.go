package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// Hostile input: requests built to cost the engine far more than they cost the client. Each
// is refused, or served, within bounds that do not depend on how hostile it is.

// allocated returns the bytes fn allocates (runtime.MemStats.TotalAlloc), with no test
// running in parallel in this package.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// nested returns a filter of depth filters: each level wraps the next in open and close
// (such as `{"not":` and `}`), around one comparison.
func nested(depth int, open, close string) string {
	return strings.Repeat(open, depth-1) + `{"field":"top","op":"eq","value":"encoding"}` + strings.Repeat(close, depth-1)
}

// asLimitError checks that err is a *FieldError for field whose reason names limit.
func asLimitError(t *testing.T, err error, field string, limit int) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FieldError", err, err)
	}
	if !strings.HasPrefix(fe.Field, field) || !strings.Contains(fe.Reason, fmt.Sprint(limit)) {
		t.Fatalf("FieldError %q: %q, want the field %s… and the limit %d", fe.Field, fe.Reason, field, limit)
	}
}

// §8 (filters), §12 (-32602): the 9,900-deep filter of 79 KB is refused by the depth limit at
// the cost of reading 64 levels of it, not at the cost of decoding 9,900.
func TestFilterDeeperThanTheLimitIsRefusedCheaply(t *testing.T) {
	// encoding/json, like the JSON-RPC layer, refuses JSON nested beyond 10,000 levels, and
	// an and or an or nests two (an object and an array) per filter.
	for _, c := range []struct {
		name, open, close, field string
		depth                    int
	}{
		{"not", `{"not":`, `}`, "filter" + strings.Repeat(".not", MaxFilterDepth), 9900},
		{"and", `{"and":[`, `]}`, "filter" + strings.Repeat(".and[0]", MaxFilterDepth), 4950},
		{"or", `{"or":[{"field":"top","op":"exists","value":true},`, `]}`, "filter" + strings.Repeat(".or[1]", MaxFilterDepth-1) + ".or[0]", 4950},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(`{"query":"x","k":1,"filter":` + nested(c.depth, c.open, c.close) + `}`)
			var err error
			n := allocated(func() {
				var p RetrieveParams
				err = json.Unmarshal(body, &p)
			})
			asLimitError(t, err, c.field, MaxFilterDepth)
			if fe := err.(*FieldError); fe.Field != c.field {
				t.Errorf("field %q, want the first node beyond the limit, %q", fe.Field, c.field)
			}
			// Decoding the params at all (encoding/json's pass over the whole body) costs a few
			// times the body; 4 MiB is ample for that, and far below the 785 MiB of the quadratic
			// decoder.
			t.Logf("%d-byte body: %d KiB allocated", len(body), n>>10)
			if n > 4<<20 {
				t.Errorf("refusing a %d-byte filter allocated %d MiB", len(body), n>>20)
			}
		})
	}
}

// §8: a filter with more nodes than MaxFilterNodes is refused, naming the filter and the limit.
func TestFilterLargerThanTheLimitIsRefused(t *testing.T) {
	leaves := strings.Repeat(`{"field":"top","op":"eq","value":"x"},`, MaxFilterNodes)
	var p RetrieveParams
	err := json.Unmarshal([]byte(`{"query":"x","k":1,"filter":{"or":[`+leaves+`{"not":{"field":"top","op":"exists","value":true}}]}}`), &p)
	asLimitError(t, err, "filter", MaxFilterNodes)
	if fe := err.(*FieldError); fe.Field != "filter" {
		t.Errorf("field %q, want filter", fe.Field)
	}

	// A filter built in Go is held to both limits too.
	e := NewDefault()
	deep := &Filter{Field: "top", Op: "eq", Value: "x"}
	for range MaxFilterDepth {
		deep = &Filter{Not: deep}
	}
	_, err = e.Retrieve(t.Context(), RetrieveParams{Query: Text("x"), K: 1, Filter: deep}, nil)
	asLimitError(t, err, "filter.not", MaxFilterDepth)
	wide := &Filter{Or: make([]Filter, MaxFilterNodes)}
	for i := range wide.Or {
		wide.Or[i] = Filter{Field: "top", Op: "eq", Value: "x"}
	}
	_, err = e.Retrieve(t.Context(), RetrieveParams{Query: Text("x"), K: 1, Filter: wide}, nil)
	asLimitError(t, err, "filter", MaxFilterNodes)
}

// underTheLimits is a filter at both limits: MaxFilterDepth levels, each an and of 15
// comparisons and the next level, MaxFilterNodes-16 nodes in all or fewer, with an unknown
// member beside each level that a decoder must step over.
func underTheLimits() string {
	leaves := strings.Repeat(`{"field":"top","op":"ne","value":"zzz"},`, 15)
	pad := `"x-note":"` + strings.Repeat("-", 256) + `",`
	return `{"query":"encoding","k":5,"filter":` +
		nested(MaxFilterDepth, `{`+pad+`"and":[`+leaves, `]}`) + `}`
}

// §8: a filter just inside the limits decodes, in memory linear in its size, and works.
func TestFilterAtTheLimitsDecodesInLinearMemory(t *testing.T) {
	body := []byte(underTheLimits())
	var p RetrieveParams
	var err error
	n := allocated(func() { err = json.Unmarshal(body, &p) })
	if err != nil {
		t.Fatal(err)
	}
	// What decoding must allocate: encoding/json's copy of each member of the params (the
	// filter's bytes once), and the decoded nodes (about three times their JSON here). Eight
	// times the body is room for both (5.6 is what it takes); the decoder that read each level
	// again from its own bytes allocated 109 times the body for this one.
	t.Logf("%d-byte body, %d nodes, depth %d: %d KiB allocated (%.1f bytes per byte)",
		len(body), 16*(MaxFilterDepth-1)+1, MaxFilterDepth, n>>10, float64(n)/float64(len(body)))
	if n > 8*uint64(len(body)) {
		t.Errorf("decoding a %d-byte filter allocated %d KiB, more than 8 times its size", len(body), n>>10)
	}
	depth, f := 1, p.Filter
	for ; f.And != nil; f = &f.And[15] {
		depth++
	}
	if depth != MaxFilterDepth || f.Field != "top" {
		t.Fatalf("decoded depth %d, innermost %+v", depth, f)
	}
	r, err := NewDefault().Retrieve(t.Context(), p, nil)
	if err != nil || len(r.Hits) != 5 {
		t.Fatalf("retrieve with the filter: %v hits, %v", ids(r.Hits), err)
	}
	for _, h := range r.Hits {
		if h.Meta["top"] != "encoding" {
			t.Errorf("hit %s (%v) fails the filter", h.ID, h.Meta)
		}
	}
}
