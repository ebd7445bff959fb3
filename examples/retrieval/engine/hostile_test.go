package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
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

// hostileText returns about size bytes of text: words of the default corpus, and one word in
// ten never seen before, so that the document brings a great many new terms.
func hostileText(size int) string {
	var words []string
	for _, d := range DefaultCorpus() {
		words = append(words, strings.Fields(d.Text)...)
	}
	var b strings.Builder
	b.Grow(size + 32)
	for i := 0; b.Len() < size; i++ {
		if i%10 == 0 {
			fmt.Fprintf(&b, "w%x ", i*2654435761)
		} else {
			b.WriteString(words[(i*7919)%len(words)])
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// §7.10, §7.5: an index/add of a 14 MiB document (allowed here by a raised limit) does not
// hold up retrieves: they go on being answered while it runs, each waiting at most for the
// short moment the document is linked into the index, not for its tokenising and
// embedding.
func TestLargeIndexAddDoesNotHoldUpRetrieves(t *testing.T) {
	e := New(Config{MaxDocumentBytes: 32 << 20, MaxIndexBytes: 64 << 20}, DefaultCorpus())
	text := hostileText(14 << 20)
	type outcome struct {
		took time.Duration
		err  error
	}
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		_, err := e.IndexAdd(t.Context(), IndexAddParams{Documents: []IndexDocument{{ID: "big", Text: text}}})
		done <- outcome{time.Since(start), err}
	}()
	var answered int
	var longest time.Duration
	for {
		select {
		case o := <-done:
			if o.err != nil {
				t.Fatal(o.err)
			}
			t.Logf("index/add of %d MiB took %v; %d retrieves answered meanwhile, the longest in %v",
				len(text)>>20, o.took, answered, longest)
			if answered < 10 || longest > o.took/2 {
				t.Errorf("retrieves waited for the write: %d answered during a %v index/add, the longest in %v",
					answered, o.took, longest)
			}
			if r := retrieve(t, e, `{"query":"w0","k":1}`); len(r.Hits) != 1 || r.Hits[0].ID != "big" {
				t.Errorf("the large document is not found: %v", ids(r.Hits))
			}
			return
		case <-time.After(time.Millisecond):
		}
		began := time.Now()
		r, err := e.Retrieve(t.Context(), RetrieveParams{Query: Text("parse JSON"), K: 3}, nil)
		if err != nil || len(r.Hits) != 3 {
			t.Fatalf("retrieve during index/add: %v, %v", ids(r.Hits), err)
		}
		longest = max(longest, time.Since(began))
		answered++
	}
}

// §7.10: what an index/add of a large document allocates, and what the index keeps of it, is
// a small multiple of its size: its distinct terms, not a list of all its words.
func TestLargeIndexAddMemory(t *testing.T) {
	e := New(Config{MaxDocumentBytes: 32 << 20, MaxIndexBytes: 64 << 20}, DefaultCorpus())
	text := hostileText(14 << 20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := e.IndexAdd(t.Context(), IndexAddParams{Documents: []IndexDocument{{ID: "big", Text: text}}}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	runtime.KeepAlive(e)
	size := uint64(len(text))
	t.Logf("index/add of %d MiB: %d MiB allocated, %d MiB kept", size>>20, allocated>>20, kept>>20)
	// The text itself is kept (it is returned by retrieve), so it does not count here.
	if allocated > 16*size || kept > 6*int64(size) {
		t.Errorf("index/add of %d MiB allocated %d MiB and kept %d MiB: over 16 and 6 times its size",
			size>>20, allocated>>20, kept>>20)
	}
}

// §7.10, §12: a document over Config.MaxDocumentBytes is refused with a
// *DocumentTooLargeError naming it, and nothing of its index/add is stored.
func TestIndexAddDocumentLimit(t *testing.T) {
	e := NewDefault()
	n, v := e.Len(), e.IndexVersion()
	max := 1 << 20 // the default
	_, err := e.IndexAdd(t.Context(), IndexAddParams{Documents: []IndexDocument{
		{ID: "ok", Text: "a small one"},
		{ID: "big", Text: strings.Repeat("x", max-9), Meta: map[string]any{"a": "bc"}}, // {"a":"bc"}: 10 bytes
	}})
	var te *DocumentTooLargeError
	if !errors.As(err, &te) || te.Field != "documents[1]" || te.Size != max+1 || te.Max != max ||
		!strings.Contains(err.Error(), "split it") {
		t.Fatalf("error %v (%T), want a *DocumentTooLargeError for documents[1], %d bytes of %d", err, err, max+1, max)
	}
	if e.Len() != n || e.IndexVersion() != v {
		t.Errorf("a refused index/add stored something: len %d, version %s", e.Len(), e.IndexVersion())
	}
	// At the limit, it is taken.
	if _, err := e.IndexAdd(t.Context(), IndexAddParams{Documents: []IndexDocument{
		{ID: "big", Text: strings.Repeat("x", max-10), Meta: map[string]any{"a": "bc"}}}}); err != nil {
		t.Fatalf("a document at the limit: %v", err)
	}
}

// §7.10, §12: an index/add that would take the index past Config.MaxDocuments or
// Config.MaxIndexBytes is refused whole with an *IndexFullError; replacing documents and
// deleting make room.
func TestIndexAddIndexLimits(t *testing.T) {
	corpus := DefaultCorpus()
	e := New(Config{MaxDocuments: len(corpus) + 2}, corpus)
	add := func(docs ...IndexDocument) error {
		_, err := e.IndexAdd(t.Context(), IndexAddParams{Documents: docs})
		return err
	}
	if err := add(IndexDocument{ID: "a", Text: "first"}, IndexDocument{ID: "b", Text: "second"}); err != nil {
		t.Fatal(err)
	}
	v := e.IndexVersion()
	err := add(IndexDocument{ID: "a", Text: "first again"}, IndexDocument{Text: "a third"})
	var fe *IndexFullError
	if !errors.As(err, &fe) || fe.Limit != "documents" || fe.Max != len(corpus)+2 || fe.Needed != len(corpus)+3 ||
		!strings.Contains(err.Error(), "index/delete") {
		t.Fatalf("error %v (%T), want an *IndexFullError for documents", err, err)
	}
	if e.IndexVersion() != v {
		t.Error("a refused index/add changed the index")
	}
	// Replacing is not growing, twice in one call neither.
	if err := add(IndexDocument{ID: "a", Text: "first again"}, IndexDocument{ID: "b", Text: "x"}, IndexDocument{ID: "b", Text: "y"}); err != nil {
		t.Fatalf("replacing at the limit: %v", err)
	}
	e.Delete([]string{"a"})
	if err := add(IndexDocument{Text: "a third"}); err != nil {
		t.Fatalf("after a delete: %v", err)
	}

	// Bytes: the limit counts text and metadata.
	e = New(Config{MaxIndexBytes: 100}, nil)
	if err := add(IndexDocument{ID: "a", Text: strings.Repeat("y", 90)}); err != nil {
		t.Fatal(err)
	}
	err = add(IndexDocument{ID: "b", Text: "z", Meta: map[string]any{"top": "zoo"}}) // 1 + 13 bytes
	if !errors.As(err, &fe) || fe.Limit != "bytes" || fe.Stored != 90 || fe.Needed != 104 || fe.Max != 100 {
		t.Fatalf("error %v (%T), want an *IndexFullError for 104 bytes of 100", err, err)
	}
	if err := add(IndexDocument{ID: "a", Text: strings.Repeat("y", 100)}); err != nil {
		t.Fatalf("replacing within the limit: %v", err)
	}
}

// §8: the values listed by a filter's in and nin comparisons count against MaxFilterValues,
// since every document is compared with each: a list of a million (9 MB) is refused before
// any document is, where it used to take seconds and gigabytes, and a filter at the limit
// works.
func TestFilterValuesLimit(t *testing.T) {
	e := NewDefault()
	list := func(n int, extra ...string) string {
		vs := slices.Clone(extra)
		for i := range n {
			vs = append(vs, fmt.Sprintf("v%d", i))
		}
		b, _ := json.Marshal(vs)
		return string(b)
	}
	huge := []byte(`{"query":"encoding","k":5,"filter":{"field":"top","op":"in","value":` + list(1_000_000) + `}}`)
	var err error
	n := allocated(func() {
		var p RetrieveParams
		if err = json.Unmarshal(huge, &p); err == nil {
			_, err = e.Retrieve(t.Context(), p, nil)
		}
	})
	asLimitError(t, err, "filter.value", MaxFilterValues)
	t.Logf("%d-byte filter: %d MiB allocated", len(huge), n>>20)
	// Decoding the list into Go values (a []any of strings) takes about 12 times its JSON; the
	// million comparisons per document took 3 GiB.
	if n > 20*uint64(len(huge)) {
		t.Errorf("refusing a %d MiB list allocated %d MiB", len(huge)>>20, n>>20)
	}

	half := MaxFilterValues / 2
	_, err = e.Retrieve(t.Context(), decodeRetrieve(t, `{"query":"encoding","k":5,"filter":{"or":[
		{"field":"top","op":"nin","value":`+list(half)+`},{"field":"top","op":"in","value":`+list(half+1)+`}]}}`), nil)
	asLimitError(t, err, "filter.or[1].value", MaxFilterValues)

	r, err := e.Retrieve(t.Context(), decodeRetrieve(t, `{"query":"encoding","k":5,"filter":{"and":[
		{"field":"top","op":"nin","value":`+list(half)+`},{"field":"top","op":"in","value":`+list(half-1, "encoding")+`}]}}`), nil)
	if err != nil || len(r.Hits) != 5 {
		t.Fatalf("a filter at the limit: %v, %v", ids(r.Hits), err)
	}
	for _, h := range r.Hits {
		if h.Meta["top"] != "encoding" {
			t.Errorf("hit %s (%v) fails the filter", h.ID, h.Meta)
		}
	}
}
