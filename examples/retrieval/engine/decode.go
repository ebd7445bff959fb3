package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// The params types decode field by field, with exact (case-sensitive) names, so that every
// malformed value is reported as a *FieldError carrying its path: "k", "fusion.rrfK",
// "documents[2].text". Unknown fields are ignored, and null counts as absent (§4.6).

// object is a decoded JSON object whose members are still raw.
type object struct {
	path string
	m    map[string]json.RawMessage
}

func decodeObject(raw []byte, path string) (object, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return object{}, fieldErr(orParams(path), "must be an object")
	}
	return object{path: path, m: m}, nil
}

func orParams(path string) string {
	if path == "" {
		return "params"
	}
	return path
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// name is the path of member f.
func (o object) name(f string) string { return join(o.path, f) }

// get returns member f, or false when it is absent or null.
func (o object) get(f string) (json.RawMessage, bool) {
	raw, ok := o.m[f]
	if !ok || isNull(raw) {
		return nil, false
	}
	return raw, true
}

func (o object) str(f string, dst *string) error {
	raw, ok := o.get(f)
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fieldErr(o.name(f), "must be a string")
	}
	return nil
}

func (o object) boolean(f string, dst *bool) error {
	raw, ok := o.get(f)
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fieldErr(o.name(f), "must be a boolean")
	}
	return nil
}

func (o object) boolPtr(f string, dst **bool) error {
	if _, ok := o.get(f); !ok {
		return nil
	}
	var b bool
	if err := o.boolean(f, &b); err != nil {
		return err
	}
	*dst = &b
	return nil
}

// integer decodes member f as an integer and reports whether it was present.
func (o object) integer(f string, dst *int) (bool, error) {
	raw, ok := o.get(f)
	if !ok {
		return false, nil
	}
	n, err := parseInteger(raw)
	if err != nil {
		return true, fieldErr(o.name(f), "%v", err)
	}
	*dst = n
	return true, nil
}

func (o object) intPtr(f string, dst **int) error {
	var n int
	present, err := o.integer(f, &n)
	if present && err == nil {
		*dst = &n
	}
	return err
}

func (o object) number(f string, dst **float64) error {
	raw, ok := o.get(f)
	if !ok {
		return nil
	}
	x, err := parseNumber(raw)
	if err != nil {
		return fieldErr(o.name(f), "%v", err)
	}
	*dst = &x
	return nil
}

func (o object) strings(f string, dst *[]string) (bool, error) {
	raw, ok := o.get(f)
	if !ok {
		return false, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return true, fieldErr(o.name(f), "must be an array of strings")
	}
	out := make([]string, len(items))
	for i, it := range items {
		if err := json.Unmarshal(it, &out[i]); err != nil || isNull(it) {
			return true, fieldErr(fmt.Sprintf("%s[%d]", o.name(f), i), "must be a string")
		}
	}
	*dst = out
	return true, nil
}

func (o object) metaMap(f string, dst *map[string]any) error {
	raw, ok := o.get(f)
	if !ok {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return fieldErr(o.name(f), "must be an object")
	}
	*dst = m
	return nil
}

// parseNumber accepts a JSON number only (not a numeric string).
func parseNumber(raw json.RawMessage) (float64, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
		return 0, errors.New("must be a number")
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, errors.New("must be a finite number")
	}
	return x, nil
}

// maxInteger bounds decoded integers: RCP integers fit in 53 bits (§4.6), and a larger value
// is clamped to it, like any value above a limit.
const maxInteger = 1 << 53

// parseInteger accepts a JSON number with an integral value ("5", "5.0", "1e2"), and rejects
// strings and fractions.
func parseInteger(raw json.RawMessage) (int, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
		return 0, errors.New("must be an integer")
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range means ±Inf: clamped below
		return 0, errors.New("must be an integer")
	}
	if math.IsNaN(x) || (!math.IsInf(x, 0) && x != math.Trunc(x)) {
		return 0, errors.New("must be an integer, not a fraction")
	}
	x = max(min(x, maxInteger), -maxInteger)
	return int(x), nil
}

// decode reads the string, block or block-array form of an Input.
func (in *Input) decode(raw []byte, path string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return fieldErr(path, "is required")
	}
	var v Input
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &v.Text); err != nil {
			return fieldErr(path, "must be a string or content blocks")
		}
	case '{':
		b, err := decodeBlock(raw, path)
		if err != nil {
			return err
		}
		v.Blocks = []Content{b}
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fieldErr(path, "must be a string or content blocks")
		}
		v.Blocks = make([]Content, 0, len(items))
		for i, it := range items {
			b, err := decodeBlock(it, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return err
			}
			v.Blocks = append(v.Blocks, b)
		}
	default:
		return fieldErr(path, "must be a string, a content block or an array of content blocks")
	}
	*in = v
	return nil
}

func decodeBlock(raw []byte, path string) (Content, error) {
	o, err := decodeObject(raw, path)
	if err != nil {
		return Content{}, err
	}
	var c Content
	for _, m := range []struct {
		name string
		dst  *string
	}{{"type", &c.Type}, {"text", &c.Text}, {"mimeType", &c.MimeType}, {"data", &c.Data}, {"uri", &c.URI}} {
		if err := o.str(m.name, m.dst); err != nil {
			return Content{}, err
		}
	}
	if c.Type == "" {
		return Content{}, fieldErr(o.name("type"), "is required")
	}
	return c, nil
}

// UnmarshalJSON decodes retrieve params; a malformed field yields a *FieldError naming it.
func (p *RetrieveParams) UnmarshalJSON(b []byte) error {
	o, err := decodeObject(b, "")
	if err != nil {
		return err
	}
	var q RetrieveParams
	raw, ok := o.get("query")
	if !ok {
		return fieldErr("query", "is required")
	}
	if err := q.Query.decode(raw, "query"); err != nil {
		return err
	}
	if present, err := o.integer("k", &q.K); err != nil {
		return err
	} else if !present {
		return fieldErr("k", "is required")
	}
	steps := []func() error{
		func() error { return o.str("mode", &q.Mode) },
		func() error { return o.str("modality", &q.Modality) },
		func() error { return o.intPtr("candidateK", &q.CandidateK) },
		func() error { return decodeFusion(o, &q.Fusion) },
		func() error { return decodeRerankStage(o, &q.Rerank) },
		func() error { return decodeMMR(o, &q.MMR) },
		func() error { return decodeRewrite(o, &q.Rewrite) },
		func() error {
			raw, ok := o.get("filter")
			if !ok {
				return nil
			}
			f, err := decodeFilter(raw, "filter")
			q.Filter = f
			return err
		},
		func() error { return o.number("minScore", &q.MinScore) },
		func() error { return decodeRecency(o, &q.Recency) },
		func() error { return o.str("unit", &q.Unit) },
		func() error { return o.intPtr("level", &q.Level) },
		func() error { return o.intPtr("tokenBudget", &q.TokenBudget) },
		func() error { return o.str("sessionId", &q.SessionID) },
		func() error { return o.boolPtr("includeText", &q.IncludeText) },
		func() error { return o.boolean("includeVectors", &q.IncludeVectors) },
		func() error { return o.intPtr("seed", &q.Seed) },
		func() error { return o.str("indexVersion", &q.IndexVersion) },
		func() error { return o.boolPtr("strict", &q.Strict) },
		func() error { return o.str("cursor", &q.Cursor) },
		func() error { return o.metaMap("_meta", &q.Meta) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	*p = q
	return nil
}

func decodeFusion(o object, dst **Fusion) error {
	raw, ok := o.get("fusion")
	if !ok {
		return nil
	}
	s, err := decodeObject(raw, "fusion")
	if err != nil {
		return err
	}
	var f Fusion
	if err := s.str("method", &f.Method); err != nil {
		return err
	}
	if wraw, ok := s.get("weights"); ok {
		w, err := decodeObject(wraw, "fusion.weights")
		if err != nil {
			return err
		}
		f.Weights = map[string]float64{}
		for _, name := range slices.Sorted(maps.Keys(w.m)) {
			var x *float64
			if err := w.number(name, &x); err != nil {
				return err
			}
			if x != nil {
				f.Weights[name] = *x
			}
		}
	}
	if err := s.intPtr("rrfK", &f.RRFK); err != nil {
		return err
	}
	if err := s.number("alpha", &f.Alpha); err != nil {
		return err
	}
	*dst = &f
	return nil
}

func decodeRerankStage(o object, dst **RerankStage) error {
	raw, ok := o.get("rerank")
	if !ok {
		return nil
	}
	switch string(bytes.TrimSpace(raw)) {
	case "false":
		return nil
	case "true":
		return fieldErr("rerank", "must be an object or false")
	}
	s, err := decodeObject(raw, "rerank")
	if err != nil {
		return fieldErr("rerank", "must be an object or false")
	}
	var r RerankStage
	if err := s.str("method", &r.Method); err != nil {
		return err
	}
	if err := s.str("model", &r.Model); err != nil {
		return err
	}
	if err := s.intPtr("topN", &r.TopN); err != nil {
		return err
	}
	*dst = &r
	return nil
}

func decodeMMR(o object, dst **MMR) error {
	raw, ok := o.get("mmr")
	if !ok {
		return nil
	}
	s, err := decodeObject(raw, "mmr")
	if err != nil {
		return err
	}
	var m MMR
	if err := s.number("lambda", &m.Lambda); err != nil {
		return err
	}
	*dst = &m
	return nil
}

func decodeRewrite(o object, dst *string) error {
	raw, ok := o.get("rewrite")
	if !ok || string(bytes.TrimSpace(raw)) == "false" {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fieldErr("rewrite", "must be a string or false")
	}
	return nil
}

func decodeRecency(o object, dst **Recency) error {
	raw, ok := o.get("recency")
	if !ok {
		return nil
	}
	s, err := decodeObject(raw, "recency")
	if err != nil {
		return err
	}
	var r Recency
	if err := s.str("field", &r.Field); err != nil {
		return err
	}
	if err := s.number("halfLifeDays", &r.HalfLifeDays); err != nil {
		return err
	}
	*dst = &r
	return nil
}

// UnmarshalJSON decodes rerank params; a malformed field yields a *FieldError naming it.
func (p *RerankParams) UnmarshalJSON(b []byte) error {
	o, err := decodeObject(b, "")
	if err != nil {
		return err
	}
	var q RerankParams
	raw, ok := o.get("query")
	if !ok {
		return fieldErr("query", "is required")
	}
	if err := q.Query.decode(raw, "query"); err != nil {
		return err
	}
	// §7.6 names the list passages; documents, the name some clients send, is read as the
	// same list.
	field := "passages"
	raw, ok = o.get(field)
	if docs, alias := o.get("documents"); alias {
		if ok {
			return fieldErr("documents", "is another name for passages; send one of them, not both")
		}
		field, raw, ok = "documents", docs, true
	}
	if !ok {
		return fieldErr("passages", "is required")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fieldErr(field, "must be an array")
	}
	q.Passages = make([]Input, len(items))
	for i, it := range items {
		if err := q.Passages[i].decode(it, fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
	}
	if err := o.str("method", &q.Method); err != nil {
		return err
	}
	if err := o.str("model", &q.Model); err != nil {
		return err
	}
	if err := o.intPtr("topN", &q.TopN); err != nil {
		return err
	}
	if err := o.metaMap("_meta", &q.Meta); err != nil {
		return err
	}
	*p = q
	return nil
}

// UnmarshalJSON decodes index/add params; a malformed field yields a *FieldError naming it.
func (p *IndexAddParams) UnmarshalJSON(b []byte) error {
	o, err := decodeObject(b, "")
	if err != nil {
		return err
	}
	var q IndexAddParams
	raw, ok := o.get("documents")
	if !ok {
		return fieldErr("documents", "is required")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fieldErr("documents", "must be an array")
	}
	q.Documents = make([]IndexDocument, len(items))
	for i, it := range items {
		path := fmt.Sprintf("documents[%d]", i)
		d, err := decodeObject(it, path)
		if err != nil {
			return err
		}
		doc := &q.Documents[i]
		if err := d.str("id", &doc.ID); err != nil {
			return err
		}
		if _, ok := d.get("text"); !ok {
			return fieldErr(d.name("text"), "is required")
		}
		if err := d.str("text", &doc.Text); err != nil {
			return err
		}
		if err := d.metaMap("meta", &doc.Meta); err != nil {
			return err
		}
	}
	if err := o.boolean("chunk", &q.Chunk); err != nil {
		return err
	}
	if err := o.boolean("contextual", &q.Contextual); err != nil {
		return err
	}
	if err := o.metaMap("_meta", &q.Meta); err != nil {
		return err
	}
	*p = q
	return nil
}

// UnmarshalJSON decodes index/delete params; a malformed field yields a *FieldError naming it.
func (p *IndexDeleteParams) UnmarshalJSON(b []byte) error {
	o, err := decodeObject(b, "")
	if err != nil {
		return err
	}
	var q IndexDeleteParams
	if present, err := o.strings("ids", &q.IDs); err != nil {
		return err
	} else if !present {
		return fieldErr("ids", "is required")
	}
	if err := o.metaMap("_meta", &q.Meta); err != nil {
		return err
	}
	*p = q
	return nil
}
