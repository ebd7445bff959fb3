package httpx

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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

// MCPOptions configures an MCPHandler. The zero value is ready to use; every limit has the
// default it names, and a zero or negative value means that default.
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
	// Authorizer, when set, decides per call (a method, a tool) once the body is in:
	// TokenVerifier.Authorize checks scopes by method and tool.
	Authorizer Authorizer
	// ProtectedResource, when set, is served at /.well-known/oauth-protected-resource
	// (RFC 9728) and named in the WWW-Authenticate header of 401 answers.
	ProtectedResource *ProtectedResourceMetadata
	// MaxBody is the largest request body accepted (default 16 MiB); larger ones get 413,
	// before a byte of them is read when their Content-Length says so.
	MaxBody int64
	// BodyTimeout is how long a request body may take to arrive once its headers are in
	// (default 10 s); a body not all in by then is refused with 408 and its connection
	// closed.
	BodyTimeout time.Duration
	// BodyBudget bounds the bytes of request bodies held at once across all clients, from
	// their first byte until their request is over (default 256 MiB), and those of one
	// client (its principal, or else its address) to an eighth of it, and at least MaxBody,
	// so that no client alone can spend it. Each body takes its bytes as they arrive; one
	// that would go past either bound is refused with 503 and Retry-After before more of it
	// is read. It bounds the memory that clients sending large
	// bodies slowly can hold, whatever their number (the process's heap may still reach about
	// twice the budget before Go's collector runs, at the default GOGC); keep it well above
	// MaxBody.
	BodyBudget int64
	// MaxResponse bounds one answer (default 64 MiB): a larger one is replaced by an
	// internal error that says so. MaxInFlight bounds the POSTs served at once across all
	// clients (default 4,096); past it they get 503 with Retry-After. A POST takes its slot
	// only once its body is in, so that slow bodies hold none.
	MaxResponse, MaxInFlight int
	// MaxSessions bounds the initialize-generation sessions (default 1,000), and
	// MaxSessionsPerClient those of one client (default 100): its principal when
	// authenticated, else its remote address (behind a proxy, every anonymous client shares
	// the proxy's). To make room for a new session, the one that has waited longest on its
	// client is evicted, among the client's own at its limit and among all when the table is
	// full: a session waits on its client while idle, and while a request of the server's to
	// the client (sampling, elicitation, roots) is unanswered, so sessions that hold such
	// requests unanswered cannot lock newcomers out. The evicted session's open POSTs get a
	// retryable -32000 error that says so, its requests are cancelled, and its id is 404. A
	// session working for its client with no such request pending is never evicted; when all
	// are, initialize is refused with 503 (429 at the client's limit) and Retry-After.
	MaxSessions, MaxSessionsPerClient int
	// SessionIdle is how long an unused session lives (default 10 minutes).
	SessionIdle time.Duration
	// KeepAlive is the interval of SSE comment lines on long streams (default 15 s).
	KeepAlive time.Duration
	// EventStore keeps the events of initialize-generation sessions' SSE streams, so that a
	// client resumes a broken stream with a GET and Last-Event-ID and misses nothing (MCP
	// 2025-11-25, Transports › Streamable HTTP › Resumability and Redelivery): every such
	// stream starts with a priming event (an id, no data) and a retry interval, and every
	// event has an id. Default: NewMemoryEventStore's bounds (100,000 events, 64 MiB, 5
	// minutes, across all sessions). 2026-07-28 streams have no ids: that revision resumes
	// nothing, and ignores Last-Event-ID.
	EventStore EventStore
	// PollAfter, when set, closes the POST of an initialize-generation request that has waited
	// that long without its answer, as an event stream (opened then, and primed, if nothing
	// was sent on it yet); the client resumes it with a GET and Last-Event-ID after the
	// stream's retry interval (SSE polling, MCP 2025-11-25, Transports › Streamable HTTP), so
	// that no connection is held for a long request. Only for clients that take a stream.
	PollAfter time.Duration
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
	// SessionStore, when set, lets the instances of a fleet serve one another's
	// initialize-generation sessions, with no affinity at the load balancer: the instance that
	// opens a session keeps its record there (who owns it, what initialize negotiated, the log
	// level and subscriptions the client set since), and one that gets a request of a session
	// it does not hold takes the session up from its record. The record lives SessionIdle
	// past its last use. See package fleet for one on Redis; NewMemorySessionStore shares
	// sessions between handlers of one process.
	SessionStore SessionStore
	// Bus, with SessionStore, carries between instances what only one of them can act on:
	// the client's answer to a request of the server's (sampling, elicitation, roots) to the
	// instance that asked, a cancel to the instance running the request, a log level or
	// subscription set through one instance to the others, and the end of a deleted session.
	// Without it each instance acts only on what it gets. The same Bus as the mcp.Server's
	// (mcp.ServerOptions.Bus) does: the topics differ.
	Bus mcp.Bus
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
	path    string
	door
}

// NewMCPHandler returns a handler for s. Call Close to end its sessions and its janitor.
func NewMCPHandler(s *mcp.Server, opts *MCPOptions) *MCPHandler {
	return NewMCPProfileHandler(s.Profile(), s.ToolHeaderParams, opts)
}

// CheckInstance says what is wrong with name as MCPOptions.Instance: an instance of a fleet
// is named with letters and digits only (a stream's name ends the instance's at its first
// dash), and names kept to that work everywhere (headers, session ids).
func CheckInstance(name string) error {
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return fmt.Errorf("instance name %q: use letters and digits only", name)
		}
	}
	return nil
}

// NewMCPProfileHandler serves any MCP profile over Streamable HTTP, not only an mcp.Server's:
// a bridge to other servers, say. headers reports a tool's mirrored arguments (nil: none).
func NewMCPProfileHandler(p runtime.Profile, headers func(tool string) []mcp.HeaderParam, opts *MCPOptions) *MCPHandler {
	if headers == nil {
		headers = func(string) []mcp.HeaderParam { return nil }
	}
	var o MCPOptions
	if opts != nil {
		o = *opts
	}
	if o.Path == "" {
		o.Path = "/mcp"
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	tag := o.Instance
	if o.SessionStore != nil && tag == "" {
		tag = newFleetTag()
	}
	if err := CheckInstance(tag); err != nil && o.SessionStore != nil {
		panic("httpx: MCPOptions.Instance names an instance of a fleet: " + err.Error())
	}
	h := &MCPHandler{headers: headers, path: o.Path}
	h.init(h, "mcp", doorOptions{
		allowedOrigins: o.AllowedOrigins, allowedHosts: o.AllowedHosts,
		authenticator: o.Authenticator, authorizer: o.Authorizer, protectedResource: o.ProtectedResource,
		maxBody: o.MaxBody, bodyTimeout: o.BodyTimeout, bodyBudget: o.BodyBudget,
		maxInFlight: o.MaxInFlight, maxResponse: o.MaxResponse,
		maxSessions: o.MaxSessions, perClient: o.MaxSessionsPerClient, sessionIdle: o.SessionIdle,
		keepAlive: o.KeepAlive, instance: o.Instance, ops: o.Ops, pollAfter: o.PollAfter,
		sessionHeader: "Mcp-Session-Id",
		methods:       "POST, DELETE, OPTIONS",
		headers:       "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID",
	}, p, o.Logger, o.Runtime)
	h.sessions.store = o.EventStore
	if h.sessions.store == nil {
		h.sessions.store = NewMemoryEventStore(0, 0, 0)
	}
	if o.SessionStore != nil {
		f := &fleet{store: o.SessionStore, bus: o.Bus, tag: tag, ttl: h.o.sessionIdle, host: &h.sessions, log: h.log,
			bells: make(chan bell, 256)}
		h.sessions.fleet = f
		h.sessions.janitor.Add(2)
		go func() {
			defer h.sessions.janitor.Done()
			f.ringer(h.sessions.base)
		}()
		go func() {
			defer h.sessions.janitor.Done()
			f.listen(h.sessions.base)
		}()
	}
	return h
}

// Close ends every session and waits for each to drain, those evicted, expired or deleted
// before included, and stops the janitor. Streams still open are told the server is going
// away through their requests' Draining channel.
func (h *MCPHandler) Close() error {
	h.close()
	return nil
}

// Sessions reports how many initialize-generation sessions are open.
func (h *MCPHandler) Sessions() int { return h.sessions.len() }

// ServeHTTP serves one HTTP request through the entry path every protocol shares (door).
func (h *MCPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.door.ServeHTTP(w, r) }

func (h *MCPHandler) route(path string) (string, bool) { return "", path == h.path }

// calls lists the requests of a body, one message or a batch (the initialize generation),
// with the name of the tool or prompt, or the URI of the resource, each calls. It reads
// them with the parser dispatch uses (exact keys, the first of duplicates), so that what is
// authorized is what runs.
func (h *MCPHandler) calls(_ string, body []byte) []Call {
	if !jsonrpc.Valid(body) {
		return nil
	}
	frames := [][]byte{body}
	if jsonrpc.IsBatch(body) {
		frames, _ = jsonrpc.SplitBatch(body)
	}
	out := make([]Call, 0, len(frames))
	for _, f := range frames {
		m, err := jsonrpc.Decode(f)
		if err != nil || m.Method == "" {
			continue // never dispatched: answered as malformed
		}
		key := "name"
		if m.Method == "resources/read" {
			key = "uri"
		}
		name, _ := jsonrpc.Unquote(jsonrpc.Field(m.Params, key))
		out = append(out, Call{Method: m.Method, Name: name})
	}
	return out
}

// refusal: an id-less JSON-RPC error (MCP 2026-07-28, Transports › Streamable HTTP), -32600
// but for a busy or rate-limited server, which is -32000 and retryable.
func (h *MCPHandler) refusal(why refusal, message string) (jsonrpc.ID, *jsonrpc.Error) {
	switch why {
	case refusedBusy, refusedRate, refusedClientSessions:
		return nil, &jsonrpc.Error{Code: mcp.CodeServerBusy, Message: message, Data: map[string]any{"retryable": true}}
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, message)
}

func (h *MCPHandler) sse(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

func (h *MCPHandler) cancel(id jsonrpc.ID) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the HTTP stream closed"}}`, id)
}

func (h *MCPHandler) evicted(id jsonrpc.ID) []byte {
	return jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: mcp.CodeServerBusy,
		Message: "Session evicted: a new session needed room and this one had waited longest on its client; initialize again",
		Data:    map[string]any{"retryable": true}})
}

// other serves a session's GET stream and DELETE.
func (h *MCPHandler) other(w http.ResponseWriter, r *http.Request) bool {
	sid := r.Header.Get("Mcp-Session-Id")
	switch {
	case r.Method == http.MethodGet && sid != "":
		h.standalone(w, r, sid)
		return true
	case r.Method == http.MethodGet:
		w.Header().Set("Allow", h.o.methods)
		h.refuse(w, refusedMethod, "Method not allowed: there is no GET stream without a session (2026-07-28 has none at all)")
		return true
	case r.Method == http.MethodDelete && sid != "":
		if r = h.authenticate(w, r); r == nil {
			return true
		}
		s, ok := h.session(w, r, sid) // only the session's own principal may end it
		if !ok {
			return true
		}
		h.sessions.removeIf(s)
		s.close()
		if s.fleet != nil {
			s.fleet.deleted(r.Context(), sid)
		}
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

// post serves one POSTed message: 2026-07-28 in a dispatcher of its own, or a message of a
// session, or the initialize that opens one.
func (h *MCPHandler) post(w http.ResponseWriter, r *http.Request, _ string, body []byte) {
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
		s, err := h.sessions.find(r, sid, h.rt, h)
		if err != nil {
			h.unavailable(w, msg.ID, err)
			return
		}
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
		s.active.Add(1)
		defer s.active.Add(-1)
		h.legacy(w, r, s, body, msg, nil)
	case msg.Method == "initialize" && !modernMeta:
		h.initialize(w, r, body, msg)
	case msg.Kind == jsonrpc.KindNotification:
		// No session and no version: nothing to act on, and nothing owed. A 2026-07-28 client
		// may send one so (the official Go SDK's notifications/cancelled carries neither), and
		// an error here would reach it as a failure of its next call.
		w.WriteHeader(http.StatusAccepted)
	default:
		writeJSONError(w, http.StatusBadRequest, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"Invalid request: no session; send initialize first, or send a 2026-07-28 request with its _meta and MCP-Protocol-Version"))
	}
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
	// The client closing the stream is cancellation (DIGEST A8): gone sends the cancel.
	frames, gone, end := h.alone(r, body, msg.ID)
	defer end()
	h.respond(w, r, reply{frames: frames, gone: gone})
}

// checkMirroredHeaders validates the headers that mirror the body (DIGEST A13): 400 and
// -32020 on any mismatch. It runs only when the body carries the modern _meta; without it,
// the dispatcher answers the missing _meta (-32602) first.
func (h *MCPHandler) checkMirroredHeaders(r *http.Request, msg jsonrpc.Message) *jsonrpc.Error {
	meta := jsonrpc.Field(msg.Params, "_meta")
	version, ok := jsonrpc.Unquote(jsonrpc.Field(meta, mcp.MetaProtocolVersion))
	if !ok {
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
	case "tasks/get", "tasks/update", "tasks/cancel": // io.modelcontextprotocol/tasks routes by task
		nameField = "taskId"
	default:
		return nil
	}
	want, _ := jsonrpc.Unquote(jsonrpc.Field(msg.Params, nameField))
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

// sameNumber compares a mirrored number with the argument exactly: 42 equals 42.0, 4.2e1 and
// 0420e-1, but 9007199254740993 does not equal 9007199254740992 as it would in float64. Both
// must be decimal JSON numbers (not "+42", "0x2Ap0" or "Inf") within float64's range, as
// every integer a header mirrors (within ±(2^53−1)) is; zero is zero whatever its exponent.
func sameNumber(header string, value []byte) bool {
	a, okA := decimalNumber([]byte(header))
	b, okB := decimalNumber(value)
	return okA && okB && a == b
}

// decimal is a number as sign, significant digits (no leading or trailing zeros) and a power
// of ten: two decimals are equal exactly when their numbers are. Zero is the zero decimal.
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// decimalNumber reads a decimal JSON number in time linear in its length, whatever its
// exponent: the digits are never expanded.
func decimalNumber(s []byte) (decimal, bool) {
	if len(s) == 0 || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) ||
		bytes.ContainsAny(s, " \t\r\n") || !json.Valid(s) { // a JSON value that starts so is a number
		return decimal{}, false
	}
	var d decimal
	d.neg = s[0] == '-'
	s = bytes.TrimPrefix(s, []byte("-"))
	mant, e, hasExp := bytes.Cut(s, []byte("e"))
	if !hasExp {
		mant, e, hasExp = bytes.Cut(s, []byte("E"))
	}
	intPart, frac, _ := bytes.Cut(mant, []byte("."))
	digits := bytes.TrimLeft(append(append([]byte(nil), intPart...), frac...), "0")
	trimmed := bytes.TrimRight(digits, "0")
	if len(trimmed) == 0 {
		return decimal{}, true // zero, whatever its sign and exponent
	}
	if hasExp {
		negExp := e[0] == '-'
		e = bytes.TrimLeft(bytes.TrimLeft(e, "+-"), "0")
		if len(e) > 4 { // beyond the range below, and Atoi cannot overflow
			return decimal{}, false
		}
		n, _ := strconv.Atoi("0" + string(e))
		if negExp {
			n = -n
		}
		d.exp = n
	}
	d.exp += len(digits) - len(trimmed) - len(frac)
	d.digits = string(trimmed)
	if magnitude := d.exp + len(trimmed); magnitude > 309 || magnitude < -324 { // float64's range
		return decimal{}, false
	}
	return d, true
}

// decodeHeaderValue undoes the =?base64?…?= form of mirrored header values (both markers,
// lowercase). A value that is not in that form must be plain: visible ASCII and inner spaces only (MCP 2026-07-28,
// Transports › Streamable HTTP: anything else is sent base64).
func decodeHeaderValue(v string) (string, bool) {
	if len(v) >= len("=?base64??=") && strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=") {
		b, err := base64.StdEncoding.DecodeString(v[len("=?base64?") : len(v)-len("?=")])
		return string(b), err == nil
	}
	// Only a value with both markers is the base64 form: "=?base64?abc" is a literal (a
	// client sends a literal that looks like the whole form in base64 itself).
	return v, plainHeaderValue(v)
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

// status maps an answer to its HTTP status (DIGEST A13 and §F3: the unlisted JSON-RPC
// errors are 400, an internal error 500, a busy server 503).
func (h *MCPHandler) status(frame []byte) (status int, retry bool) {
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

// standalone serves a session's GET stream: the notifications that belong to no request
// (list changes, updates of subscribed resources), until the client goes away or the session
// ends.
func (h *MCPHandler) standalone(w http.ResponseWriter, r *http.Request, sid string) {
	if r = h.authenticate(w, r); r == nil {
		return
	}
	s, ok := h.session(w, r, sid)
	if !ok {
		return
	}
	if !h.sse(r) {
		h.refuse(w, refusedAccept, "Not acceptable: the GET stream is text/event-stream")
		return
	}
	var wt *waiter
	var replay []runtime.Outbound
	last := r.Header.Get("Last-Event-ID")
	ok = true
	if last != "" { // a stream resumed (MCP 2025-11-25, Transports › Streamable HTTP › Resumability)
		stream, seq, valid := parseEventID(last)
		if !valid {
			h.refuse(w, refusedBody, "Bad request: Last-Event-ID is not an event id of this server's")
			return
		}
		var res resumed
		wt, res = s.resume(stream, seq)
		switch {
		case wt == nil:
			ok = false
		case res.remote:
			h.follow(w, r, s, stream, seq)
			return
		case !res.ok:
			h.refuse(w, refusedSession, "Not found: the stream's events after Last-Event-ID are no longer kept; send the request again")
			return
		case !res.live && len(res.events) == 0:
			// A request's stream that has ended, all of it delivered: there is nothing to
			// resume, and the GET becomes the session's stream (a client that resumes after
			// an error answer, as some do, gets that rather than an error).
			last, wt = "", nil
		case !res.live:
			replay, wt = res.events, nil // the request's stream, to its answer; then it ends
		default:
			replay = res.events
		}
	}
	if last == "" {
		wt, ok = s.listen()
	}
	if !ok {
		h.refuse(w, refusedSession, "Not found: the session has ended; initialize again")
		return
	}
	if wt != nil {
		defer wt.leave()
	}
	// An open GET stream does not make a session busy: otherwise clients holding streams
	// could keep every session from eviction and lock new ones out.
	sse := startSSE(w)
	h.o.ops.stream(h.name, 1) // an open stream like a POST's, in the metrics
	defer h.o.ops.stream(h.name, -1)
	if wt != nil && wt.primed != "" && sse.prime(wt.primed) != nil {
		return
	}
	for _, o := range replay {
		if frame := h.capAnswer(o.Frame, o.Final); frame != nil && sse.eventWithID(frame, o.Event) != nil {
			return
		}
	}
	if wt == nil {
		return
	}
	keepAlive := time.NewTicker(h.o.keepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			if sse.comment("keep-alive") != nil {
				return
			}
		case o, ok := <-wt.out:
			if !ok {
				return
			}
			s.touch()
			final := o.Final && o.Request != nil // a frame of the session's own is never an answer
			frame := h.capAnswer(o.Frame, final)
			if frame != nil && sse.eventWithID(frame, o.Event) != nil {
				return
			}
			if final {
				return // a resumed request's stream ends with its answer
			}
		}
	}
}

// session finds the session a GET or DELETE names, or refuses the request.
func (h *MCPHandler) session(w http.ResponseWriter, r *http.Request, sid string) (*session, bool) {
	s, err := h.sessions.find(r, sid, h.rt, h)
	switch {
	case err != nil:
		w.Header().Set("Retry-After", "1")
		h.refuse(w, refusedBusy, "Service unavailable: "+err.Error()+"; retry")
		return nil, false
	case s == nil:
		h.refuse(w, refusedSession, "Not found: no such session; initialize again")
		return nil, false
	}
	return s, true
}

// unavailable answers a session's POST that the fleet could not serve: err says why.
func (h *MCPHandler) unavailable(w http.ResponseWriter, id jsonrpc.ID, err error) {
	w.Header().Set("Retry-After", "1")
	writeJSONError(w, http.StatusServiceUnavailable, id, &jsonrpc.Error{Code: mcp.CodeServerBusy,
		Message: "Service unavailable: " + err.Error() + "; retry", Data: map[string]any{"retryable": true}})
}

// initialize opens an initialize-generation session.
func (h *MCPHandler) initialize(w http.ResponseWriter, r *http.Request, body []byte, msg jsonrpc.Message) {
	if msg.Kind != jsonrpc.KindRequest {
		writeJSONError(w, http.StatusBadRequest, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid request: initialize is a request"))
		return
	}
	s, why, ok := h.sessions.open(r, h.rt, h, h.o.instance)
	if !ok {
		w.Header().Set("Retry-After", "5")
		h.refuse(w, why, sessionRefusal(why))
		return
	}
	defer s.active.Add(-1)
	// The session is named only in an answer that is not an error: a refused initialize (its
	// state could not be kept, say) opens no session for the client to use.
	named := func(final []byte) {
		if final == nil || jsonrpc.Field(final, "error") == nil {
			w.Header().Set("Mcp-Session-Id", s.id)
		}
	}
	if ok := h.legacy(w, r, s, body, msg, named); !ok {
		h.sessions.remove(s.id)
		s.close()
	}
}

// legacy serves one message of a session. It reports whether a request succeeded.
func (h *MCPHandler) legacy(w http.ResponseWriter, r *http.Request, s *session, body []byte, msg jsonrpc.Message, head func(final []byte)) bool {
	defer s.touch()
	s.touch()
	var key, answers, cancels string
	switch msg.Kind {
	case jsonrpc.KindRequest:
		key = string(msg.ID)
	case jsonrpc.KindResponse:
		answers = string(msg.ID)
	case jsonrpc.KindNotification:
		if msg.Method == "notifications/cancelled" {
			if target := jsonrpc.Field(msg.Params, "requestId"); jsonrpc.IsRequestID(target) {
				cancels = string(target)
			}
		}
	}
	wt, took := s.post(body, key, answers, cancels, h.sse(r))
	if took == postRefused && s.fleet != nil {
		// This instance's replica ended (expired, evicted, closing) after it was found; the
		// session may live on in the fleet: find it again, once.
		s.fleet.host.removeIf(s)
		if again, err := h.sessions.find(r, s.id, h.rt, h); err == nil && again != nil && again != s {
			again.active.Add(1)
			defer again.active.Add(-1)
			s = again
			wt, took = s.post(body, key, answers, cancels, h.sse(r))
		}
	}
	switch took {
	case postRefused:
		writeJSONError(w, http.StatusNotFound, msg.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"Invalid request: the session has ended; initialize again"))
		return false
	case postElsewhere: // fleet: for the instance that asked, or that runs the request
		kind, key := byte(busAnswer), answers
		if cancels != "" {
			kind, key = busCancel, cancels
		}
		ctx, cancel := context.WithTimeout(r.Context(), fleetTimeout)
		defer cancel()
		if err := s.fleet.publish(ctx, s.id, kind, key, body); err != nil {
			h.log.Warn("a message for another instance of the session could not be passed on", zap.String("session", s.id), zap.Error(err))
			w.Header().Set("Retry-After", "1")
			writeJSONError(w, http.StatusServiceUnavailable, nil, jsonrpc.Errorf(mcp.CodeServerBusy,
				"Service unavailable: the message could not reach the instance it is for; send it again"))
			return false
		}
	}
	if key == "" {
		if cancels != "" { // its POST will get nothing more: end it
			s.drop(cancels)
		}
		w.WriteHeader(http.StatusAccepted) // a notification, or the client's answer to our request
		return true
	}
	// In this generation a disconnect is not a cancellation: the request runs on, and what it
	// sends is dropped.
	final, finished := h.respond(w, r, reply{frames: wt.out, gone: wt.leave, inBand: true, id: msg.ID,
		start: func() string { return s.startStream(key) }, head: head})
	return finished && final != nil && jsonrpc.Field(final, "error") == nil
}
