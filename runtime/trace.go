package runtime

import (
	"context"
	"regexp"
)

// TraceContext is the W3C trace context of a request (traceparent and tracestate), taken from
// the request's _meta or the transport's headers, so that a handler's own spans and logs join
// the caller's trace.
type TraceContext struct {
	Parent string // traceparent: version-traceid-parentid-flags
	State  string // tracestate, optional
}

// TraceID returns the 32-hex-digit trace id of a valid traceparent, or "".
func (t TraceContext) TraceID() string {
	if !traceparentRE.MatchString(t.Parent) {
		return ""
	}
	return t.Parent[3:35]
}

var traceparentRE = regexp.MustCompile(`^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

type traceKey struct{}

// WithTrace returns a context carrying t, unless t's traceparent is not valid W3C syntax.
func WithTrace(ctx context.Context, t TraceContext) context.Context {
	if t.TraceID() == "" {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, t)
}

// TraceFrom returns the request's trace context; ok is false when it has none.
func TraceFrom(ctx context.Context) (t TraceContext, ok bool) {
	t, ok = ctx.Value(traceKey{}).(TraceContext)
	return t, ok
}
