package httpx

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

// MCPOptions configures an MCPHandler. The zero value is ready to use.
type MCPOptions struct {
	// Path is the MCP endpoint (default "/mcp").
	Path string
	// AllowedOrigins lists browser origins allowed besides loopback ones ("*" allows any).
	// They also get CORS headers and pre-flight answers.
	AllowedOrigins []string
	// AllowedHosts lists Host names accepted besides loopback ones ("*" accepts any): set it
	// when serving on a non-loopback address.
	AllowedHosts []string
	// Authenticator, when set, authenticates every request before anything else is read.
	Authenticator Authenticator
	// ProtectedResource, when set, is served at /.well-known/oauth-protected-resource
	// (RFC 9728) and named in the WWW-Authenticate header of 401 answers.
	ProtectedResource *ProtectedResourceMetadata
	// MaxBody is the largest request body accepted (default 16 MiB); larger ones get 413.
	MaxBody int64
	// MaxResponse bounds one answer (default 64 MiB): a larger one is replaced by an
	// internal error that says so. MaxInFlight bounds the POSTs served at once across all
	// clients (default 4,096); past it they get 503 with Retry-After.
	MaxResponse, MaxInFlight int
	// MaxSessions bounds the initialize-generation sessions (default 1,000).
	MaxSessions int
	// SessionIdle is how long an unused session lives (default 10 minutes).
	SessionIdle time.Duration
	// KeepAlive is the interval of SSE comment lines on long streams (default 15 s).
	KeepAlive time.Duration
	// Logger logs refusals and failures (default: the runtime's, on stderr).
	Logger *zap.Logger
	// Runtime options for the dispatchers (limits, drain timeout).
	Runtime []runtime.Option
	// Ops, when set, gets the handler's metrics and applies its rate limiter.
	Ops *Ops
	// Instance names this server among several behind a load balancer (letters and digits).
	// Its session ids then start with "<Instance>." so that the balancer can send a session's
	// requests to the instance that holds it, and every answer carries a Relay-Instance
	// header. See examples/deploy.
	Instance string
}

// ProtectedResourceMetadata is the OAuth 2.0 protected resource metadata of RFC 9728.
type ProtectedResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	ScopesSupported      []string `json:"scopes_supported,omitempty"`
}

const wellKnownResource = "/.well-known/oauth-protected-resource"

// MCPHandler serves an MCP server over Streamable HTTP, both generations, on one endpoint.
type MCPHandler struct {
	headers func(tool string) []mcp.HeaderParam
	rt      *runtime.Server
	opts    MCPOptions
	log     *zap.Logger
	sessionHost
	limits
}

// NewMCPHandler returns a handler for s. Call Close to end its sessions and its janitor.
func NewMCPHandler(s *mcp.Server, opts *MCPOptions) *MCPHandler {
	return NewMCPProfileHandler(s.Profile(), s.ToolHeaderParams, opts)
}

// NewMCPProfileHandler serves any MCP profile over Streamable HTTP, not only an mcp.Server's:
// a bridge to other servers, say. headers reports a tool's mirrored arguments (nil: none).
func NewMCPProfileHandler(p runtime.Profile, headers func(tool string) []mcp.HeaderParam, opts *MCPOptions) *MCPHandler {
	if headers == nil {
		headers = func(string) []mcp.HeaderParam { return nil }
	}
	h := &MCPHandler{headers: headers}
	if opts != nil {
		h.opts = *opts
	}
	o := &h.opts
	if o.Path == "" {
		o.Path = "/mcp"
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 16 << 20
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 1000
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = 10 * time.Minute
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	h.log = o.Logger
	if h.log == nil {
		h.log = runtime.DefaultLogger()
	}
	h.rt = runtime.NewServer(p, append([]runtime.Option{runtime.WithLogger(h.log)}, o.Runtime...)...)
	h.limits = newLimits(o.MaxInFlight, o.MaxResponse)
	h.start(o.MaxSessions, o.SessionIdle)
	return h
}

// Close ends every session (their dispatchers drain) and stops the janitor. Streams still
// open are told the server is going away through their requests' Draining channel.
func (h *MCPHandler) Close() error {
	h.close()
	return nil
}

// Sessions reports how many initialize-generation sessions are open.
func (h *MCPHandler) Sessions() int { return h.sessions.len() }

func (h *MCPHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	ob := h.opts.Ops.begin("mcp")
	w := &statusWriter{ResponseWriter: rw}
	defer func() {
		ob.end(w.status)
		h.opts.Ops.sessionCount("mcp", h.sessions.len())
	}()
	h.serveHTTP(w, r.WithContext(context.WithValue(r.Context(), observationKey{}, ob)))
}

type observationKey struct{}

func observationOf(r *http.Request) *observation {
	ob, _ := r.Context().Value(observationKey{}).(*observation)
	return ob
}

func (h *MCPHandler) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == wellKnownResource && h.opts.ProtectedResource != nil {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(h.opts.ProtectedResource)
		return
	}
	if r.URL.Path != h.opts.Path {
		http.NotFound(w, r)
		return
	}
	if !hostAllowed(r.Host, h.opts.AllowedHosts) {
		h.refuse(w, http.StatusForbidden, "Forbidden: this server answers only to a loopback Host (DNS rebinding protection)")
		return
	}
	origin := r.Header.Get("Origin")
	if !originAllowed(origin, h.opts.AllowedOrigins) {
		h.refuse(w, http.StatusForbidden, "Forbidden: Origin "+origin+" is not allowed")
		return
	}
	if h.opts.Instance != "" {
		w.Header().Set("Relay-Instance", h.opts.Instance)
	}
	if origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate, Relay-Instance")
		w.Header().Add("Vary", "Origin")
	}
	switch r.Method {
	case http.MethodPost:
	case http.MethodOptions:
		w.Header().Set("Access-Control-Allow-Methods", "POST, DELETE, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers",
			"Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID")
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet:
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			h.standalone(w, r, sid)
			return
		}
		w.Header().Set("Allow", "POST, DELETE, OPTIONS")
		h.refuse(w, http.StatusMethodNotAllowed, "Method not allowed: there is no GET stream without a session (2026-07-28 has none at all)")
		return
	case http.MethodDelete:
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			if r = h.authenticate(w, r); r == nil {
				return
			}
			if h.session(r, sid) == nil {
				h.refuse(w, http.StatusNotFound, "Not found: no such session; initialize again")
				return
			}
			if s := h.sessions.remove(sid); s != nil {
				s.close()
				w.WriteHeader(http.StatusNoContent)
				return
			}
			h.refuse(w, http.StatusNotFound, "Not found: no such session; initialize again")
			return
		}
		fallthrough
	default:
		w.Header().Set("Allow", "POST, DELETE, OPTIONS")
		h.refuse(w, http.StatusMethodNotAllowed, "Method not allowed: send JSON-RPC messages with POST")
		return
	}
	if r = h.authenticate(w, r); r == nil {
		return
	}
	if !h.enter() {
		w.Header().Set("Retry-After", "1")
		writeJSONError(w, http.StatusServiceUnavailable, nil, &jsonrpc.Error{Code: mcp.CodeServerBusy,
			Message: "Server busy: at its limit of requests in flight; retry shortly", Data: map[string]any{"retryable": true}})
		return
	}
	defer h.leave()
	if wait, ok := h.opts.Ops.allow(r); !ok {
		w.Header().Set("Retry-After", retryAfterSeconds(wait))
		writeJSONError(w, http.StatusTooManyRequests, nil, &jsonrpc.Error{Code: mcp.CodeServerBusy,
			Message: "Rate limited: too many requests from this client; retry after " + retryAfterSeconds(wait) + " s"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.refuse(w, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("Payload too large: the body exceeds %d bytes; send a smaller message", h.opts.MaxBody))
			return
		}
		h.refuse(w, http.StatusBadRequest, "Bad request: the body could not be read")
		return
	}
	if jsonrpc.IsBatch(body) {
		e := jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid request: batches are not allowed; POST one message per request")
		if !jsonrpc.Valid(body) {
			e = jsonrpc.Errorf(jsonrpc.CodeParseError, "Parse error: the body is not valid JSON")
		}
		writeJSONError(w, http.StatusBadRequest, nil, e)
		return
	}
	msg, err := jsonrpc.Decode(body)
	if err != nil {
		var de *jsonrpc.DecodeError
		errors.As(err, &de)
		writeJSONError(w, http.StatusBadRequest, msg.ID, de.AsError())
		return
	}
	observationOf(r).setMethod(msg.Method)
	sid := r.Header.Get("Mcp-Session-Id")
	pv := r.Header.Get("MCP-Protocol-Version")
	modernMeta := jsonrpc.Field(jsonrpc.Field(msg.Params, "_meta"), mcp.MetaProtocolVersion) != nil
	switch {
	case modernMeta || slices.Contains(mcp.ModernVersions, pv):
		// 2026-07-28: Mcp-Session-Id is ignored, never required (DIGEST A13); a legacy
		// MCP-Protocol-Version beside modern _meta is a mismatch the modern path reports.
		h.modern(w, r, body, msg)
	case sid != "":
		s := h.session(r, sid)
		if s == nil {
			writeJSONError(w, http.StatusNotFound, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
				"Invalid request: the session has ended or never existed; initialize again without Mcp-Session-Id"))
			return
		}
		if pv != "" && !slices.Contains(mcp.LegacyVersions, pv) {
			writeJSONError(w, http.StatusBadRequest, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
				"Invalid request: unsupported MCP-Protocol-Version "+pv))
			return
		}
		h.legacy(w, r, s, body, msg)
	case msg.Method == "initialize" && !modernMeta:
		h.initialize(w, r, body, msg)
	default:
		writeJSONError(w, http.StatusBadRequest, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"Invalid request: no session; send initialize first, or send a 2026-07-28 request with its _meta and MCP-Protocol-Version"))
	}
}

// authenticate runs the Authenticator; it returns the request with the principal in its
// context, or nil after refusing it.
func (h *MCPHandler) authenticate(w http.ResponseWriter, r *http.Request) *http.Request {
	if h.opts.Authenticator == nil {
		return r
	}
	p, err := h.opts.Authenticator(r)
	if err != nil {
		challenge := `Bearer error="invalid_token", error_description="` + strings.ReplaceAll(err.Error(), `"`, "'") + `"`
		if h.opts.ProtectedResource != nil {
			challenge += `, resource_metadata="` + resourceMetadataURL(r) + `"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		h.refuse(w, http.StatusUnauthorized, "Unauthorized: "+err.Error())
		return nil
	}
	return r.WithContext(withPrincipal(r.Context(), p))
}

// principalID names who a request is from, for binding sessions to their owner.
func principalID(r *http.Request) string {
	if p := runtime.PrincipalFrom(r.Context()); p != nil {
		return p.ID
	}
	return ""
}

// session returns the session a request names, if it exists and belongs to the request's
// principal: a session id alone never lets one user act as another.
func (h *MCPHandler) session(r *http.Request, sid string) *legacySession {
	s := h.sessions.get(sid)
	if s == nil || s.principal != principalID(r) {
		return nil
	}
	return s
}

func resourceMetadataURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + wellKnownResource
}

// refuse answers before dispatch with an id-less JSON-RPC error body.
func (h *MCPHandler) refuse(w http.ResponseWriter, status int, message string) {
	h.log.Info("refused an HTTP request", zap.Int("status", status), zap.String("reason", message))
	writeJSONError(w, status, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, message))
}

func writeJSONError(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(jsonrpc.AppendError(nil, id, e))
}

// modern serves one 2026-07-28 message in a dispatcher of its own.
func (h *MCPHandler) modern(w http.ResponseWriter, r *http.Request, body []byte, msg jsonrpc.Message) {
	switch msg.Kind {
	case jsonrpc.KindNotification:
		w.WriteHeader(http.StatusAccepted) // accepted and ignored: cancellation is closing the stream
		return
	case jsonrpc.KindResponse:
		writeJSONError(w, http.StatusBadRequest, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"Invalid request: a 2026-07-28 client never sends a response"))
		return
	}
	if e := h.checkMirroredHeaders(r, msg); e != nil {
		writeJSONError(w, http.StatusBadRequest, msg.ID, e)
		return
	}
	in := make(chan runtime.Inbound, 2) // the request, and perhaps its cancel: sends never block
	out := make(chan runtime.Outbound, 16)
	go h.rt.ServeOutbound(requestContext(h.base, r), in, out) // ends when in closes and it drains
	in <- runtime.Inbound{Frame: body}
	if _, finished := h.stream(w, r, out); !finished {
		// The client closed the stream: that is cancellation (DIGEST A8).
		cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the HTTP stream closed"}}`, msg.ID)
		in <- runtime.Inbound{Frame: []byte(cancel)}
	}
	close(in)
	for range out {
	}
}

// checkMirroredHeaders validates the headers that mirror the body (DIGEST A13): 400 and
// -32020 on any mismatch. It runs only when the body carries the modern _meta; without it,
// the dispatcher answers the missing _meta (-32602) first.
func (h *MCPHandler) checkMirroredHeaders(r *http.Request, msg jsonrpc.Message) *jsonrpc.Error {
	meta := jsonrpc.Field(msg.Params, "_meta")
	var version string
	if json.Unmarshal(jsonrpc.Field(meta, mcp.MetaProtocolVersion), &version) != nil {
		return nil
	}
	mismatch := func(what string) *jsonrpc.Error {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "Header mismatch: " + what}
	}
	if pv, ok := oneValue(r.Header, "MCP-Protocol-Version"); !ok || pv != version {
		return mismatch(fmt.Sprintf("MCP-Protocol-Version is %q but _meta says %q", r.Header.Values("MCP-Protocol-Version"), version))
	}
	if m, ok := oneValue(r.Header, "Mcp-Method"); !ok || m != msg.Method {
		return mismatch(fmt.Sprintf("Mcp-Method is %q but the body's method is %q", r.Header.Values("Mcp-Method"), msg.Method))
	}
	var nameField string
	switch msg.Method {
	case "tools/call", "prompts/get":
		nameField = "name"
	case "resources/read":
		nameField = "uri"
	default:
		return nil
	}
	var want string
	json.Unmarshal(jsonrpc.Field(msg.Params, nameField), &want)
	name, once := oneValue(r.Header, "Mcp-Name")
	got, ok := decodeHeaderValue(name)
	if !once || !ok || got != want {
		return mismatch(fmt.Sprintf("Mcp-Name must equal params.%s", nameField))
	}
	if msg.Method != "tools/call" {
		return nil
	}
	args := jsonrpc.Field(msg.Params, "arguments")
	for _, p := range h.headers(want) {
		value := args
		for _, key := range p.Path {
			value = jsonrpc.Field(value, key)
		}
		header, present := r.Header["Mcp-Param-"+http.CanonicalHeaderKey(p.Header)]
		if value == nil || string(value) == "null" {
			if present {
				return mismatch("Mcp-Param-" + p.Header + " is sent but the argument is absent")
			}
			continue
		}
		if !present || len(header) != 1 {
			return mismatch("Mcp-Param-" + p.Header + " must mirror the argument " + strings.Join(p.Path, "."))
		}
		if !headerMatches(p.Type, header[0], value) {
			return mismatch("Mcp-Param-" + p.Header + " differs from the argument " + strings.Join(p.Path, "."))
		}
	}
	return nil
}

// oneValue returns the value of a header sent exactly once: a header sent twice is refused,
// since an intermediary might route on the copy this server does not read.
func oneValue(h http.Header, name string) (string, bool) {
	v := h.Values(name)
	if len(v) != 1 {
		return "", false
	}
	return v[0], true
}

// headerMatches compares a mirrored header with the argument's JSON value: strings after
// decoding the base64 form, integers numerically, booleans as true or false.
func headerMatches(typ, header string, value json.RawMessage) bool {
	decoded, ok := decodeHeaderValue(header)
	if !ok {
		return false
	}
	switch typ {
	case "string":
		var s string
		return json.Unmarshal(value, &s) == nil && s == decoded
	case "integer":
		return sameNumber(decoded, value)
	case "boolean":
		return decoded == string(value)
	}
	return false
}

// sameNumber compares a mirrored number with the argument exactly: 42 equals 42.0, but
// 9007199254740993 does not equal 9007199254740992 as it would in float64. Both must be
// decimal JSON numbers (not "+42", "0x2Ap0" or "Inf") of at most 64 bytes with an exponent
// of at most three digits: no integer a header mirrors (within ±(2^53−1)) needs more, and a
// huge one would cost time.
func sameNumber(header string, value []byte) bool {
	a, okA := decimalNumber([]byte(header))
	b, okB := decimalNumber(value)
	return okA && okB && a.Cmp(b) == 0
}

// decimalNumber reads a decimal JSON number within the bounds sameNumber states.
func decimalNumber(s []byte) (*big.Rat, bool) {
	if len(s) == 0 || len(s) > 64 || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) ||
		bytes.ContainsAny(s, " \t\r\n") || !json.Valid(s) { // a JSON value that starts so is a number
		return nil, false
	}
	if i := bytes.IndexAny(s, "eE"); i >= 0 && len(bytes.TrimLeft(s[i+1:], "+-")) > 3 {
		return nil, false
	}
	return new(big.Rat).SetString(string(s))
}

// decodeHeaderValue undoes the =?base64?…?= form of mirrored header values. A value that is
// not in that form must be plain: visible ASCII and inner spaces only (MCP 2026-07-28,
// Transports › Streamable HTTP: anything else is sent base64).
func decodeHeaderValue(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, plainHeaderValue(v)
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	return string(b), err == nil
}

// plainHeaderValue reports whether v may be sent as it is: no control or non-ASCII byte, and
// no space at either end. The empty string is plain: an empty argument is mirrored as an
// empty header.
func plainHeaderValue(v string) bool {
	if v != "" && (v[0] == ' ' || v[len(v)-1] == ' ') {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < ' ' || v[i] > '~' {
			return false
		}
	}
	return true
}

// stream writes a request's frames to the client: one JSON object if the final answer comes
// first, or an SSE stream from the first frame before it (when the client accepts SSE). It
// returns the request's final frame, and whether the request finished; false means the client
// went away first.
func (h *MCPHandler) stream(w http.ResponseWriter, r *http.Request, frames <-chan runtime.Outbound) (final []byte, finished bool) {
	sseOK := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	var sse *sseWriter
	var keepAlive <-chan time.Time
	for {
		select {
		case <-r.Context().Done():
			observationOf(r).cancelled()
			return nil, false
		case <-keepAlive:
			if sse.comment("keep-alive") != nil {
				return nil, false
			}
		case o, ok := <-frames:
			if !ok {
				return nil, true
			}
			if o.Frame = h.capAnswer(o.Frame, o.Final); o.Frame == nil {
				continue // a notification over the response limit
			}
			if !o.Final {
				if !sseOK {
					continue // a JSON-only client cannot receive notifications
				}
				if sse == nil {
					sse = startSSE(w)
					h.opts.Ops.stream("mcp", 1)
					defer h.opts.Ops.stream("mcp", -1)
					t := time.NewTicker(h.opts.KeepAlive)
					defer t.Stop()
					keepAlive = t.C
				}
				if sse.event(o.Frame) != nil {
					return nil, false
				}
				continue
			}
			observationOf(r).answered(o.Frame)
			if sse != nil {
				sse.event(o.Frame)
				return o.Frame, true
			}
			w.Header().Set("Content-Type", "application/json")
			status, retry := statusOf(o.Frame)
			if retry {
				w.Header().Set("Retry-After", "1")
			}
			w.WriteHeader(status)
			w.Write(o.Frame)
			return o.Frame, true
		}
	}
}

// statusOf maps an answer to its HTTP status (DIGEST A13 and §F3: the unlisted JSON-RPC
// errors are 400, an internal error 500, a busy server 503).
func statusOf(frame []byte) (status int, retry bool) {
	raw := jsonrpc.Field(frame, "error")
	if raw == nil {
		return http.StatusOK, false
	}
	code, _ := strconv.ParseInt(string(jsonrpc.Field(raw, "code")), 10, 64)
	switch code {
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeInvalidParams,
		mcp.CodeHeaderMismatch, mcp.CodeMissingRequiredClientCapability, mcp.CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest, false
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound, false
	case jsonrpc.CodeInternalError:
		return http.StatusInternalServerError, false
	case mcp.CodeServerBusy:
		return http.StatusServiceUnavailable, true
	}
	return http.StatusOK, false
}

// standalone serves a legacy session's GET stream: the notifications that belong to no
// request (list changes, updates of subscribed resources), until the client goes away or the
// session ends.
func (h *MCPHandler) standalone(w http.ResponseWriter, r *http.Request, sid string) {
	if r = h.authenticate(w, r); r == nil {
		return
	}
	s := h.session(r, sid)
	if s == nil {
		h.refuse(w, http.StatusNotFound, "Not found: no such session; initialize again")
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		h.refuse(w, http.StatusNotAcceptable, "Not acceptable: the GET stream is text/event-stream")
		return
	}
	frames, ok := s.listen()
	if !ok {
		h.refuse(w, http.StatusNotFound, "Not found: the session has ended; initialize again")
		return
	}
	// An open GET stream does not make a session busy: otherwise clients holding streams
	// could keep every session from eviction and lock new ones out.
	sse := startSSE(w)
	keepAlive := time.NewTicker(h.opts.KeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			s.unlisten(frames)
			return
		case <-keepAlive.C:
			if sse.comment("keep-alive") != nil {
				s.unlisten(frames)
				return
			}
		case o, ok := <-frames:
			if !ok {
				return
			}
			s.touch()
			if sse.event(o.Frame) != nil {
				s.unlisten(frames)
				return
			}
		}
	}
}

// initialize opens an initialize-generation session.
func (h *MCPHandler) initialize(w http.ResponseWriter, r *http.Request, body []byte, msg jsonrpc.Message) {
	if msg.Kind != jsonrpc.KindRequest {
		writeJSONError(w, http.StatusBadRequest, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid request: initialize is a request"))
		return
	}
	s := startSession(withPrincipal(h.base, runtime.PrincipalFrom(r.Context())), h.rt, h.opts.Instance)
	s.principal = principalID(r)
	if !h.sessions.add(s) {
		s.close()
		w.Header().Set("Retry-After", "5")
		h.refuse(w, http.StatusServiceUnavailable, "Service unavailable: every session is busy; retry later")
		return
	}
	w.Header().Set("Mcp-Session-Id", s.id)
	if ok := h.legacy(w, r, s, body, msg); !ok {
		h.sessions.remove(s.id)
		s.close()
	}
}

// legacy serves one message of a session. It reports whether a request succeeded.
func (h *MCPHandler) legacy(w http.ResponseWriter, r *http.Request, s *legacySession, body []byte, msg jsonrpc.Message) bool {
	s.active.Add(1)
	defer s.active.Add(-1)
	defer s.touch()
	s.touch()
	var id []byte
	if msg.Kind == jsonrpc.KindRequest {
		id = msg.ID
	}
	frames, ok := s.post(body, id)
	if !ok {
		writeJSONError(w, http.StatusNotFound, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"Invalid request: the session has ended; initialize again"))
		return false
	}
	if id == nil {
		if msg.Method == "notifications/cancelled" { // its POST will get nothing more: end it
			if target := jsonrpc.Field(msg.Params, "requestId"); jsonrpc.IsRequestID(target) {
				s.drop(target)
			}
		}
		w.WriteHeader(http.StatusAccepted) // a notification, or the client's answer to our request
		return true
	}
	final, finished := h.stream(w, r, frames)
	if !finished {
		// In this generation a disconnect is not a cancellation: the request runs on.
		s.forget(id, frames)
		return false
	}
	for range frames { // closed by the session right after the final frame
	}
	return final != nil && jsonrpc.Field(final, "error") == nil
}
