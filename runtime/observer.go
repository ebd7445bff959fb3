package runtime

import "context"

// Observer watches the requests a Server's handlers run, for tracing and metrics: package
// telemetry implements one with OpenTelemetry. Requests that a Route answers at once (errors
// of the protocol, results of the session itself) are not observed.
type Observer interface {
	// Start is called on the request's actor before its handler runs, with the handler's
	// context. It returns the context the handler runs with, and end, which is called once
	// when the handler has returned (or panicked) with its error, or nil. Both must be quick:
	// they run on every request.
	Start(ctx context.Context, req *Request) (context.Context, func(err error))
}

// WithObserver makes o watch every request the Server's handlers run. Without it nothing is
// observed, and a request pays no more than a nil check.
func WithObserver(o Observer) Option {
	return optionFunc(func(opts *options) { opts.observer = o })
}

// ResultFailure is the error an Observer's end is given for a request whose handler returned
// a result that says the request failed (an MCP tool result with isError: true, say): the
// peer gets the result, and the request is observed as failed with Type as its error.type.
type ResultFailure struct{ Type string }

func (f *ResultFailure) Error() string { return "the request's result says it failed: " + f.Type }

type failureKey struct{}

// ReportFailure tells the Observer, if there is one, that the request whose context ctx is
// failed although its handler returns a result (errorType: the error.type to report, such as
// MCP's "tool_error"). It does nothing without an Observer.
func ReportFailure(ctx context.Context, errorType string) {
	if f, ok := ctx.Value(failureKey{}).(*ResultFailure); ok {
		f.Type = errorType
	}
}
