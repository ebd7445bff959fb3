package engine

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// Dim is the dimension of the dense embedding and of the per-token vectors used by rerank.
const Dim = 256

// stopWords are dropped by the tokenizer: common English function words, plus "package",
// which opens nearly every synopsis of the default corpus and so says nothing about any of them.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about an and are as at be been but by can for from has
		have how i if in into is it its not of on or so such that the their them then there these
		they this to was we what when where which while who will with you your package`) {
		m[w] = true
	}
	return m
}()

// tokenize splits s into lower-case tokens: maximal runs of Unicode letters and digits, minus
// stop words, with a plural "s" removed.
func tokenize(s string) []string {
	var toks []string
	eachWord(s, func(w string) {
		if t, ok := token(w); ok {
			toks = append(toks, t)
		}
	})
	return toks
}

// token returns the token of word w, or false for a stop word.
func token(w string) (string, bool) {
	w = strings.ToLower(w)
	if stopWords[w] {
		return "", false
	}
	return stem(w), true
}

// eachWord calls fn with each word of s in order, the words strings.FieldsFunc(s,
// isSeparator) returns, without collecting them: a document's words are read once, however
// many there are.
func eachWord(s string, fn func(w string)) {
	start := -1 // the start of the word being read, or -1 between words
	for i, r := range s {
		if isSeparator(r) {
			if start >= 0 {
				fn(s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		fn(s[start:])
	}
}

func isSeparator(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// wordCount is the number of words in s, stop words included: the unit of tokenBudget.
func wordCount(s string) int {
	n := 0
	eachWord(s, func(string) { n++ })
	return n
}

// stem removes a plural ending, conservatively: "parses" -> "parse", "libraries" -> "library",
// but "status", "analysis" and "class" are left alone. Anything subtler is the dense side's job,
// whose character trigrams already relate "parse", "parser" and "parsing".
func stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 3 && w[n-1] == 's' && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") &&
		!strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

// hash64 is FNV-1a over a tag byte followed by s, so a token and a trigram with the same
// letters land in different buckets.
func hash64(tag byte, s string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	h = (h ^ uint64(tag)) * prime
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * prime
	}
	// A final avalanche step, so that the low bits (the bucket) and the high bit (the sign)
	// both depend on every input byte.
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

// fnv is FNV-1a over a sequence of strings, as hash64 is over one, so that a long text can be
// hashed beside other parts without concatenating them.
type fnv uint64

func newFNV(tag byte) fnv { return fnv((14695981039346656037 ^ uint64(tag)) * 1099511628211) }

func (h fnv) add(s string) fnv {
	for i := 0; i < len(s); i++ {
		h = (h ^ fnv(s[i])) * 1099511628211
	}
	return h
}

// sum applies hash64's final avalanche step.
func (h fnv) sum() uint64 {
	x := uint64(h)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

// features calls fn with each hashed feature of a token: the whole token with weight 1, and
// the character trigrams of "^token$" sharing a total squared weight of 1, so that a token
// and a variant of it ("parse", "parser") are similar but not equal.
func features(tok string, fn func(tag byte, feature string, weight float32)) {
	fn('w', tok, 1)
	padded := "^" + tok + "$"
	var buf [48]int
	starts := buf[:0] // the byte offset of every rune, then the end
	for i := range padded {
		starts = append(starts, i)
	}
	starts = append(starts, len(padded))
	n := len(starts) - 3 // trigrams
	if n < 1 {
		return
	}
	w := float32(1 / math.Sqrt(float64(n)))
	for i := 0; i < n; i++ {
		fn('t', padded[starts[i]:starts[i+3]], w)
	}
}

// bucket returns the dimension and the sign of a hashed feature.
func bucket(tag byte, feature string) (int, float32) {
	h := hash64(tag, feature)
	if h>>63 == 1 {
		return int(h % Dim), -1
	}
	return int(h % Dim), 1
}

// addToken adds one token's features to the dense vector v.
func addToken(v []float32, tok string) {
	features(tok, func(tag byte, f string, w float32) {
		i, sign := bucket(tag, f)
		v[i] += sign * w
	})
}

// embed returns the L2-normalised hashed embedding of a token sequence. A sequence without
// tokens yields the zero vector, whose cosine with anything is 0.
func embed(toks []string) []float32 {
	v := make([]float32, Dim)
	for _, t := range toks {
		addToken(v, t)
	}
	normalize(v)
	return v
}

// normalize scales v to unit length in place; a zero (or non-finite) vector becomes zero.
func normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 || math.IsInf(ss, 0) || math.IsNaN(ss) {
		clear(v)
		return
	}
	inv := 1 / math.Sqrt(ss)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}

// dot is the inner product of two dense vectors of the same length. Four independent
// accumulators let the additions overlap; the summation order is fixed, so the result is
// the same on every call.
func dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sparseVec is a vector with few non-zero components, as a token's own vector is (one bucket
// for the token and one per trigram). Dim is 256, so an index fits in a byte.
type sparseVec struct {
	idx []uint8
	val []float32
}

// tokenVector returns the normalised vector of a single token, in sparse form, built
// without a dense intermediate.
func tokenVector(tok string) sparseVec {
	var sv sparseVec
	features(tok, func(tag byte, f string, w float32) {
		i, sign := bucket(tag, f)
		if j := slices.Index(sv.idx, uint8(i)); j >= 0 {
			sv.val[j] += sign * w
			return
		}
		sv.idx = append(sv.idx, uint8(i))
		sv.val = append(sv.val, sign*w)
	})
	var ss float64
	for _, x := range sv.val {
		ss += float64(x) * float64(x)
	}
	if ss == 0 || math.IsInf(ss, 0) || math.IsNaN(ss) {
		return sparseVec{}
	}
	inv := 1 / math.Sqrt(ss)
	for j, x := range sv.val {
		sv.val[j] = float32(float64(x) * inv)
	}
	return sv
}

// dotSparse is the inner product of a dense vector and a sparse one.
func dotSparse(d []float32, s sparseVec) float64 {
	var sum float64
	for i, ix := range s.idx {
		sum += float64(d[ix]) * float64(s.val[i])
	}
	return sum
}

// finite returns x, or 0 when x is NaN or infinite: no float this package returns may be
// either, because JSON cannot carry them.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
