package engine

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// EmbedBatchLimit is the most inputs one embed call takes (embed.batchLimit, §7.3); a longer
// list is a *FieldError.
const EmbedBatchLimit = 256

// EmbedIdentity names the embedding function, so that a client can tell whether vectors it
// stored still match (embed.identity, §6, §15): the hashed token-and-trigram features of Dim
// dimensions that dense recall uses.
const EmbedIdentity = "relay-hashed-features-256-v1"

// The vector encodings of §7.3.1.
const (
	EncodingJSON      = "json"
	EncodingF32Base64 = "f32-base64"
)

// EmbedParams are the params of embed (§7.3).
type EmbedParams struct {
	// Inputs are strings or text Content blocks; texts, the older name, is read as the same
	// list.
	Inputs []Input `json:"inputs"`
	// Kind is "query" or "document"; the embedding is symmetric, so both give the same vector.
	Kind string `json:"kind,omitempty"`
	// Encoding is how vectors travel: "json" (the default) or "f32-base64" (§7.3.1).
	Encoding string         `json:"encoding,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// EmbedResult is the result of embed: one vector per input, in their order, sent in the
// encoding that was asked for.
type EmbedResult struct {
	Vectors   [][]float32
	Encoding  string // "json" or "f32-base64"
	Dimension int
}

// MarshalJSON writes the vectors as arrays of numbers, or, for f32-base64, as base64 of
// their little-endian float32 bytes; the encoding used and the dimension go beside them
// (§7.3.1).
func (r EmbedResult) MarshalJSON() ([]byte, error) {
	if r.Encoding != EncodingF32Base64 {
		vectors := r.Vectors
		if vectors == nil {
			vectors = [][]float32{}
		}
		return json.Marshal(struct {
			Vectors   [][]float32 `json:"vectors"`
			Encoding  string      `json:"encoding"`
			Dimension int         `json:"dimension"`
		}{vectors, EncodingJSON, r.Dimension})
	}
	blobs := make([]string, len(r.Vectors))
	for i, v := range r.Vectors {
		blobs[i] = EncodeF32(v)
	}
	return json.Marshal(struct {
		Vectors   []string `json:"vectors"`
		Encoding  string   `json:"encoding"`
		Dimension int      `json:"dimension"`
	}{blobs, r.Encoding, r.Dimension})
}

// EncodeF32 encodes a vector as §7.3.1's f32-base64: little-endian IEEE-754 binary32,
// concatenated, base64 with padding.
func EncodeF32(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeF32 decodes an f32-base64 vector of dimension floats. A blob that is not base64, or
// whose length is not dimension × 4 bytes, is an error (§7.3.1: a receiver rejects it with
// -32602).
func DecodeF32(blob string, dimension int) ([]float32, error) {
	if dimension < 0 || base64.StdEncoding.DecodedLen(len(blob)) > 4*dimension+2 {
		return nil, fmt.Errorf("an f32-base64 vector of dimension %d is %d bytes; this one is longer", dimension, 4*dimension)
	}
	if strings.ContainsAny(blob, "\r\n") { // which Go's decoder would skip
		return nil, fmt.Errorf("not base64 with padding: a line break")
	}
	b, err := base64.StdEncoding.Strict().DecodeString(blob)
	if err != nil {
		return nil, fmt.Errorf("not base64 with padding: %v", err)
	}
	if len(b) != 4*dimension {
		return nil, fmt.Errorf("an f32-base64 vector of dimension %d is %d bytes, got %d", dimension, 4*dimension, len(b))
	}
	v := make([]float32, dimension)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// UnmarshalJSON decodes embed params; a malformed field yields a *FieldError naming it.
func (p *EmbedParams) UnmarshalJSON(b []byte) error {
	o, err := decodeObject(b, "")
	if err != nil {
		return err
	}
	var q EmbedParams
	field := "inputs"
	raw, ok := o.get(field)
	if texts, alias := o.get("texts"); alias { // §7.3: the legacy name MUST be accepted
		if ok {
			return fieldErr("texts", "is the older name of inputs; send one of them, not both")
		}
		field, raw, ok = "texts", texts, true
	}
	if !ok {
		return fieldErr("inputs", "is required")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return fieldErr(field, "must be an array")
	}
	if len(items) > EmbedBatchLimit {
		return fieldErr(field, "at most %d inputs per call (embed.batchLimit), got %d; split the batch", EmbedBatchLimit, len(items))
	}
	q.Inputs = make([]Input, len(items))
	for i, it := range items {
		if err := q.Inputs[i].decode(it, fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
	}
	if err := o.str("kind", &q.Kind); err != nil {
		return err
	}
	if err := o.str("encoding", &q.Encoding); err != nil {
		return err
	}
	if err := o.metaMap("_meta", &q.Meta); err != nil {
		return err
	}
	*p = q
	return nil
}

// Embed serves embed (§7.3): the L2-normalised dense vector of each input, the one dense
// recall ranks by. More than EmbedBatchLimit inputs or a kind other than "query" and
// "document" is a *FieldError; a block that is not text, or an encoding other than "json" and
// "f32-base64", is an *OptionError.
func (e *Engine) Embed(ctx context.Context, p EmbedParams) (EmbedResult, error) {
	if len(p.Inputs) > EmbedBatchLimit {
		return EmbedResult{}, fieldErr("inputs", "at most %d inputs per call (embed.batchLimit), got %d; split the batch",
			EmbedBatchLimit, len(p.Inputs))
	}
	switch p.Kind {
	case "", "query", "document":
	default:
		return EmbedResult{}, fieldErr("kind", `must be "query" or "document", got %q`, p.Kind)
	}
	res := EmbedResult{Encoding: EncodingJSON, Dimension: Dim, Vectors: make([][]float32, len(p.Inputs))}
	switch p.Encoding {
	case "", EncodingJSON:
	case EncodingF32Base64:
		res.Encoding = EncodingF32Base64
	default:
		return EmbedResult{}, &OptionError{Option: "encoding", Value: p.Encoding}
	}
	for i, in := range p.Inputs {
		if i%16 == 0 {
			if err := ctx.Err(); err != nil {
				return EmbedResult{}, err
			}
		}
		text, err := inputText(in, true, nil)
		if err != nil {
			return EmbedResult{}, err
		}
		res.Vectors[i] = embed(tokenize(text))
	}
	return res, nil
}
