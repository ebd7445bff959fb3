package httpx

import (
	"container/list"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// Ops is the operational surface every HTTP deployment needs beside its protocol handlers:
// Prometheus metrics, liveness and readiness, and a per-client rate limiter. Pass it in
// MCPOptions.Ops or RCPOptions.Ops, and mount Handler next to them.
type Ops struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	inFlight *prometheus.GaugeVec
	latency  *prometheus.HistogramVec
	sessions *prometheus.GaugeVec
	streams  *prometheus.GaugeVec
	limiter  *RateLimiter
	notReady atomic.Bool
}

// NewOps returns an Ops with its own Prometheus registry (Go and process collectors
// included). limiter may be nil for no rate limiting.
func NewOps(limiter *RateLimiter) *Ops {
	o := &Ops{registry: prometheus.NewRegistry(), limiter: limiter}
	o.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "relay_http_requests_total", Help: "HTTP requests by protocol, JSON-RPC method and outcome.",
	}, []string{"protocol", "method", "outcome"})
	o.inFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "relay_http_in_flight", Help: "HTTP requests being served.",
	}, []string{"protocol"})
	o.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "relay_http_request_duration_seconds", Help: "Time to answer an HTTP request, by protocol and method.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
	}, []string{"protocol", "method"})
	o.sessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "relay_http_sessions", Help: "Open sessions (MCP initialize generation, RCP session mode).",
	}, []string{"protocol"})
	o.streams = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "relay_http_sse_streams", Help: "Open Server-Sent Events streams.",
	}, []string{"protocol"})
	o.registry.MustRegister(o.requests, o.inFlight, o.latency, o.sessions, o.streams,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return o
}

// Registry returns the registry the metrics are in, to add an application's own.
func (o *Ops) Registry() *prometheus.Registry { return o.registry }

// SetReady marks the server ready (the default) or not; /readyz answers 503 while not.
// Serve marks it not ready as soon as shutdown begins.
func (o *Ops) SetReady(ready bool) { o.notReady.Store(!ready) }

// Handler serves /metrics (Prometheus text format), /healthz (the process is alive) and
// /readyz (it accepts work).
func (o *Ops) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(o.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if o.notReady.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	return mux
}

// observation is one HTTP request's trip through a handler, for the metrics.
type observation struct {
	o        *Ops
	protocol string
	method   string
	outcome  string // set where it is known; otherwise derived from the status
	start    time.Time
}

func (o *Ops) begin(protocol string) *observation {
	if o == nil {
		return nil
	}
	o.inFlight.WithLabelValues(protocol).Inc()
	return &observation{o: o, protocol: protocol, method: "unknown", start: time.Now()}
}

func (ob *observation) setMethod(m string) {
	if ob == nil {
		return
	}
	// A client's own method name never becomes a label value: only the protocols' names
	// (runtime.Profile.Methods, interned by the server) and "batch".
	if m != "batch" && !jsonrpc.Interned(m) {
		m = "other"
	}
	ob.method = m
}

// end records the outcome: "ok", "error" (a JSON-RPC error answer), "refused" (refused
// before dispatch), "cancelled" (the client went away) or "accepted" (a notification).
func (ob *observation) end(status int) {
	if ob == nil {
		return
	}
	outcome := ob.outcome
	switch {
	case outcome != "":
	case status == http.StatusAccepted || status == http.StatusNoContent:
		outcome = "accepted"
	case status >= 400:
		outcome = "refused"
	default:
		outcome = "ok"
	}
	ob.o.inFlight.WithLabelValues(ob.protocol).Dec()
	ob.o.requests.WithLabelValues(ob.protocol, ob.method, outcome).Inc()
	ob.o.latency.WithLabelValues(ob.protocol, ob.method).Observe(time.Since(ob.start).Seconds())
}

func (o *Ops) sessionCount(protocol string, n int) {
	if o != nil {
		o.sessions.WithLabelValues(protocol).Set(float64(n))
	}
}

// answered records whether a request's final frame was an error.
func (ob *observation) answered(frame []byte) {
	if ob == nil {
		return
	}
	ob.outcome = "ok"
	if jsonrpc.Field(frame, "error") != nil {
		ob.outcome = "error"
	}
}

func (ob *observation) cancelled() {
	if ob != nil {
		ob.outcome = "cancelled"
	}
}

func (o *Ops) stream(protocol string, delta float64) {
	if o != nil {
		o.streams.WithLabelValues(protocol).Add(delta)
	}
}

// allow applies the rate limiter; it returns the wait before a retry when refused.
func (o *Ops) allow(r *http.Request) (time.Duration, bool) {
	if o == nil || o.limiter == nil {
		return 0, true
	}
	return o.limiter.Allow(clientKey(r), time.Now())
}

// clientKey names the client a request is from, for the limits that are per client (the rate
// limiter, sessions): its authenticated principal, or else its remote address.
func clientKey(r *http.Request) string {
	if p := runtime.PrincipalFrom(r.Context()); p != nil {
		return "principal:" + p.ID
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return "addr:" + host
	}
	return "addr:" + r.RemoteAddr
}

func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(int(max(1, (d+time.Second-1)/time.Second)))
}

// RateLimiter is a token bucket per client: the authenticated principal, or else the remote
// address. Its table of clients is bounded: past MaxKeys, the least recently seen client is
// forgotten (and starts again with a full bucket), so memory stays bounded whatever the
// number of clients.
type RateLimiter struct {
	rate    float64 // tokens per second
	burst   float64
	maxKeys int

	mu    sync.Mutex
	order *list.List // front: most recently seen
	byKey map[string]*list.Element
}

type bucket struct {
	key    string
	tokens float64
	last   time.Time
}

// NewRateLimiter allows each client rate requests per second on average and burst at once,
// remembering at most maxKeys clients (default 10,000).
func NewRateLimiter(rate float64, burst, maxKeys int) *RateLimiter {
	if maxKeys <= 0 {
		maxKeys = 10000
	}
	return &RateLimiter{rate: rate, burst: float64(max(burst, 1)), maxKeys: maxKeys,
		order: list.New(), byKey: map[string]*list.Element{}}
}

// Allow takes a token for key at time now. When there is none it returns false and how long
// until there will be.
func (l *RateLimiter) Allow(key string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.byKey[key]
	if !ok {
		if l.order.Len() >= l.maxKeys {
			oldest := l.order.Back()
			delete(l.byKey, oldest.Value.(*bucket).key)
			l.order.Remove(oldest)
		}
		el = l.order.PushFront(&bucket{key: key, tokens: l.burst, last: now})
		l.byKey[key] = el
	}
	l.order.MoveToFront(el)
	b := el.Value.(*bucket)
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second)), false
}

// Len reports how many clients the limiter remembers.
func (l *RateLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}

// statusWriter remembers the status a handler wrote, for the metrics, and still lets
// http.ResponseController reach the connection underneath (for SSE flushes).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
