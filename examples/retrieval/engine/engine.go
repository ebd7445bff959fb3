package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Document is a stored text with its identifier and metadata.
type Document struct {
	ID       string         `json:"id"`
	Text     string         `json:"text"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Config sets the engine's limits. Zero fields take their defaults.
type Config struct {
	// MaxK is the most hits one retrieve returns; a larger k is clamped to it. Default 100.
	MaxK int
	// MaxCandidateK is the most candidates one retrieve recalls; a larger candidateK is
	// clamped to it. Default 1000.
	MaxCandidateK int
	// MaxRerankCandidates is the most passages one rerank scores (a longer list is refused)
	// and the most candidates retrieve's rerank stage rescores (a larger topN is clamped).
	// Default 200.
	MaxRerankCandidates int
	// FilterFields are the metadata fields a filter may name, all of type "keyword" (exact
	// string match). Default "package" and "top", the fields of the default corpus. An empty
	// non-nil slice turns filtering off.
	FilterFields []string
}

func (c Config) withDefaults() Config {
	if c.MaxK <= 0 {
		c.MaxK = 100
	}
	if c.MaxCandidateK <= 0 {
		c.MaxCandidateK = 1000
	}
	if c.MaxRerankCandidates <= 0 {
		c.MaxRerankCandidates = 200
	}
	c.MaxCandidateK = max(c.MaxCandidateK, c.MaxRerankCandidates, c.MaxK)
	c.MaxRerankCandidates = max(c.MaxRerankCandidates, c.MaxK)
	if c.FilterFields == nil {
		c.FilterFields = []string{"package", "top"}
	}
	c.FilterFields = slices.Clone(c.FilterFields)
	return c
}

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Engine is an in-memory index with dense, sparse and hybrid retrieval and a late-interaction
// reranker. It is safe for concurrent use: reads share a lock, writes hold it alone.
type Engine struct {
	cfg Config

	mu       sync.RWMutex
	byID     map[string]*entry
	slots    []*entry // a document's position in the scoring arrays; nil when free
	free     []int32
	postings map[string][]posting // term -> the documents holding it
	totalLen int                  // tokens over all documents, for BM25's average length
	digest   uint64               // XOR of the documents' content hashes
	minted   uint64               // the last number used for a minted id
}

// entry is a stored document with everything scoring needs, computed when it is added.
type entry struct {
	id    string
	text  string
	meta  map[string]any
	slot  int32
	len   int         // tokens, for BM25
	terms []string    // distinct terms, sorted
	vec   []float32   // dense embedding
	toks  []sparseVec // one vector per distinct term, for MaxSim
	words int         // words, for tokenBudget
	hash  uint64      // content hash, for the index version
}

type posting struct {
	slot int32
	tf   int32
}

// New returns an engine holding docs (which may be nil).
func New(cfg Config, docs []Document) *Engine {
	e := &Engine{cfg: cfg.withDefaults(), byID: map[string]*entry{}, postings: map[string][]posting{}}
	e.Add(docs)
	return e
}

// NewDefault returns an engine with the default configuration, holding DefaultCorpus.
func NewDefault() *Engine { return New(Config{}, DefaultCorpus()) }

// Len returns the number of stored documents.
func (e *Engine) Len() int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.byID)
}

// IndexVersion identifies the current contents of the index: two engines holding the same
// documents (ids, texts and metadata) report the same version, whatever order they were
// added in, and any change gives a new one.
func (e *Engine) IndexVersion() string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.versionLocked()
}

func (e *Engine) versionLocked() string {
	return fmt.Sprintf("%d-%016x", len(e.byID), e.digest)
}

// Add upserts docs in order and returns their ids in the same order. A document with an id
// that is already stored replaces it; a document without an id gets a minted one ("doc-N"),
// so adding it twice stores it twice. Metadata is copied; a NaN or infinite number in it is
// stored as 0.
func (e *Engine) Add(docs []Document) []string {
	ids := make([]string, len(docs))
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, d := range docs {
		id := d.ID
		if id == "" {
			id = e.mintLocked()
		}
		if old, ok := e.byID[id]; ok {
			e.removeLocked(old)
		}
		e.insertLocked(id, d.Text, cloneMeta(d.Metadata))
		ids[i] = id
	}
	return ids
}

// Delete removes the documents with these ids and returns how many it removed. Ids that are
// not stored are skipped, so repeating a delete removes nothing more.
func (e *Engine) Delete(ids []string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, id := range ids {
		if old, ok := e.byID[id]; ok {
			e.removeLocked(old)
			n++
		}
	}
	return n
}

func (e *Engine) mintLocked() string {
	for {
		e.minted++
		id := fmt.Sprintf("doc-%d", e.minted)
		if _, taken := e.byID[id]; !taken {
			return id
		}
	}
}

func (e *Engine) insertLocked(id, text string, meta map[string]any) {
	toks := tokenize(text)
	tf := map[string]int32{}
	for _, t := range toks {
		tf[t]++
	}
	d := &entry{id: id, text: text, meta: meta, len: len(toks), words: wordCount(text),
		vec: embed(toks), hash: contentHash(id, text, meta)}
	for t := range tf {
		d.terms = append(d.terms, t)
	}
	slices.Sort(d.terms)
	d.toks = make([]sparseVec, len(d.terms))
	for i, t := range d.terms {
		d.toks[i] = tokenVector(t)
	}

	if n := len(e.free); n > 0 {
		d.slot = e.free[n-1]
		e.free = e.free[:n-1]
		e.slots[d.slot] = d
	} else {
		d.slot = int32(len(e.slots))
		e.slots = append(e.slots, d)
	}
	for _, t := range d.terms {
		e.postings[t] = append(e.postings[t], posting{slot: d.slot, tf: tf[t]})
	}
	e.byID[id] = d
	e.totalLen += d.len
	e.digest ^= d.hash
}

func (e *Engine) removeLocked(d *entry) {
	for _, t := range d.terms {
		ps := slices.DeleteFunc(e.postings[t], func(p posting) bool { return p.slot == d.slot })
		if len(ps) == 0 {
			delete(e.postings, t)
		} else {
			e.postings[t] = ps
		}
	}
	e.slots[d.slot] = nil
	e.free = append(e.free, d.slot)
	delete(e.byID, d.id)
	e.totalLen -= d.len
	e.digest ^= d.hash
}

// contentHash hashes a document's id, text and metadata (encoding/json sorts map keys, so
// equal metadata hashes equally).
func contentHash(id, text string, meta map[string]any) uint64 {
	m, err := json.Marshal(meta)
	if err != nil { // metadata that JSON cannot encode still needs a hash
		m = fmt.Appendf(nil, "%v", meta)
	}
	return hash64('d', id+"\x00"+text+"\x00"+string(m))
}

// IndexAdd serves index/add: it upserts the documents and returns their ids in input order.
// Server-side chunking and contextual chunks are not implemented (*OptionError).
func (e *Engine) IndexAdd(ctx context.Context, p IndexAddParams) (IndexAddResult, error) {
	if err := ctx.Err(); err != nil {
		return IndexAddResult{}, err
	}
	if p.Chunk {
		return IndexAddResult{}, &OptionError{Option: "chunk", Value: "true"}
	}
	if p.Contextual {
		return IndexAddResult{}, &OptionError{Option: "contextual", Value: "true"}
	}
	docs := make([]Document, len(p.Documents))
	for i, d := range p.Documents {
		docs[i] = Document{ID: d.ID, Text: d.Text, Metadata: d.Meta}
	}
	return IndexAddResult{IDs: e.Add(docs)}, nil
}

// IndexDelete serves index/delete: deleting an id that is not stored is not an error, and
// Deleted counts only the documents this call removed.
func (e *Engine) IndexDelete(ctx context.Context, p IndexDeleteParams) (IndexDeleteResult, error) {
	if err := ctx.Err(); err != nil {
		return IndexDeleteResult{}, err
	}
	return IndexDeleteResult{Deleted: e.Delete(p.IDs)}, nil
}
