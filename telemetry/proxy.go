package telemetry

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/supervise"
)

// Proxy returns what an MCP proxy that restarts its server (relay supervise) reports through
// t: for each request it passes on, a client span (see StartCall) whose parent is the trace
// context in the request's _meta, so that the caller's trace goes on through the proxy into
// the server's own span, with an event "replayed" each time the request is sent again to a
// new server; mcp.client.operation.duration; and a span "restart" for each restart of the
// server, from the exit of one process to the start of the next (or to the supervisor giving
// up), and a span "upgrade" for each upgrade. Each proxy needs an Observer of its own. With t
// nil it returns nil.
func (t *Telemetry) Proxy() supervise.Observer {
	if t == nil {
		return nil
	}
	return &proxyObserver{t: t, calls: true}
}

// Children returns an Observer for a proxy whose requests already have client spans of their
// own (relay bridge and relay gateway make them themselves): the spans "restart" and
// "upgrade" of the child named name, and a span "replayed" under a request's span (the one
// its _meta.traceparent names) each time it is sent again to a new child. Each proxy needs an Observer of its own. With t nil it returns nil.
func (t *Telemetry) Children(name string) supervise.Observer {
	if t == nil {
		return nil
	}
	return &proxyObserver{t: t, child: attribute.String("relay.child.name", name)}
}

// proxyObserver is called on the proxy's actor only: it needs no lock.
type proxyObserver struct {
	t       *Telemetry
	calls   bool               // make each request's client span
	child   attribute.KeyValue // the child's name, on its spans, when set
	restart trace.Span         // open while a server restarts
}

func (o *proxyObserver) Request(method string, params json.RawMessage) (json.RawMessage, supervise.Call) {
	if !o.calls {
		if o.t.tracer == nil {
			return params, nil
		}
		// The request's client span is its sender's: a replay is a span of its own under it.
		parent := o.t.prop.Extract(context.Background(), carrier{meta: jsonrpc.Field(params, "_meta"), ctx: context.Background()})
		return params, &replayCall{o: o, parent: parent}
	}
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
		trace.WithAttributes(attribute.String("relay.child.exit", exit), attribute.Int("relay.child.restarts", restarts)),
		trace.WithAttributes(o.attrs()...))
}

func (o *proxyObserver) Started() {
	if o.restart != nil {
		o.restart.End()
		o.restart = nil
	}
}

// Stopped ends a restart that never came to a new child: the supervisor gave up (the span's
// status says why), or the proxy ended during the backoff.
func (o *proxyObserver) Stopped(err error) {
	if o.restart == nil {
		return
	}
	if err != nil {
		o.restart.SetStatus(codes.Error, err.Error())
	}
	o.restart.End()
	o.restart = nil
}

// Upgrade makes a span "upgrade", from the start of the new child to the moment it serves,
// or to why it does not.
func (o *proxyObserver) Upgrade(reason string) func(error) {
	if o.t.tracer == nil {
		return func(error) {}
	}
	_, span := o.t.tracer.Start(context.Background(), "upgrade", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("relay.upgrade.reason", reason)), trace.WithAttributes(o.attrs()...))
	return func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// attrs are the attributes every span of the proxy's carries.
func (o *proxyObserver) attrs() []attribute.KeyValue {
	if o.child.Key == "" {
		return nil
	}
	return []attribute.KeyValue{o.child}
}

// replayCall follows a request whose client span another made (relay bridge, relay gateway):
// each replay is a span "replayed" under the span named in the request's _meta.
type replayCall struct {
	o       *proxyObserver
	parent  context.Context
	replays int
}

func (c *replayCall) Replayed() {
	c.replays++
	_, span := c.o.t.tracer.Start(c.parent, "replayed", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.Int("relay.replay", c.replays)), trace.WithAttributes(c.o.attrs()...))
	span.End()
}

func (c *replayCall) Ended(*jsonrpc.Error, bool) {}

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
