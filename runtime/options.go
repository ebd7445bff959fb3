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
	maxInFlight  int
	queue        int
	drainTimeout time.Duration
	retryAfter   time.Duration
	logger       *zap.Logger
}

func defaultOptions() options {
	return options{
		maxInFlight:  4096,
		queue:        4096,
		drainTimeout: 10 * time.Second,
		retryAfter:   100 * time.Millisecond,
		logger:       DefaultLogger(),
	}
}

// WithMaxInFlight limits how many requests run at once on one connection (default 4,096).
// Long-lived requests such as subscriptions do not count.
func WithMaxInFlight(n int) Option {
	return optionFunc(func(o *options) { o.maxInFlight = max(n, 1) })
}

// WithQueue sets how many requests beyond the in-flight limit wait for a slot (default 4,096)
// before new ones are refused with the profile's overload error.
func WithQueue(n int) Option {
	return optionFunc(func(o *options) { o.queue = max(n, 0) })
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
