// Package engine is a small, deterministic, in-memory retrieval engine: the backend of Relay's
// RCP/1 retrieval example. It knows nothing about JSON-RPC or about Relay's rcp package; it
// offers the five RCP operations as plain Go methods (Embed, Retrieve, Rerank, IndexAdd,
// IndexDelete) over wire types whose JSON form matches the RCP/1 params and results, plus the
// capability metadata that describes exactly what it implements (Capabilities).
//
// The pipeline, all of it computed on the spot without any model:
//
//   - Tokens: lower-cased runs of letters and digits, a short stop-word list, and the plural
//     "s" removed.
//   - Sparse recall: BM25 (k1 = 1.2, b = 0.75) over an inverted index.
//   - Dense recall: a 256-dimensional feature-hashing embedding of the tokens and of their
//     character trigrams (signed hashes, L2-normalised), scored by cosine similarity. Embed
//     returns the same vectors, as JSON numbers or f32-base64.
//   - Hybrid recall: the dense and sparse rankings fused by reciprocal rank fusion (RRF,
//     k = 60 unless the request says otherwise), by weighted min-max scores, or by convex
//     combination of scores normalised from each list's theoretical floor (§16.3).
//   - Rerank: late interaction in the manner of ColBERT: every token gets its own hashed
//     vector, and a passage scores the mean over the query tokens of the best cosine against
//     any of its tokens (MaxSim), so that every score a hit carries is ≥ ScoreFloor (−1).
//   - Optional stages: a metadata filter, minScore, MMR diversification, token-budget
//     packing and cursor pagination.
//
// Errors the protocol layer must translate: *FieldError (-32602 with data.field),
// *OptionError (-32005 with data.option), *DocumentTooLargeError (-32013 with data.field),
// ErrIndexVersionUnavailable (-32010), ErrCursorExpired (-32015), *IndexFullError (-32016),
// and ctx.Err() when the request's context ends (-32006 or -32014, depending on why).
//
// An Engine is safe for concurrent use: retrievals run in parallel, and writes one after the
// other, each locking the index alone only to link one document it has already tokenised.
package engine
