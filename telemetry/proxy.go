package telemetry

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/supervise"
)

// Proxy returns what an MCP proxy that restarts its server (relay supervise) reports through
// t: for each request it passes on, a client span (see StartCall) whose parent is the trace
// context in the request's _meta, so that the caller's trace goes on through the proxy into
// the server's own span, with an event "replayed" each time the request is sent again to a
// new server; mcp.client.operation.duration; and a span "restart" for each restart of the
// server, from the exit of one process to the start of the next. With t nil it returns nil.
func (t *Telemetry) Proxy() supervise.Observer {
	if t == nil {
		return nil
	}
	return &proxyObserver{t: t}
}

// proxyObserver is called on the proxy's actor only: it needs no lock.
type proxyObserver struct {
	t       *Telemetry
	restart trace.Span // open while a server restarts
}

func (o *proxyObserver) Request(method string, params json.RawMessage) (json.RawMessage, supervise.Call) {
	ctx := context.Background()
	if o.t.tracer != nil {
		ctx = o.t.prop.Extract(ctx, carrier{meta: jsonrpc.Field(params, "_meta"), ctx: ctx})
	}
	ctx, params, end := o.t.StartCall(ctx, method, params)
	return params, &proxyCall{span: trace.SpanFromContext(ctx), end: end}
}

func (o *proxyObserver) Restarting(exit string, restarts int) {
	if o.t.tracer == nil || o.restart != nil {
		return
	}
	_, o.restart = o.t.tracer.Start(context.Background(), "restart", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("relay.child.exit", exit), attribute.Int("relay.child.restarts", restarts)))
}

func (o *proxyObserver) Started() {
	if o.restart != nil {
		o.restart.End()
		o.restart = nil
	}
}

// proxyCall is one request's client span.
type proxyCall struct {
	span    trace.Span
	end     func(error)
	replays int
}

func (c *proxyCall) Replayed() {
	c.replays++
	c.span.AddEvent("replayed", trace.WithAttributes(attribute.Int("relay.replay", c.replays)))
}

func (c *proxyCall) Ended(answer *jsonrpc.Error, cancelled bool) {
	switch {
	case cancelled:
		c.end(context.Canceled)
	case answer != nil:
		c.end(answer)
	default:
		c.end(nil)
	}
}
