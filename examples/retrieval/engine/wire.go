package engine

import (
	"encoding/json"
	"maps"
	"slices"
)

// This file holds the wire types: Go mirrors of the RCP/1 params and results of retrieve
// (§7.7), rerank (§7.6), index/add (§7.10) and index/delete (§7.11), and of the capability
// metadata (§6, §6.1, §8). Their JSON tags are the protocol's field names. The params types
// decode themselves (see decode.go) so that a malformed field comes back as a *FieldError
// naming it.

// Content is a content block (§4.8). This engine reads only "text" blocks.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Data     string `json:"data,omitempty"`
	URI      string `json:"uri,omitempty"`
}

// Input is a query or a passage: on the wire either a bare string or content blocks (one
// block, or an array of them). A bare string is the same as one text block.
type Input struct {
	// Text is the bare-string form; it is used when Blocks is empty.
	Text string
	// Blocks is the content-block form.
	Blocks []Content
}

// Text returns the Input for a plain string.
func Text(s string) Input { return Input{Text: s} }

// MarshalJSON writes the string form when there are no blocks, and the array form otherwise.
func (in Input) MarshalJSON() ([]byte, error) {
	if len(in.Blocks) == 0 {
		return json.Marshal(in.Text)
	}
	return json.Marshal(in.Blocks)
}

// UnmarshalJSON accepts a string, a content block or an array of content blocks.
func (in *Input) UnmarshalJSON(b []byte) error { return in.decode(b, "query") }

// RetrieveParams are the params of retrieve (§7.7). Only Query and K are required; the
// other fields are optional and, where a pointer, nil means absent.
type RetrieveParams struct {
	Query      Input   `json:"query"`
	K          int     `json:"k"`
	Mode       string  `json:"mode,omitempty"`     // "dense", "sparse" or "hybrid" (default)
	Modality   string  `json:"modality,omitempty"` // only "text" is supported
	CandidateK *int    `json:"candidateK,omitempty"`
	Fusion     *Fusion `json:"fusion,omitempty"`
	// Rerank asks for the built-in rerank stage; nil means none (on the wire: absent or false).
	Rerank         *RerankStage   `json:"rerank,omitempty"`
	MMR            *MMR           `json:"mmr,omitempty"`
	Rewrite        string         `json:"rewrite,omitempty"` // "" means absent or false
	Filter         *Filter        `json:"filter,omitempty"`
	MinScore       *float64       `json:"minScore,omitempty"`
	Recency        *Recency       `json:"recency,omitempty"`
	Unit           string         `json:"unit,omitempty"`
	Level          *int           `json:"level,omitempty"`
	TokenBudget    *int           `json:"tokenBudget,omitempty"`
	SessionID      string         `json:"sessionId,omitempty"`
	IncludeText    *bool          `json:"includeText,omitempty"` // default true
	IncludeVectors bool           `json:"includeVectors,omitempty"`
	Seed           *int           `json:"seed,omitempty"`
	IndexVersion   string         `json:"indexVersion,omitempty"`
	Strict         *bool          `json:"strict,omitempty"` // default true
	Cursor         string         `json:"cursor,omitempty"`
	Meta           map[string]any `json:"_meta,omitempty"`
}

// Fusion is retrieve's fusion option.
type Fusion struct {
	Method  string             `json:"method,omitempty"`  // "rrf" (default), "weighted" or "convex" (§16.3)
	Weights map[string]float64 `json:"weights,omitempty"` // rrf and weighted: per-list weights, "dense" and "sparse" (default 1)
	RRFK    *int               `json:"rrfK,omitempty"`    // rrf: the constant (default 60)
	Alpha   *float64           `json:"alpha,omitempty"`   // convex: the dense list's weight, the sparse list's is 1 − alpha (default 0.5)
}

// RerankStage is retrieve's rerank option.
type RerankStage struct {
	Method string `json:"method,omitempty"` // "colbert" (default)
	Model  string `json:"model,omitempty"`  // no named models exist; must be empty
	TopN   *int   `json:"topN,omitempty"`
}

// MMR is retrieve's diversification option.
type MMR struct {
	Lambda *float64 `json:"lambda,omitempty"` // 0 = most diverse, 1 = pure relevance; default 0.5
}

// Recency is retrieve's recency option. This engine has no time fields and does not honour it.
type Recency struct {
	Field        string   `json:"field,omitempty"`
	HalfLifeDays *float64 `json:"halfLifeDays,omitempty"`
}

// Filter is a node of a metadata filter (§8): a comparison (Field, Op, Value) or exactly one
// of the combinators And, Or, Not.
type Filter struct {
	Field string   `json:"field,omitempty"`
	Op    string   `json:"op,omitempty"`
	Value any      `json:"value,omitempty"`
	And   []Filter `json:"and,omitempty"`
	Or    []Filter `json:"or,omitempty"`
	Not   *Filter  `json:"not,omitempty"`
}

// RetrieveResult is the result of retrieve.
type RetrieveResult struct {
	Hits         []Hit  `json:"hits"`
	NextCursor   string `json:"nextCursor,omitempty"`
	IndexVersion string `json:"indexVersion,omitempty"`
	Usage        *Usage `json:"usage,omitempty"`
}

// Hit is one ranked result.
type Hit struct {
	ID     string             `json:"id"`
	Score  float64            `json:"score"`
	Text   string             `json:"text,omitempty"`
	Unit   string             `json:"unit,omitempty"`
	Meta   map[string]any     `json:"meta,omitempty"`
	Vector []float64          `json:"vector,omitempty"`
	Scores map[string]float64 `json:"scores,omitempty"` // per stage: dense, sparse, rrf, rerank, mmr
}

// Usage reports what a retrieve actually did. LatencyMs varies from call to call; everything
// else is deterministic.
type Usage struct {
	Candidates int      `json:"candidates"`
	Reranked   int      `json:"reranked"`
	LatencyMs  float64  `json:"latencyMs"`
	Tokens     int      `json:"tokens,omitempty"` // words packed under tokenBudget
	Notes      []string `json:"notes,omitempty"`
}

// RerankParams are the params of rerank (§7.6).
type RerankParams struct {
	Query    Input          `json:"query"`
	Passages []Input        `json:"passages"`
	Method   string         `json:"method,omitempty"` // "colbert" (default)
	Model    string         `json:"model,omitempty"`
	TopN     *int           `json:"topN,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// RerankResult is the result of rerank: Scores[i] belongs to Passages[i]; Order lists passage
// indices best first, cut to topN when one was given. Results says the same as Order, each
// index with its score, for clients that read a list of scored passages.
type RerankResult struct {
	Scores  []float64     `json:"scores"`
	Order   []int         `json:"order,omitempty"`
	Results []RerankScore `json:"results"`
}

// RerankScore is one passage of RerankResult.Results: its index in Passages and its score.
type RerankScore struct {
	Index int     `json:"index"`
	Score float64 `json:"score"`
}

// IndexAddParams are the params of index/add (§7.10).
type IndexAddParams struct {
	Documents  []IndexDocument `json:"documents"`
	Chunk      bool            `json:"chunk,omitempty"`      // not supported
	Contextual bool            `json:"contextual,omitempty"` // not supported
	Meta       map[string]any  `json:"_meta,omitempty"`
}

// IndexDocument is one document of index/add. Without an ID the engine mints one.
type IndexDocument struct {
	ID   string         `json:"id,omitempty"`
	Text string         `json:"text"`
	Meta map[string]any `json:"meta,omitempty"`
}

// IndexAddResult lists the stored ids, one per input document, in input order.
type IndexAddResult struct {
	IDs []string `json:"ids"`
}

// IndexDeleteParams are the params of index/delete (§7.11).
type IndexDeleteParams struct {
	IDs  []string       `json:"ids"`
	Meta map[string]any `json:"_meta,omitempty"`
}

// IndexDeleteResult counts the documents this call removed.
type IndexDeleteResult struct {
	Deleted int `json:"deleted"`
}

// Capabilities is the capability metadata of what this engine implements (§6). Nil members
// are not offered. Streaming, log and the lifecycle are the protocol layer's to advertise.
type Capabilities struct {
	Embed      *EmbedCapability    `json:"embed,omitempty"`
	Retrieve   *RetrieveCapability `json:"retrieve,omitempty"`
	Rerank     *RerankCapability   `json:"rerank,omitempty"`
	Index      *IndexCapability    `json:"index,omitempty"`
	Filter     *FilterCapability   `json:"filter,omitempty"`
	Pagination *struct{}           `json:"pagination,omitempty"`
}

// Map returns the capabilities keyed by their RCP names, for a server's capability object.
func (c Capabilities) Map() map[string]any {
	m := map[string]any{}
	if c.Embed != nil {
		m["embed"] = c.Embed
	}
	if c.Retrieve != nil {
		m["retrieve"] = c.Retrieve
	}
	if c.Rerank != nil {
		m["rerank"] = c.Rerank
	}
	if c.Index != nil {
		m["index"] = c.Index
	}
	if c.Filter != nil {
		m["filter"] = c.Filter
	}
	if c.Pagination != nil {
		m["pagination"] = c.Pagination
	}
	return m
}

// RetrieveCapability is the retrieve capability's metadata (§6.1).
type RetrieveCapability struct {
	MaxK          int      `json:"maxK"`
	Modes         []string `json:"modes"`
	Fusion        []string `json:"fusion"`
	MMR           bool     `json:"mmr"`
	RerankBuiltin bool     `json:"rerankBuiltin"`
	Units         []string `json:"units"`
	TokenBudget   bool     `json:"tokenBudget"`
	ScoreScale    string   `json:"scoreScale"`
	ScoreFloor    *float64 `json:"scoreFloor,omitempty"`
	DefaultMode   string   `json:"defaultMode"`
	Deterministic bool     `json:"deterministic"`
	Snapshots     bool     `json:"snapshots"`
	Modalities    []string `json:"modalities"`
}

// EmbedCapability is the embed capability's metadata (§6, §7.3, §7.3.1).
type EmbedCapability struct {
	Dimension  int      `json:"dimension"`
	Identity   string   `json:"identity"`
	BatchLimit int      `json:"batchLimit"`
	Normalized bool     `json:"normalized"`
	Modalities []string `json:"modalities"`
	Encodings  []string `json:"encodings"`
}

// RerankCapability is the rerank capability's metadata.
type RerankCapability struct {
	Methods       []string `json:"methods"`
	MaxCandidates int      `json:"maxCandidates"`
}

// IndexCapability is the index capability's metadata.
type IndexCapability struct {
	Writable bool `json:"writable"`
}

// FilterCapability is the filter capability's metadata: field name to field type, and the
// operators accepted.
type FilterCapability struct {
	Fields    map[string]string `json:"fields"`
	Operators []string          `json:"operators"`
}

// Capabilities returns what this engine implements, for the protocol layer to advertise.
func (e *Engine) Capabilities() Capabilities {
	c := Capabilities{
		Embed: &EmbedCapability{Dimension: Dim, Identity: EmbedIdentity, BatchLimit: EmbedBatchLimit,
			Normalized: true, Modalities: []string{"text"}, Encodings: []string{EncodingJSON, EncodingF32Base64}},
		Retrieve: &RetrieveCapability{
			MaxK:          e.cfg.MaxK,
			Modes:         []string{ModeDense, ModeSparse, ModeHybrid},
			Fusion:        []string{FusionRRF, FusionWeighted, FusionConvex},
			MMR:           true,
			RerankBuiltin: true,
			Units:         []string{"document"},
			TokenBudget:   true,
			// Cosine, BM25 and the fused scores do not share a scale, and BM25 has no
			// ceiling, so no scale is claimed; every one of them is ≥ ScoreFloor.
			ScoreScale:    "unbounded",
			ScoreFloor:    ptr(ScoreFloor),
			DefaultMode:   ModeHybrid,
			Deterministic: true,
			Snapshots:     true,
			Modalities:    []string{"text"},
		},
		Rerank:     &RerankCapability{Methods: []string{"colbert"}, MaxCandidates: e.cfg.MaxRerankCandidates},
		Index:      &IndexCapability{Writable: true},
		Pagination: &struct{}{},
	}
	if len(e.cfg.FilterFields) > 0 {
		fields := map[string]string{}
		for _, f := range e.cfg.FilterFields {
			fields[f] = "keyword"
		}
		c.Filter = &FilterCapability{Fields: fields, Operators: slices.Clone(filterOperators)}
	}
	return c
}

// cloneJSON deep-copies a decoded JSON value (maps, slices, scalars), so that documents and
// hits never share mutable metadata with the caller. A NaN or infinite float becomes 0: JSON
// cannot carry it.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneMeta(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneJSON(e)
		}
		return out
	case []string:
		return slices.Clone(x)
	case float64:
		return finite(x)
	case float32:
		return float32(finite(float64(x)))
	default:
		return v
	}
}

func cloneMeta(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = cloneJSON(v)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
