package rcp

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// Request is one RCP request as its handler sees it.
type Request struct {
	rt            *runtime.Request
	progressToken json.RawMessage // nil unless the client asked and the server streams
	logLevel      int
	lastProgress  float64
}

// Method returns the method being served.
func (r *Request) Method() string { return r.rt.Method }

// ID returns the request's id, exactly as the client sent it.
func (r *Request) ID() jsonrpc.ID { return r.rt.ID }

// Params returns the raw params object.
func (r *Request) Params() json.RawMessage { return r.rt.Params }

// Decode decodes the params into v, answering -32602 naming the params when they do not fit.
func (r *Request) Decode(v any) error {
	if r.rt.Params == nil {
		return nil
	}
	if err := json.Unmarshal(r.rt.Params, v); err != nil {
		field := "params"
		if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
			field = te.Field
		}
		return InvalidParams(field, fmt.Sprintf("malformed params: %v", err))
	}
	return nil
}

// Streaming reports whether Progress reaches the client.
func (r *Request) Streaming() bool { return r.progressToken != nil }

// Progress reports progress from 0 to 1 at a pipeline stage, with optional partial results.
// It does nothing unless the request carried a progressToken and the server advertises
// streaming. Values outside [0, 1], NaN, and values that do not increase are dropped.
func (r *Request) Progress(progress float64, stage, message string, partial any) error {
	if r.progressToken == nil || math.IsNaN(progress) || progress < 0 || progress > 1 || progress < r.lastProgress {
		return nil
	}
	r.lastProgress = progress
	return r.rt.Notify("notifications/progress", struct {
		Token    json.RawMessage `json:"progressToken"`
		Progress float64         `json:"progress"`
		Stage    string          `json:"stage,omitempty"`
		Message  string          `json:"message,omitempty"`
		Partial  any             `json:"partial,omitempty"`
	}{r.progressToken, progress, stage, message, partial})
}

// Log sends notifications/log if the server advertises log, the client accepts logs, and
// level ("debug", "info", "notice", "warning" or "error") is at or above the client's level.
func (r *Request) Log(level, message string, data any) error {
	rank, ok := logLevels[level]
	if !ok {
		return fmt.Errorf("rcp: unknown log level %q", level)
	}
	if r.logLevel < 0 || rank < r.logLevel {
		return nil
	}
	return r.rt.Notify("notifications/log", struct {
		Level   string `json:"level"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}{level, message, data})
}
