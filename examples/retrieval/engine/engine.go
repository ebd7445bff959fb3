package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
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

	// MaxDocumentBytes is the largest document index/add takes, counting the bytes of its
	// text and of its metadata encoded as JSON; a larger one is refused with a
	// *DocumentTooLargeError (-32013). Default 1 MiB.
	MaxDocumentBytes int
	// MaxDocuments is the most documents the index holds; an index/add that would store more
	// is refused, all of it, with an *IndexFullError (-32016). Default 100,000.
	MaxDocuments int
	// MaxIndexBytes is the most document bytes (counted as for MaxDocumentBytes) the index
	// holds; an index/add that would store more is refused, all of it, with an
	// *IndexFullError (-32016). Default 16 MiB. What the engine keeps for a byte of text
	// depends on how many distinct words it brings: about 2 bytes for prose, and up to 36
	// for text made only of short words seen nowhere else (each has its own vector for
	// rerank), so about 600 MiB for a full index of such text at the default.
	//
	// The three limits bound index/add, the method clients call; Add, for the program that
	// builds the engine, stores what it is given.
	MaxIndexBytes int
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
	if c.MaxDocumentBytes <= 0 {
		c.MaxDocumentBytes = 1 << 20
	}
	if c.MaxDocuments <= 0 {
		c.MaxDocuments = 100_000
	}
	if c.MaxIndexBytes <= 0 {
		c.MaxIndexBytes = 16 << 20
	}
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
// reranker. It is safe for concurrent use: reads share a lock, and a write holds it alone only
// to link one document whose tokens and vectors it computed before, so that a large write
// holds up the reads for no longer than linking its largest document takes.
type Engine struct {
	cfg Config

	// write is held by a write from its check of the limits to its last document, so that
	// writes apply one after the other and what one checked stays true; only writes change
	// the index, so a write may read it holding write alone.
	write sync.Mutex
	// mu guards the index: readers share it, and a write holds it alone for one document.
	mu       sync.RWMutex
	byID     map[string]*entry
	slots    []*entry // a document's position in the scoring arrays; nil when free
	free     []int32
	postings map[string][]posting // term -> the documents holding it
	totalLen int                  // tokens over all documents, for BM25's average length
	bytes    int                  // the documents' sizes, as Config.MaxIndexBytes counts them
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
	size  int         // bytes of text and of metadata as JSON, for the index limits
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
// stored as 0. The documents are tokenised and embedded before any lock is taken, and a
// retrieve running meanwhile sees each document either whole or not at all.
func (e *Engine) Add(docs []Document) []string {
	ps := make([]*prepared, len(docs))
	for i, d := range docs {
		meta := cloneMeta(d.Metadata)
		ps[i] = prepare(d.Text, meta, metaJSON(meta))
	}
	e.write.Lock()
	defer e.write.Unlock()
	return e.link(docs, ps)
}

// link stores prepared documents, holding mu for one document at a time; the caller holds
// write.
func (e *Engine) link(docs []Document, ps []*prepared) []string {
	ids := make([]string, len(docs))
	for i, d := range docs {
		e.mu.Lock()
		id := d.ID
		if id == "" {
			id = e.mintLocked()
		}
		if old, ok := e.byID[id]; ok {
			e.removeLocked(old)
		}
		e.insertLocked(id, ps[i])
		e.mu.Unlock()
		ids[i] = id
	}
	return ids
}

// Delete removes the documents with these ids and returns how many it removed. Ids that are
// not stored are skipped, so repeating a delete removes nothing more.
func (e *Engine) Delete(ids []string) int {
	e.write.Lock()
	defer e.write.Unlock()
	n := 0
	for _, id := range ids {
		if old, ok := e.byID[id]; ok {
			e.mu.Lock()
			e.removeLocked(old)
			e.mu.Unlock()
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

// prepared is a document with everything scoring needs but its id and its place in the
// index: the work of adding it that needs no lock.
type prepared struct {
	d       *entry
	tf      []int32 // term frequencies, in the order of d.terms
	content fnv     // the content hash so far, over the text and the metadata
}

// metaJSON encodes metadata for the content hash and the document's size (encoding/json
// sorts map keys, so equal metadata encodes equally).
func metaJSON(meta map[string]any) []byte {
	m, err := json.Marshal(meta)
	if err != nil { // metadata that JSON cannot encode still needs a hash
		m = fmt.Appendf(nil, "%v", meta)
	}
	return m
}

// docSize is what a document counts against the limits: its text and its metadata as JSON
// (m), if it has any.
func docSize(text string, meta map[string]any, m []byte) int {
	if len(meta) == 0 {
		return len(text)
	}
	return len(text) + len(m)
}

// prepare tokenises and embeds a document in one pass over its text, keeping only its
// distinct terms; m is its metadata as metaJSON encodes it.
func prepare(text string, meta map[string]any, m []byte) *prepared {
	d := &entry{text: text, meta: meta, vec: make([]float32, Dim), size: docSize(text, meta, m)}
	tf := map[string]int32{}
	eachWord(text, func(w string) {
		d.words++
		if t, ok := token(w); ok {
			d.len++
			tf[t]++
			addToken(d.vec, t)
		}
	})
	normalize(d.vec)
	d.terms = slices.Sorted(maps.Keys(tf))
	p := &prepared{d: d, tf: make([]int32, len(d.terms)),
		content: newFNV('d').add(text).add("\x00").add(string(m)).add("\x00")}
	d.toks = make([]sparseVec, len(d.terms))
	for i, t := range d.terms {
		p.tf[i] = tf[t]
		d.toks[i] = tokenVector(t)
	}
	return p
}

// insertLocked links a prepared document into the index under id.
func (e *Engine) insertLocked(id string, p *prepared) {
	d := p.d
	d.id, d.hash = id, p.content.add(id).sum()
	if n := len(e.free); n > 0 {
		d.slot = e.free[n-1]
		e.free = e.free[:n-1]
		e.slots[d.slot] = d
	} else {
		d.slot = int32(len(e.slots))
		e.slots = append(e.slots, d)
	}
	for i, t := range d.terms {
		e.postings[t] = append(e.postings[t], posting{slot: d.slot, tf: p.tf[i]})
	}
	e.byID[id] = d
	e.totalLen += d.len
	e.bytes += d.size
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
	e.bytes -= d.size
	e.digest ^= d.hash
}

// checkRoom returns an *IndexFullError when storing docs (sizes[i] bytes each) would
// take the index past Config.MaxDocuments or Config.MaxIndexBytes, counting the documents
// they replace as gone.
// The caller holds write or mu.
func (e *Engine) checkRoom(docs []Document, sizes []int) error {
	n, bytes := len(e.byID), e.bytes
	batch := map[string]int{} // ids stored by this call so far, and their sizes
	for i, d := range docs {
		if d.ID != "" { // a minted id is a new document
			if old, ok := batch[d.ID]; ok {
				n, bytes = n-1, bytes-old
			} else if old, ok := e.byID[d.ID]; ok {
				n, bytes = n-1, bytes-old.size
			}
			batch[d.ID] = sizes[i]
		}
		n, bytes = n+1, bytes+sizes[i]
	}
	switch {
	case n > e.cfg.MaxDocuments:
		return &IndexFullError{Limit: "documents", Max: e.cfg.MaxDocuments, Stored: len(e.byID), Needed: n}
	case bytes > e.cfg.MaxIndexBytes:
		return &IndexFullError{Limit: "bytes", Max: e.cfg.MaxIndexBytes, Stored: e.bytes, Needed: bytes}
	}
	return nil
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
	// Each document is measured, the room in the index checked, and only then are the
	// documents tokenised and embedded, all before any lock is held alone (§7.10).
	docs := make([]Document, len(p.Documents))
	metas := make([][]byte, len(p.Documents))
	sizes := make([]int, len(p.Documents))
	for i, d := range p.Documents {
		docs[i] = Document{ID: d.ID, Text: d.Text, Metadata: cloneMeta(d.Meta)}
		metas[i] = metaJSON(docs[i].Metadata)
		sizes[i] = docSize(d.Text, docs[i].Metadata, metas[i])
		if sizes[i] > e.cfg.MaxDocumentBytes {
			return IndexAddResult{}, &DocumentTooLargeError{Field: fmt.Sprintf("documents[%d]", i),
				Size: sizes[i], Max: e.cfg.MaxDocumentBytes}
		}
	}
	e.mu.RLock()
	err := e.checkRoom(docs, sizes) // refused now, the documents need not be tokenised
	e.mu.RUnlock()
	if err != nil {
		return IndexAddResult{}, err
	}
	ps := make([]*prepared, len(docs))
	for i, d := range docs {
		if err := ctx.Err(); err != nil {
			return IndexAddResult{}, err
		}
		ps[i] = prepare(d.Text, d.Metadata, metas[i])
	}
	e.write.Lock()
	defer e.write.Unlock()
	if err := e.checkRoom(docs, sizes); err != nil { // another write came first
		return IndexAddResult{}, err
	}
	return IndexAddResult{IDs: e.link(docs, ps)}, nil
}

// IndexDelete serves index/delete: deleting an id that is not stored is not an error, and
// Deleted counts only the documents this call removed.
func (e *Engine) IndexDelete(ctx context.Context, p IndexDeleteParams) (IndexDeleteResult, error) {
	if err := ctx.Err(); err != nil {
		return IndexDeleteResult{}, err
	}
	return IndexDeleteResult{Deleted: e.Delete(p.IDs)}, nil
}
