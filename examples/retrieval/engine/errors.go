package engine

import (
	"errors"
	"fmt"
)

// FieldError reports a structurally invalid parameter: a missing required field, a value of
// the wrong JSON type, a negative or fractional count, a broken funnel. RCP maps it to -32602
// (InvalidParams) with error.data.field = Field.
type FieldError struct {
	// Field is the offending parameter's path, such as "k", "rerank.topN",
	// "documents[2].text" or "filter.package".
	Field string
	// Reason says what is wrong, in a short clause.
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("invalid params: %s: %s", e.Field, e.Reason)
}

// OptionError reports a well-formed option value this engine does not implement: a mode,
// fusion method, rerank method, modality or filter operator outside what Capabilities
// advertises. RCP maps it to -32005 (OptionUnsupported) with error.data.option = Option.
type OptionError struct {
	// Option is the parameter that carried the value, such as "mode" or "rerank.method".
	Option string
	// Value is the value that was asked for.
	Value string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("option unsupported: %s %q", e.Option, e.Value)
}

// DocumentTooLargeError reports a document of index/add over Config.MaxDocumentBytes. RCP
// maps it to -32013 (PayloadTooLarge, §12: not retryable as it is) with error.data.field =
// Field; the client splits the document into smaller ones.
type DocumentTooLargeError struct {
	// Field is the document's path in the params, such as "documents[2]".
	Field string
	// Size is the document's size: the bytes of its text and of its metadata as JSON.
	Size int
	// Max is the limit, Config.MaxDocumentBytes.
	Max int
}

func (e *DocumentTooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the limit of %d bytes for one document (text and metadata); split it into smaller documents",
		e.Field, e.Size, e.Max)
}

// IndexFullError reports an index/add that would take the index past Config.MaxDocuments or
// Config.MaxIndexBytes; nothing of it was stored. RCP maps it to -32016 (Conflict, §12): the
// request conflicts with what the index holds, and succeeds once index/delete has made room.
type IndexFullError struct {
	// Limit is the limit in the way: "documents" or "bytes".
	Limit string
	// Max is its value.
	Max int
	// Stored is how many documents, or bytes, the index holds.
	Stored int
	// Needed is how many it would hold after the request.
	Needed int
}

func (e *IndexFullError) Error() string {
	return fmt.Sprintf("the index holds %d %s and this index/add would take it to %d, over the limit of %d; delete documents with index/delete, or add fewer",
		e.Stored, e.Limit, e.Needed, e.Max)
}

var (
	// ErrIndexVersionUnavailable is returned when a retrieve pins an indexVersion that is no
	// longer the engine's current snapshot: only the current one is kept, and serving another
	// one silently is not allowed. RCP maps it to -32010 (BackendUnavailable).
	ErrIndexVersionUnavailable = errors.New("engine: the pinned index version is no longer available")

	// ErrCursorExpired is returned when a pagination cursor refers to a snapshot of the index
	// that has since changed. RCP maps it to -32015 (NotFound); the client restarts paging.
	ErrCursorExpired = errors.New("engine: the cursor has expired because the index changed; restart pagination")
)

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
