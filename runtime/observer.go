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
