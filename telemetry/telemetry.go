// Package telemetry exports what Relay's servers do as OpenTelemetry: a span per request and
// the request-duration histogram, named and attributed by the MCP semantic conventions, and
// parented on the caller's trace context. It is configured by the standard OTEL_* environment
// variables and sends OTLP over HTTP/protobuf; without an OTLP endpoint it is off, and a
// server pays nothing for it.
//
//	tel, err := telemetry.FromEnv(ctx, "my-server")
//	if err != nil { ... }
//	defer tel.Shutdown(context.Background())
//	stdio.ServeStdio(ctx, s.Runtime(tel.Option(telemetry.MCP)))
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/relayrt/relay/runtime"
)

// Telemetry is the OpenTelemetry of one program: its tracer and meter providers and the
// runtime.Observer that uses them. A nil *Telemetry is valid and off: Option installs
// nothing and Shutdown does nothing.
type Telemetry struct {
	tp     *sdktrace.TracerProvider // nil: no traces
	mp     *sdkmetric.MeterProvider // nil: no metrics
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	// duration is the request-duration histogram of each protocol; nil without metrics.
	duration [2]metric.Float64Histogram
	// callDuration is mcp.client.operation.duration, of the requests passed on (StartCall).
	callDuration metric.Float64Histogram
}

// Protocol says which conventions a server's spans and metrics follow.
type Protocol uint8

const (
	// MCP names spans "{mcp.method.name} {target}" and records mcp.server.operation.duration,
	// with the attributes of the MCP semantic conventions.
	MCP Protocol = iota
	// RCP names spans by the method and records rpc.server.call.duration, with the RPC
	// conventions' attributes (rpc.system.name jsonrpc, rpc.method).
	RCP
)

// FromEnv sets up telemetry from the standard environment variables, for a program whose
// service.name is service unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names it.
//
// Traces are exported when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// is set (or OTEL_TRACES_EXPORTER=otlp), and not when OTEL_TRACES_EXPORTER=none; metrics
// likewise with the _METRICS_ variables. OTEL_SDK_DISABLED=true turns both off. The
// exporters read the rest of the OTLP variables themselves (headers, timeouts, TLS). Only
// OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (the default) is supported. With nothing to
// export FromEnv returns nil, which is off.
func FromEnv(ctx context.Context, service string) (*Telemetry, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	traces, metrics := wanted("TRACES"), wanted("METRICS")
	if !traces && !metrics {
		return nil, nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if p := os.Getenv(v); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("telemetry: %s=%s is not supported; set it to http/protobuf, or unset it", v, p)
		}
	}
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName(service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry: the resource: %w", err)
	}
	t := &Telemetry{prop: propagation.TraceContext{}}
	if traces {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry: the OTLP trace exporter: %w", err)
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		t.tracer = t.tp.Tracer(instrumentation)
	}
	if metrics {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			t.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: the OTLP metric exporter: %w", err)
		}
		t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		meter := t.mp.Meter(instrumentation)
		histogram := func(name, description string) (metric.Float64Histogram, error) {
			return meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(description),
				metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300))
		}
		for p, name := range [...]string{MCP: "mcp.server.operation.duration", RCP: "rpc.server.call.duration"} {
			t.duration[p], err = histogram(name, "The duration of a request, from its handler's start to its end.")
			if err != nil {
				t.Shutdown(ctx)
				return nil, fmt.Errorf("telemetry: the duration histogram: %w", err)
			}
		}
		t.callDuration, err = histogram("mcp.client.operation.duration", "The duration of a request passed on to a server, until its answer.")
		if err != nil {
			t.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: the client duration histogram: %w", err)
		}
	}
	return t, nil
}

// instrumentation names the tracer and meter.
const instrumentation = "github.com/relayrt/relay/telemetry"

// wanted reports whether a signal ("TRACES" or "METRICS") is to be exported: an OTLP endpoint
// for it is set, or its exporter is named otlp; and its exporter is not none.
func wanted(signal string) bool {
	switch os.Getenv("OTEL_" + signal + "_EXPORTER") {
	case "none":
		return false
	case "otlp":
		return true
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// Option installs t as the Observer of a runtime server of protocol p; with t nil it
// installs nothing.
func (t *Telemetry) Option(p Protocol) runtime.Option {
	if t == nil {
		return runtime.WithObserver(nil)
	}
	return runtime.WithObserver(observer{t: t, p: p})
}

// Shutdown exports what is still buffered and stops the exporters; call it before the program
// exits, or the last spans are lost.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
