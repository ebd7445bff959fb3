package fleet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ErrUnavailable is what every call wraps when Redis cannot be reached or cannot serve now
// (down, restarting, loading its data, failing over). Such a call may be retried: the client
// reconnects by itself once Redis is back.
var ErrUnavailable = errors.New("fleet: Redis is unavailable; retry")

// unavailable wraps ErrUnavailable with the operation and the cause.
type unavailable struct {
	op    string
	cause error
}

func (e *unavailable) Error() string {
	return "fleet: " + e.op + ": Redis is unavailable (" + e.cause.Error() + "); retry"
}

func (e *unavailable) Unwrap() []error { return []error{ErrUnavailable, e.cause} }

// Defaults of Options.
const (
	DefaultPrefix       = "relay:"
	DefaultStreamEvents = 1000
	DefaultEventAge     = 5 * time.Minute
	DefaultTimeout      = 2 * time.Second
	DefaultBusBuffer    = 256
)

// Options configures a connection to a fleet's Redis. The zero value is ready to use.
type Options struct {
	// Prefix begins every key and channel name, so that several fleets (or tests) share one
	// Redis without seeing each other's state (default "relay:"). Every instance of a
	// fleet must use the same.
	Prefix string
	// StreamEvents bounds the events the event store keeps of one SSE stream (default
	// 1000): past it, the oldest go, and a client cannot resume from before those kept.
	StreamEvents int
	// EventAge is how long the event store keeps a stream after its last event (default 5
	// minutes, as the memory store's age bound): a client resumes within it or not at all.
	EventAge time.Duration
	// Timeout bounds connecting to Redis and each read and write on the connection
	// (default 2 s), so that a call fails with ErrUnavailable rather than hang when Redis
	// does not answer.
	Timeout time.Duration
	// TLS configures the connection of a rediss:// URL: the roots that verify Redis's
	// certificate (a private CA) and a client certificate, if Redis asks for one. Default:
	// the system's roots, and the URL's host as the server's name. Only for rediss://.
	TLS *tls.Config
	// BusBuffer is how many messages a Bus subscription holds for a subscriber that has not
	// read them yet (default 256); past it, messages are dropped for that subscriber.
	BusBuffer int
	// Lazy makes Open return without waiting for Redis to answer: an instance starts while
	// Redis is down (its 2026-07-28 requests need none), and what needs Redis fails with
	// ErrUnavailable until Redis is up.
	Lazy bool
}

// Redis is a connection to the Redis a fleet of Relay instances shares state through. It
// reconnects by itself: while Redis is unreachable, calls fail with ErrUnavailable, and once
// it is back they succeed again. Safe for concurrent use.
type Redis struct {
	opts   Options
	client *redis.Client

	mu     sync.Mutex
	closed bool
	subs   map[*redis.PubSub]struct{} // Bus subscriptions alive, for Close
	wg     sync.WaitGroup             // their goroutines
}

// ScopedURL returns rawURL with its key prefix (DefaultPrefix when it names none) followed
// by scope and a colon: a URL for a program that shares the fleet's Redis under keys and
// topics of its own (relay gateway hands each of its servers one, named after the server).
func ScopedURL(rawURL, scope string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		return "", fmt.Errorf("fleet: the Redis URL %q is not redis://host:port or rediss://host:port (TLS)", redactURL(rawURL))
	}
	q := u.Query()
	prefix := q.Get("prefix")
	if prefix == "" {
		prefix = DefaultPrefix
	}
	q.Set("prefix", prefix+scope+":")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// EnvURL is the environment variable that names a fleet's Redis to a Relay program (a
// child of relay bridge or relay gateway gets it from them: ChildEnv).
const EnvURL = "RELAY_REDIS_URL"

// ChildEnv returns env (this process's environment when nil) with $RELAY_REDIS_URL naming
// the fleet's Redis at rawURL under scope (ScopedURL): the environment of a child that
// serves an instance of the fleet, so that Relay's servers keep their tasks, and tell their
// changes, where the same server on the other instances finds them.
func ChildEnv(env []string, rawURL, scope string) ([]string, error) {
	scoped, err := ScopedURL(rawURL, scope)
	if err != nil {
		return nil, err
	}
	if env == nil {
		env = os.Environ()
	}
	return append(slices.Clip(env), EnvURL+"="+scoped), nil
}

// Open connects to Redis at rawURL, redis://[user:password@]host:port[/db] or rediss://
// for TLS, and checks that it answers (unless Options.Lazy). The URL's query may give the
// key prefix (?prefix=fleet-a:), which Options.Prefix, when set, overrides. opts may be nil.
// A Redis that cannot be reached fails with an error wrapping ErrUnavailable.
func Open(ctx context.Context, rawURL string, opts *Options) (*Redis, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		return nil, fmt.Errorf("fleet: the Redis URL %q is not redis://host:port or rediss://host:port (TLS)", redactURL(rawURL))
	}
	q := u.Query()
	prefix := q.Get("prefix")
	if q.Has("prefix") {
		q.Del("prefix")
		u.RawQuery = q.Encode()
		rawURL = u.String()
	}
	ro, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("fleet: the Redis URL %q: %v; write it as redis://[user:password@]host:port[/db]", redactURL(rawURL), err)
	}
	r := &Redis{subs: map[*redis.PubSub]struct{}{}}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Prefix == "" {
		r.opts.Prefix = prefix
	}
	if r.opts.Prefix == "" {
		r.opts.Prefix = DefaultPrefix
	}
	if r.opts.StreamEvents <= 0 {
		r.opts.StreamEvents = DefaultStreamEvents
	}
	if r.opts.EventAge <= 0 {
		r.opts.EventAge = DefaultEventAge
	}
	if r.opts.Timeout <= 0 {
		r.opts.Timeout = DefaultTimeout
	}
	if r.opts.BusBuffer <= 0 {
		r.opts.BusBuffer = DefaultBusBuffer
	}
	if r.opts.TLS != nil {
		if ro.TLSConfig == nil {
			return nil, fmt.Errorf("fleet: Options.TLS is given but the Redis URL %q is not rediss://; write rediss:// to use TLS", redactURL(rawURL))
		}
		c := r.opts.TLS.Clone()
		if c.ServerName == "" {
			c.ServerName = ro.TLSConfig.ServerName
		}
		if c.MinVersion == 0 {
			c.MinVersion = tls.VersionTLS12
		}
		ro.TLSConfig = c
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = r.opts.Timeout, r.opts.Timeout, r.opts.Timeout
	ro.ContextTimeoutEnabled = true
	// No retries inside the client: a script or XADD retried after a timeout may have run
	// already, and would then run twice. The caller retries on ErrUnavailable instead.
	ro.MaxRetries = -1
	ro.DialerRetries = 1
	ro.DisableIdentity = true // CLIENT SETINFO: not needed, and older servers refuse it
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	quietClient.Do(func() { redis.SetLogger(quiet{}) })
	r.client = redis.NewClient(ro)
	if r.opts.Lazy {
		return r, nil
	}
	if err := r.client.Ping(ctx).Err(); err != nil {
		r.client.Close()
		return nil, r.wrap(ctx, "connecting", err)
	}
	return r, nil
}

// Close ends every Bus subscription (closing their channels), waits for their goroutines,
// and closes the connections. The stores and the bus fail afterwards.
func (r *Redis) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	for ps := range r.subs {
		ps.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return r.client.Close()
}

// wrap says what failed: ErrUnavailable for what a retry may mend, the caller's own ending
// context as it is, and anything else as Redis's refusal.
func (r *Redis) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("fleet: %s: %w", op, err)
	}
	if errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("fleet: %s: the Redis connection was closed (Close); open another", op)
	}
	var untrusted *tls.CertificateVerificationError
	if errors.As(err, &untrusted) {
		return fmt.Errorf("fleet: %s: Redis's certificate is not trusted (%w); give its CA's roots in Options.TLS", op, err)
	}
	var notTLS tls.RecordHeaderError
	if errors.As(err, &notTLS) {
		return fmt.Errorf("fleet: %s: Redis did not answer in TLS (%w); is the URL's port its TLS port?", op, err)
	}
	var re redis.Error
	if errors.As(err, &re) && !retryableReply(re.Error()) {
		return fmt.Errorf("fleet: %s: Redis refused: %w", op, err)
	}
	return &unavailable{op: op, cause: err}
}

// retryableReply reports whether an error reply is Redis saying "not now" rather than "no":
// OOM among them, since what the fleet keeps expires and makes room.
func retryableReply(msg string) bool {
	for _, p := range []string{"LOADING", "BUSY", "MASTERDOWN", "READONLY", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS", "OOM"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// quietClient silences the client's own log (process-wide, as the client allows no other
// way): every failure reaches the caller as an error already, and the log would say each
// again, on stderr, which a stdio server's host reads.
var quietClient sync.Once

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// redactURL hides the password of a URL in an error message.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable)"
	}
	return u.Redacted()
}
