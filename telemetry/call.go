package telemetry

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/relayrt/relay/jsonrpc"
)

// StartCall starts the client span of an MCP request that Relay passes on to a server (relay
// bridge to a child, for one): a child of ctx's span, named and attributed as the server's
// span of it will be. It returns the context of the call, params with _meta.traceparent and
// _meta.tracestate naming the new span (so that the server's span joins the trace under it),
// and end, which ends the span and records mcp.client.operation.duration. With t nil it
// returns ctx and params as they are.
func (t *Telemetry) StartCall(ctx context.Context, method string, params json.RawMessage) (context.Context, json.RawMessage, func(error)) {
	if t == nil {
		return ctx, params, func(error) {}
	}
	start := time.Now()
	meta := jsonrpc.Field(params, "_meta")
	attrs, name := mcpTarget(method, params, meta, []attribute.KeyValue{semconv.McpMethodNameKey.String(method)})
	if t.tracer == nil {
		return ctx, params, func(err error) { record(t.callDuration, start, attrs, err) }
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	carrier := propagation.MapCarrier{}
	t.prop.Inject(ctx, carrier)
	if len(meta) == 0 || string(meta) == "null" {
		meta = json.RawMessage(`{}`)
	}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := carrier[k]; ok {
			b, _ := json.Marshal(v)
			meta = jsonrpc.SetMember(meta, k, b)
		}
	}
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{}`)
	}
	params = jsonrpc.SetMember(params, "_meta", meta)
	return ctx, params, func(err error) {
		endSpan(span, err)
		record(t.callDuration, start, attrs, err)
	}
}
