package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// metaProtocolVersion is where a 2026-07-28 request names its protocol revision in _meta.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// observer is the runtime.Observer of one server: t's providers, p's conventions.
type observer struct {
	t *Telemetry
	p Protocol
}

// Start implements runtime.Observer: it starts the request's span, a server span named by the
// protocol's conventions, parented on the trace context in the request's _meta (traceparent,
// tracestate) or else the one the transport carried (an HTTP traceparent header); the
// returned end ends it and records the duration.
func (o observer) Start(ctx context.Context, req *runtime.Request) (context.Context, func(error)) {
	t := o.t
	start := time.Now()
	params := req.Params
	meta := jsonrpc.Field(params, "_meta")
	attrs := make([]attribute.KeyValue, 0, 6)
	name := req.Method
	if o.p == RCP {
		attrs = append(attrs, semconv.RPCSystemNameJSONRPC, semconv.RPCMethodKey.String(req.Method))
	} else {
		attrs = append(attrs, semconv.McpMethodNameKey.String(req.Method))
		attrs, name = mcpTarget(req.Method, params, meta, attrs)
	}
	// The span's attributes but the request and session ids: one series per id is too many.
	metricAttrs := attrs
	attrs = append(attrs, semconv.JSONRPCRequestID(requestID(req.ID)))
	if id, ok := runtime.SessionIDFrom(ctx); ok && o.p == MCP {
		attrs = append(attrs, semconv.McpSessionIDKey.String(id))
	}

	if t.tracer != nil {
		ctx = t.prop.Extract(ctx, carrier{meta: meta, ctx: ctx})
		var span trace.Span
		ctx, span = t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithTimestamp(start), trace.WithAttributes(attrs...))
		// Handlers' logs, and what a proxy passes on to its child, now name this span.
		sc := span.SpanContext()
		ctx = runtime.WithTrace(ctx, runtime.TraceContext{
			Parent: "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String(),
			State:  sc.TraceState().String()})
		return ctx, func(err error) {
			if code, ok := jsonrpcCode(err); ok {
				span.SetAttributes(semconv.RPCResponseStatusCodeKey.String(strconv.FormatInt(code, 10)))
			}
			endSpan(span, err)
			record(t.duration[o.p], start, metricAttrs, err)
		}
	}
	return ctx, func(err error) { record(t.duration[o.p], start, metricAttrs, err) }
}

// mcpTarget adds what an MCP request is about (its tool, prompt or resource, and the
// protocol revision in its _meta) to attrs, and returns the span name "{method} {target}".
func mcpTarget(method string, params, meta json.RawMessage, attrs []attribute.KeyValue) ([]attribute.KeyValue, string) {
	name := method
	switch method {
	case "tools/call":
		if tool, ok := str(jsonrpc.Field(params, "name")); ok {
			attrs = append(attrs, semconv.GenAIToolName(tool), semconv.GenAIOperationNameExecuteTool)
			name += " " + tool
		}
	case "prompts/get":
		if prompt, ok := str(jsonrpc.Field(params, "name")); ok {
			attrs = append(attrs, semconv.GenAIPromptNameKey.String(prompt))
			name += " " + prompt
		}
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		if uri, ok := str(jsonrpc.Field(params, "uri")); ok {
			attrs = append(attrs, semconv.McpResourceURIKey.String(uri))
			name += " " + uri
		}
	}
	if v, ok := str(jsonrpc.Field(meta, metaProtocolVersion)); ok {
		attrs = append(attrs, semconv.McpProtocolVersionKey.String(v))
	}
	return attrs, name
}

// endSpan ends a request's span, with error.type and an error status when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// record adds a request's duration to h, if there is one, with error.type when err is not nil.
func record(h metric.Float64Histogram, start time.Time, attrs []attribute.KeyValue, err error) {
	if h == nil {
		return
	}
	if err != nil {
		attrs = append(attrs[:len(attrs):len(attrs)], semconv.ErrorTypeKey.String(errorType(err)))
	}
	h.Record(context.Background(), time.Since(start).Seconds(), metric.WithAttributes(attrs...))
}

// errorType is error.type for a request's error: the JSON-RPC error code when it is one,
// "cancelled" or "timeout" when its context ended, and _OTHER otherwise.
func errorType(err error) string {
	if code, ok := jsonrpcCode(err); ok {
		return strconv.FormatInt(code, 10)
	}
	var failed *runtime.ResultFailure
	switch {
	case errors.As(err, &failed):
		return failed.Type // a result that says it failed: tool_error
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "_OTHER"
}

func jsonrpcCode(err error) (int64, bool) {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code, true
	}
	return 0, false
}

// requestID is a JSON-RPC id as the semantic conventions want it: a string id without its
// quotes, a number as written.
func requestID(id jsonrpc.ID) string {
	if s, ok := str(json.RawMessage(id)); ok {
		return s
	}
	return string(id)
}

// str reads a JSON string.
func str(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// carrier reads the W3C trace context of a request: traceparent and tracestate from its
// _meta, or else from the transport's (runtime.TraceFrom).
type carrier struct {
	meta json.RawMessage
	ctx  context.Context
}

var _ propagation.TextMapCarrier = carrier{}

func (c carrier) Get(key string) string {
	if s, ok := str(jsonrpc.Field(c.meta, key)); ok {
		return s
	}
	if jsonrpc.Field(c.meta, "traceparent") != nil {
		return "" // the request's own context wins whole: no tracestate of the transport's with it
	}
	if tc, ok := runtime.TraceFrom(c.ctx); ok {
		switch key {
		case "traceparent":
			return tc.Parent
		case "tracestate":
			return tc.State
		}
	}
	return ""
}

func (c carrier) Set(string, string) {}

func (c carrier) Keys() []string { return []string{"traceparent", "tracestate"} }
