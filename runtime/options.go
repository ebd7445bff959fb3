package runtime

import (
	"os"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Option configures a Server.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	maxRequests  int
	maxBytes     int
	drainTimeout time.Duration
	retryAfter   time.Duration
	logger       *zap.Logger
	observer     Observer
}

// Default admission budgets of one connection; see WithBudget.
const (
	DefaultMaxRequests = 1 << 17  // 131,072 requests in flight
	DefaultMaxBytes    = 64 << 20 // 64 MiB of request frames in flight
)

func defaultOptions() options {
	return options{
		maxRequests:  DefaultMaxRequests,
		maxBytes:     DefaultMaxBytes,
		drainTimeout: 10 * time.Second,
		retryAfter:   100 * time.Millisecond,
		logger:       DefaultLogger(),
	}
}

// WithBudget sets what one connection may hold for its requests in flight (those a handler
// runs, whether working or parked on a wait; requests answered at once by a Route hold
// nothing): at most maxRequests of them (default DefaultMaxRequests, 131,072), whose frames
// come to at most maxBytes (default DefaultMaxBytes, 64 MiB). A frame is counted whole, with
// everything in it, for as long as its request runs; a member of a batch holds a copy of its
// own bytes and is counted for those. Zero or less keeps the default.
//
// A request either starts at once or, if it would exceed either budget, is refused at once
// with the profile's overload error (Profile.Overloaded); none waits for another to finish,
// so a quick request is never held up by long ones, and a connection with 100,000 requests
// parked in handlers still answers a new one. A frame longer than maxBytes (or than 2 GiB) is
// always refused.
//
// Memory therefore stays bounded whatever the peer sends: requests in flight on one
// connection hold at most maxBytes of frames plus maxRequests × the runtime's own cost per
// request, plus whatever the handlers keep. That cost, for a handler parked on a channel, is
// about 3.6 KiB, most of it the worker goroutine's 2 KiB stack and its descriptor (see
// BenchmarkIdleInFlight in bench/); a handler that goes deeper before it waits has a 4 KiB
// stack, unless it waits in a Continuation, as MCP's tool calls do once their tool's calls
// pile up (about 4.2 KiB each for examples/echo's sleep tool, its timer and MCP's state
// included). With the defaults: 64 MiB + 131,072 × 3.6 KiB, about 530 MiB, before the
// handlers' own.
func WithBudget(maxRequests, maxBytes int) Option {
	return optionFunc(func(o *options) {
		if maxRequests > 0 {
			o.maxRequests = maxRequests
		}
		if maxBytes > 0 {
			o.maxBytes = maxBytes
		}
	})
}

// WithDrainTimeout sets how long requests in flight may run once input has ended (default
// 10 s); after it their contexts are cancelled.
func WithDrainTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.drainTimeout = d })
}

// WithRetryAfter sets the delay an overloaded server tells a refused peer to wait (default
// 100 ms).
func WithRetryAfter(d time.Duration) Option {
	return optionFunc(func(o *options) { o.retryAfter = d })
}

// WithLogger sets the structured logger; it must write to stderr or elsewhere, never to the
// protocol's output. The default logs warnings and errors to stderr as JSON.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.logger = l
		}
	})
}

// DefaultLogger returns the logger a Server uses unless told otherwise: warnings and errors,
// as JSON lines on stderr.
func DefaultLogger() *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(os.Stderr), zapcore.WarnLevel)
	return zap.New(core)
}
