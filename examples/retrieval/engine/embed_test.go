package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestEmbed_7_3(t *testing.T) {
	e := NewDefault()
	ctx := context.Background()
	var p EmbedParams
	if err := json.Unmarshal([]byte(`{"inputs":["gzip compression",{"type":"text","text":"compression gzip"},"bananas are yellow",""],"kind":"query"}`), &p); err != nil {
		t.Fatal(err)
	}
	r, err := e.Embed(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Vectors) != 4 || r.Dimension != Dim || r.Encoding != EncodingJSON {
		t.Fatalf("embed = %d vectors, dimension %d, encoding %q; want 4, %d, json", len(r.Vectors), r.Dimension, r.Encoding, Dim)
	}
	for i, v := range r.Vectors[:3] {
		if n := norm(v); len(v) != Dim || math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d: %d dimensions, length %v; want %d and 1 (normalized)", i, len(v), n, Dim)
		}
	}
	if !reflect.DeepEqual(r.Vectors[0], r.Vectors[1]) {
		t.Error("the same tokens in another order, or as a text block, must embed to the same vector")
	}
	if c := cosine(r.Vectors[0], r.Vectors[2]); c > 0.5 {
		t.Errorf("unrelated texts have cosine %v", c)
	}
	if norm(r.Vectors[3]) != 0 {
		t.Error("a text without tokens embeds to the zero vector")
	}
	// The vector is the one dense recall ranks by: embedding a query and retrieving it in
	// dense mode give the same cosine for the top hit.
	res, err := e.Retrieve(ctx, RetrieveParams{Query: Text("gzip compression"), K: 1, Mode: ModeDense, IncludeVectors: true}, nil)
	if err != nil || len(res.Hits) != 1 {
		t.Fatal(err, res)
	}
	var dot float64
	for i, x := range res.Hits[0].Vector {
		dot += x * float64(r.Vectors[0][i])
	}
	if math.Abs(dot-res.Hits[0].Scores["dense"]) > 1e-4 {
		t.Errorf("the embedded query's cosine with the top dense hit is %v; retrieve scored it %v", dot, res.Hits[0].Scores["dense"])
	}

	// texts, the legacy name, MUST be accepted; kind does not change a symmetric embedding.
	var legacy EmbedParams
	if err := json.Unmarshal([]byte(`{"texts":["gzip compression"],"kind":"document"}`), &legacy); err != nil {
		t.Fatal(err)
	}
	if r2, err := e.Embed(ctx, legacy); err != nil || !reflect.DeepEqual(r2.Vectors[0], r.Vectors[0]) {
		t.Errorf("texts: %v %v", r2, err)
	}

	_, err = e.Embed(ctx, EmbedParams{Inputs: []Input{Text("x")}, Kind: "passage"})
	asFieldError(t, err, "kind")
	_, err = e.Embed(ctx, EmbedParams{Inputs: make([]Input, EmbedBatchLimit+1)})
	asFieldError(t, err, "inputs")
	_, err = e.Embed(ctx, EmbedParams{Inputs: []Input{{Blocks: []Content{{Type: "image", MimeType: "image/png", Data: "AA=="}}}}})
	asOptionError(t, err, "modality", "image")
	for js, field := range map[string]string{
		`{}`: "inputs", `{"inputs":"x"}`: "inputs", `{"inputs":[1]}`: "inputs[0]", `{"texts":[1]}`: "texts[0]",
		`{"inputs":[],"texts":[]}`: "texts", `{"inputs":[],"kind":1}`: "kind", `{"inputs":[],"encoding":1}`: "encoding",
		`{"inputs":[` + strings.Repeat(`"x",`, EmbedBatchLimit) + `"x"]}`: "inputs",
	} {
		var p EmbedParams
		asFieldError(t, json.Unmarshal([]byte(js), &p), field)
	}
}

func TestEmbedEncoding_7_3_1(t *testing.T) {
	e := NewDefault()
	ctx := context.Background()
	in := []Input{Text("gzip compression"), Text("the x509 package")}
	plain, err := e.Embed(ctx, EmbedParams{Inputs: in})
	if err != nil {
		t.Fatal(err)
	}
	packed, err := e.Embed(ctx, EmbedParams{Inputs: in, Encoding: EncodingF32Base64})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(packed)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Vectors   []string
		Encoding  string
		Dimension int
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	// The server echoes the encoding it used, and with a binary one the dimension.
	if wire.Encoding != EncodingF32Base64 || wire.Dimension != Dim || len(wire.Vectors) != 2 {
		t.Fatalf("f32-base64 result %s", raw)
	}
	for i, blob := range wire.Vectors {
		v, err := DecodeF32(blob, wire.Dimension)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v, plain.Vectors[i]) {
			t.Errorf("vector %d: f32-base64 does not decode to the json vector", i)
		}
	}
	// Little-endian binary32: 1.0 is 00 00 80 3f.
	if got := EncodeF32([]float32{1}); got != "AACAPw==" {
		t.Errorf("EncodeF32(1) = %s, want AACAPw==", got)
	}
	// A blob of any other length than dimension × 4 bytes is refused.
	for _, bad := range []string{"AACAPw", "AACAPwAA", "AACAPwAAgD8=", "!!!!"} {
		if _, err := DecodeF32(bad, 1); err == nil {
			t.Errorf("DecodeF32(%q, 1) accepted", bad)
		}
	}
	// Without an encoding the result is json, and says so.
	raw, _ = json.Marshal(plain)
	if !strings.Contains(string(raw), `"vectors":[[`) || !strings.Contains(string(raw), `"encoding":"json"`) {
		t.Errorf("json result %.80s…", raw)
	}
	// An encoding that was not advertised is -32005 (OptionUnsupported).
	_, err = e.Embed(ctx, EmbedParams{Inputs: in, Encoding: "f16-base64"})
	asOptionError(t, err, "encoding", "f16-base64")
}

// FuzzDecodeF32 feeds arbitrary blobs and dimensions to the f32-base64 decoder: it never
// panics, and what it accepts is exactly dimension floats that encode back to the blob.
func FuzzDecodeF32(f *testing.F) {
	f.Add("AACAPw==", 1)
	f.Add("", 0)
	f.Add("AACAPwAAgD8=", 2)
	f.Add("AACAPw", 1)
	f.Add("////////", -1)
	f.Fuzz(func(t *testing.T, blob string, dimension int) {
		v, err := DecodeF32(blob, dimension)
		if err != nil {
			return
		}
		if len(v) != dimension {
			t.Fatalf("DecodeF32(%q, %d) returned %d floats", blob, dimension, len(v))
		}
		if back := EncodeF32(v); back != blob {
			t.Fatalf("DecodeF32(%q) re-encodes as %q", blob, back)
		}
	})
}

// FuzzEmbedParams decodes arbitrary bytes as embed params: the decoder never panics, refuses
// with a *FieldError only, and what it accepts Embed serves or refuses without panicking.
func FuzzEmbedParams(f *testing.F) {
	f.Add([]byte(`{"inputs":["gzip",{"type":"text","text":"x"}],"kind":"query","encoding":"f32-base64"}`))
	f.Add([]byte(`{"texts":["a"]}`))
	f.Add([]byte(`{"inputs":[{"type":"image","data":"AA=="}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p EmbedParams
		if err := json.Unmarshal(b, &p); err != nil {
			var fe *FieldError
			var se *json.SyntaxError
			if !errors.As(err, &fe) && !errors.As(err, &se) {
				t.Fatalf("%q: %T %v", b, err, err)
			}
			return
		}
		fuzzEngine.Embed(context.Background(), p)
	})
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s / (norm(a) * norm(b))
}
