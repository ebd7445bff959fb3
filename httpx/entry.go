package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/internal/ratelog"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// door is the one way into Relay over HTTP. MCPHandler and RCPHandler each embed one, and
// every request of either protocol goes through door.serve, which runs the checks in one
// order, written once:
//
//  1. the endpoint (404), then Host (403, DNS rebinding) and Origin (403), then CORS;
//  2. the method: POST goes on, OPTIONS is a CORS pre-flight, others are the protocol's
//     (an MCP session's GET stream and DELETE) or 405;
//  3. authentication (401, with resource_metadata when protected resource metadata is
//     configured, RFC 9728 §5.1), then the rate limit (429);
//  4. the body, under admission (admission.go): a Content-Length over MaxBody is 413 before a
//     byte is read, a body not in within BodyTimeout is 408, and bodies held across all
//     clients past BodyBudget, or of one client past its share of it, are 503;
//  5. an in-flight slot, taken only now that the body is in (503);
//  6. the protocol's dispatch, whose answer comes back through door.respond.
//
// What differs between the protocols is small and lives behind the protocol interface: what
// a path names, the JSON-RPC error a refusal carries, the HTTP status of an answer, the
// notification that cancels a request, and the POST itself.
type door struct {
	p    protocol
	name string // "mcp" or "rcp": the protocol label of the metrics and logs
	o    doorOptions
	rt   *runtime.Server
	log  *zap.Logger
	peer *ratelog.Limiter // refusals, which a client causes: bounded
	*admission
	sessions sessionHost
}

// doorOptions is what both protocols' options have in common, defaults applied.
type doorOptions struct {
	allowedOrigins, allowedHosts []string
	authenticator                Authenticator
	authorizer                   Authorizer
	protectedResource            *ProtectedResourceMetadata
	maxBody                      int64
	bodyTimeout                  time.Duration
	bodyBudget                   int64
	maxInFlight, maxResponse     int
	maxSessions, perClient       int
	sessionIdle, keepAlive       time.Duration
	pollAfter                    time.Duration // MCP: close a session request's stream after this long (resumable)
	instance                     string
	ops                          *Ops
	// sessionHeader names the header a session's id travels in; methods and headers are
	// what a CORS pre-flight allows.
	sessionHeader, methods, headers string
}

// Defaults of the limits both protocols share; each is documented on its option field.
const (
	defaultMaxBody     = 16 << 20
	defaultBodyTimeout = 10 * time.Second
	defaultBodyBudget  = 256 << 20
	defaultMaxInFlight = 4096
	defaultMaxResponse = 64 << 20
	defaultMaxSessions = 1000
	defaultPerClient   = 100
	defaultSessionIdle = 10 * time.Minute
)

func (o *doorOptions) defaults() {
	orDefault(&o.maxBody, defaultMaxBody)
	orDefault(&o.bodyTimeout, defaultBodyTimeout)
	orDefault(&o.bodyBudget, defaultBodyBudget)
	orDefault(&o.maxInFlight, defaultMaxInFlight)
	orDefault(&o.maxResponse, defaultMaxResponse)
	orDefault(&o.maxSessions, defaultMaxSessions)
	orDefault(&o.perClient, defaultPerClient)
	orDefault(&o.sessionIdle, defaultSessionIdle)
}

// orDefault sets a limit that is zero or negative to its default.
func orDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// protocol is what the door asks of the protocol it serves.
type protocol interface {
	// route reports whether a path is the protocol's, and what in it names the target (RCP:
	// the method; MCP: nothing).
	route(path string) (target string, ok bool)
	// calls lists the methods a POST's body calls, and what each names (a tool, a prompt),
	// for the Authorizer; a body that does not parse lists none (dispatch answers it).
	calls(target string, body []byte) []Call
	// refusal is the JSON-RPC error a refusal before dispatch carries, and its id (nil: none).
	refusal(why refusal, message string) (jsonrpc.ID, *jsonrpc.Error)
	// status maps a final answer to its HTTP status, and whether Retry-After goes with it.
	status(frame []byte) (status int, retry bool)
	// sse reports whether a request's progress may be sent as an SSE stream.
	sse(r *http.Request) bool
	// cancel is the notification that cancels request id.
	cancel(id jsonrpc.ID) []byte
	// evicted is the final answer of a request whose session was evicted; id is null for a
	// batch.
	evicted(id jsonrpc.ID) []byte
	// other serves a method besides POST and OPTIONS, and reports whether it did (false: 405).
	other(w http.ResponseWriter, r *http.Request) bool
	// post serves a POST whose body is in and whose in-flight slot is held.
	post(w http.ResponseWriter, r *http.Request, target string, body []byte)
}

// refusal is why a request is refused before it reaches a dispatcher.
type refusal uint8

const (
	refusedPath           refusal = iota // not the endpoint: 404
	refusedHost                          // Host is not allowed: 403
	refusedOrigin                        // Origin is not allowed: 403
	refusedMethod                        // an HTTP method the endpoint does not serve: 405
	refusedAuth                          // the Authenticator said no: 401
	refusedScope                         // a valid token without the scope needed: 403
	refusedRate                          // the rate limiter said no: 429
	refusedClientSessions                // the client is at its limit of busy sessions: 429
	refusedTooLarge                      // the body is over MaxBody: 413
	refusedSlow                          // the body did not arrive within BodyTimeout: 408
	refusedBody                          // the body could not be read: 400
	refusedBusy                          // no in-flight slot, no room in the body budget or the session table, or closing: 503
	refusedSession                       // no such session (ended, evicted, never existed, or another principal's): 404
	refusedAccept                        // the client does not accept what the endpoint sends: 406
)

var refusalStatus = [...]int{
	refusedPath:           http.StatusNotFound,
	refusedHost:           http.StatusForbidden,
	refusedOrigin:         http.StatusForbidden,
	refusedMethod:         http.StatusMethodNotAllowed,
	refusedAuth:           http.StatusUnauthorized,
	refusedScope:          http.StatusForbidden,
	refusedRate:           http.StatusTooManyRequests,
	refusedClientSessions: http.StatusTooManyRequests,
	refusedTooLarge:       http.StatusRequestEntityTooLarge,
	refusedSlow:           http.StatusRequestTimeout,
	refusedBody:           http.StatusBadRequest,
	refusedBusy:           http.StatusServiceUnavailable,
	refusedSession:        http.StatusNotFound,
	refusedAccept:         http.StatusNotAcceptable,
}

func (d *door) init(p protocol, name string, o doorOptions, profile runtime.Profile, logger *zap.Logger, rtOpts []runtime.Option) {
	o.defaults()
	d.p, d.name, d.o = p, name, o
	d.log = logger
	if d.log == nil {
		d.log = runtime.DefaultLogger()
	}
	d.peer = ratelog.New(d.log, nil)
	d.rt = runtime.NewServer(profile, append([]runtime.Option{runtime.WithLogger(d.log)}, rtOpts...)...)
	d.admission = newAdmission(o.maxInFlight, o.maxResponse, o.bodyBudget, o.maxBody)
	d.sessions.start(o.maxSessions, o.perClient, o.sessionIdle)
}

// close ends every session the door started, waiting for each (see sessionHost.close).
func (d *door) close() {
	d.sessions.close()
	d.peer.Flush()
}

type observationKey struct{}

func observationOf(r *http.Request) *observation {
	ob, _ := r.Context().Value(observationKey{}).(*observation)
	return ob
}

// ServeHTTP observes the request for the metrics and serves it.
func (d *door) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	ob := d.o.ops.begin(d.name)
	w := &statusWriter{ResponseWriter: rw}
	defer func() {
		ob.end(w.status)
		if d.o.ops != nil { // no metrics: no need to take the session table's lock
			d.o.ops.sessionCount(d.name, d.sessions.len())
		}
	}()
	d.serve(w, r.WithContext(context.WithValue(r.Context(), observationKey{}, ob)))
}

func (d *door) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == wellKnownResource && d.o.protectedResource != nil {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(d.o.protectedResource)
		return
	}
	target, ok := d.p.route(r.URL.Path)
	if !ok {
		d.refuse(w, refusedPath, "Not found: this is not the endpoint")
		return
	}
	if !hostAllowed(r.Host, d.o.allowedHosts) {
		d.refuse(w, refusedHost, "Forbidden: this server answers only to a loopback Host (DNS rebinding protection)")
		return
	}
	origin := r.Header.Get("Origin")
	if !originAllowed(origin, d.o.allowedOrigins) {
		d.refuse(w, refusedOrigin, "Forbidden: Origin "+origin+" is not allowed")
		return
	}
	if d.o.instance != "" {
		w.Header().Set("Relay-Instance", d.o.instance)
	}
	if origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Expose-Headers", d.o.sessionHeader+", WWW-Authenticate, Relay-Instance")
		w.Header().Add("Vary", "Origin")
	}
	switch r.Method {
	case http.MethodPost:
	case http.MethodOptions:
		w.Header().Set("Access-Control-Allow-Methods", d.o.methods)
		w.Header().Set("Access-Control-Allow-Headers", d.o.headers)
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		if !d.p.other(w, r) {
			w.Header().Set("Allow", d.o.methods)
			d.refuse(w, refusedMethod, "Method not allowed: send JSON-RPC messages with POST")
		}
		return
	}
	if r = d.authenticate(w, r); r == nil {
		return
	}
	if wait, ok := d.o.ops.allow(r); !ok {
		w.Header().Set("Retry-After", retryAfterSeconds(wait))
		d.refuse(w, refusedRate, "Rate limited: too many requests from this client; retry after "+retryAfterSeconds(wait)+" s")
		return
	}
	body, held, why, message := d.readBody(w, r)
	defer d.releaseBody(clientKey(r), held)
	if message != "" {
		d.refuse(w, why, message)
		return
	}
	if !d.authorize(w, r, target, body) {
		return
	}
	if !d.enter() {
		w.Header().Set("Retry-After", "1")
		d.refuse(w, refusedBusy, "Server busy: at its limit of requests in flight; retry shortly")
		return
	}
	defer d.leave()
	d.p.post(w, r, target, body)
}

// authenticate runs the Authenticator; it returns the request with the principal in its
// context, or nil after refusing it with 401 and a Bearer challenge that names the protected
// resource metadata when there is some (RFC 9728 §5.1).
func (d *door) authenticate(w http.ResponseWriter, r *http.Request) *http.Request {
	if d.o.authenticator == nil {
		return r
	}
	p, err := d.o.authenticator(r)
	if err != nil {
		d.challenge(w, r, err)
		return nil
	}
	return r.WithContext(withPrincipal(r.Context(), p))
}

// challenge refuses a request its credentials do not allow: 401 with a Bearer challenge
// naming the scopes and the protected resource metadata, or 403 insufficient_scope for a
// valid token short of a scope (RFC 6750 §3.1, RFC 9728 §5.1).
func (d *door) challenge(w http.ResponseWriter, r *http.Request, err error) {
	why, code, scopes := refusedAuth, "invalid_token", []string(nil)
	var insufficient *InsufficientScopeError
	var invalid *invalidTokenError
	switch {
	case errors.As(err, &insufficient):
		why, code, scopes = refusedScope, "insufficient_scope", insufficient.Scopes
	case errors.As(err, &invalid):
		scopes = invalid.scopes
		if invalid.none {
			code = ""
		}
	case errors.Is(err, errNoCredentials):
		code = "" // a request without a token is told of no error
	}
	var params []string
	if code != "" {
		params = append(params, `error="`+code+`"`, `error_description="`+strings.ReplaceAll(err.Error(), `"`, "'")+`"`)
	}
	if len(scopes) > 0 {
		params = append(params, `scope="`+strings.Join(scopes, " ")+`"`)
	}
	if d.o.protectedResource != nil {
		params = append(params, `resource_metadata="`+resourceMetadataURL(r)+`"`)
	}
	w.Header().Set("WWW-Authenticate", strings.TrimSpace("Bearer "+strings.Join(params, ", ")))
	message := "Unauthorized: "
	if why == refusedScope {
		message = "Forbidden: "
	}
	d.refuse(w, why, message+err.Error())
}

// authorize runs the Authorizer on every call of the body; it refuses the request, as
// authenticate does, at the first error.
func (d *door) authorize(w http.ResponseWriter, r *http.Request, target string, body []byte) bool {
	if d.o.authorizer == nil {
		return true
	}
	p := runtime.PrincipalFrom(r.Context())
	for _, c := range d.p.calls(target, body) {
		if err := d.o.authorizer(r, p, c); err != nil {
			d.challenge(w, r, err)
			return false
		}
	}
	return true
}

// refuse answers before dispatch: the refusal's status, and the protocol's JSON-RPC error.
func (d *door) refuse(w http.ResponseWriter, why refusal, message string) {
	status := refusalStatus[why]
	d.peer.Warn("refused an HTTP request", nil, zap.String("protocol", d.name), zap.Int("status", status), zap.String("reason", message))
	id, e := d.p.refusal(why, message)
	writeJSONError(w, status, id, e)
}

func writeJSONError(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(jsonrpc.AppendError(nil, id, e))
}

func resourceMetadataURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + wellKnownResource
}

// principalID names who a request is from, for binding sessions to their owner.
func principalID(r *http.Request) string {
	if p := runtime.PrincipalFrom(r.Context()); p != nil {
		return p.ID
	}
	return ""
}
