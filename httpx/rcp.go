package httpx

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/rcp"
	"github.com/relayrt/relay/runtime"
)

// RCPOptions configures an RCPHandler. The zero value is ready to use; every limit has the
// default it names, and a zero or negative value means that default.
type RCPOptions struct {
	// Base is the path prefix (default "/rcp"): requests go to <Base>/<method>, batches to
	// <Base> itself.
	Base string
	// Sessions selects session mode: initialize returns a token in result._meta.session that
	// every later request sends in the RCP-Session header, and the full lifecycle applies per
	// session. Without it (the default) the server is stateless: every request is implicitly
	// initialised at the advertised capabilities.
	Sessions bool
	// AllowedOrigins, AllowedHosts, Authenticator and ProtectedResource are as in
	// MCPOptions.
	AllowedOrigins    []string
	AllowedHosts      []string
	Authenticator     Authenticator
	Authorizer        Authorizer
	ProtectedResource *ProtectedResourceMetadata
	// MaxBody (default 16 MiB, 413), BodyTimeout (default 10 s, 408) and BodyBudget
	// (default 256 MiB of bodies across all clients, an eighth of it per client, 503) are as
	// in MCPOptions; RCP's
	// refusals carry -32013, -32014 and -32010.
	MaxBody     int64
	BodyTimeout time.Duration
	BodyBudget  int64
	// MaxResponse (default 64 MiB) and MaxInFlight (default 4,096, taken once the body is
	// in; 503 and -32010 past it) are as in MCPOptions.
	MaxResponse, MaxInFlight int
	// MaxSessions (default 1,000), MaxSessionsPerClient (default 100) and SessionIdle
	// (default 10 minutes) bound session mode, with the eviction policy of MCPOptions: the
	// session idle longest goes to make room, and when every one is working, initialize is
	// refused with 503 and -32010 (429 and -32011 at the client's limit).
	MaxSessions, MaxSessionsPerClient int
	SessionIdle                       time.Duration
	// Logger logs refusals and failures (default: the runtime's, on stderr).
	Logger *zap.Logger
	// Runtime options for the dispatchers.
	Runtime []runtime.Option
	// Ops, when set, gets the handler's metrics and applies its rate limiter.
	Ops *Ops
}

// RCPHandler serves an RCP/1 server over its HTTP binding (R §5.2): every well-formed
// JSON-RPC answer, errors included, is 200; other statuses are refusals before dispatch.
type RCPHandler struct {
	base      string
	stateful  bool
	streaming bool
	compacts  atomic.Uint64 // numbers the stand-in ids of compact envelopes
	door
}

// NewRCPHandler returns a handler for s. Call Close to end its sessions.
func NewRCPHandler(s *rcp.Server, opts *RCPOptions) *RCPHandler {
	var o RCPOptions
	if opts != nil {
		o = *opts
	}
	if o.Base == "" {
		o.Base = "/rcp"
	}
	h := &RCPHandler{base: strings.TrimSuffix(o.Base, "/"), stateful: o.Sessions, streaming: s.Advertises("streaming")}
	profile := s.StatelessProfile()
	if o.Sessions {
		profile = s.Profile()
	}
	h.init(h, "rcp", doorOptions{
		allowedOrigins: o.AllowedOrigins, allowedHosts: o.AllowedHosts,
		authenticator: o.Authenticator, authorizer: o.Authorizer, protectedResource: o.ProtectedResource,
		maxBody: o.MaxBody, bodyTimeout: o.BodyTimeout, bodyBudget: o.BodyBudget,
		maxInFlight: o.MaxInFlight, maxResponse: o.MaxResponse,
		maxSessions: o.MaxSessions, perClient: o.MaxSessionsPerClient, sessionIdle: o.SessionIdle,
		ops:           o.Ops,
		sessionHeader: "RCP-Session",
		methods:       "POST, OPTIONS",
		headers:       "Content-Type, Accept, Authorization, RCP-Session",
	}, profile, o.Logger, o.Runtime)
	return h
}

// Close ends every session and waits for each to drain, those evicted, expired or deleted
// before included, and stops the janitor.
func (h *RCPHandler) Close() error {
	h.close()
	return nil
}

// ServeHTTP serves one HTTP request through the entry path every protocol shares (door).
func (h *RCPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.door.ServeHTTP(w, r) }

// route: <Base>/<method>, or <Base> itself for a batch.
func (h *RCPHandler) route(path string) (string, bool) {
	method, ok := strings.CutPrefix(path, h.base)
	if !ok || (method != "" && !strings.HasPrefix(method, "/")) {
		return "", false
	}
	return strings.TrimPrefix(method, "/"), true
}

// calls: the method the path names (RCP/1 §5.1: one method per POST) and, should the body
// name another (a notification, which prepare lets through), that one too; for a batch
// posted to the base path, the method of each member.
func (h *RCPHandler) calls(target string, body []byte) []Call {
	if !jsonrpc.Valid(body) {
		return nil
	}
	if target != "" {
		out := []Call{{Method: target}}
		if m, err := jsonrpc.Decode(body); err == nil && m.Method != "" && m.Method != target {
			out = append(out, Call{Method: m.Method})
		}
		return out
	}
	members, err := jsonrpc.SplitBatch(body)
	if err != nil {
		return nil // not a batch: refused at the base path
	}
	out := make([]Call, 0, len(members))
	for _, f := range members {
		if m, err := jsonrpc.Decode(f); err == nil && m.Method != "" {
			out = append(out, Call{Method: m.Method})
		}
	}
	return out
}

// refusal: a JSON-RPC error with id null (RCP/1 §4), with the code that is the HTTP status's
// counterpart (RCP/1 §5.2, §12).
func (h *RCPHandler) refusal(why refusal, message string) (jsonrpc.ID, *jsonrpc.Error) {
	code := int64(jsonrpc.CodeInvalidRequest)
	var data any
	switch why {
	case refusedHost, refusedOrigin, refusedAuth, refusedScope: // RCP/1 §5.2 (401/403), §15.6
		code = rcp.CodeUnauthorized
	case refusedRate, refusedClientSessions:
		code, data = rcp.CodeRateLimited, map[string]any{"retryable": true}
	case refusedBusy:
		code, data = rcp.CodeBackendUnavailable, map[string]any{"retryable": true}
	case refusedTooLarge:
		code = rcp.CodePayloadTooLarge
	case refusedSlow:
		code = rcp.CodeTimeout
	case refusedBody:
		code = jsonrpc.CodeParseError
	case refusedSession:
		code = rcp.CodeNotInitialized
	}
	return jsonrpc.Null, &jsonrpc.Error{Code: code, Message: message, Data: data}
}

// status: every JSON-RPC answer is 200 (RCP/1 §5.2).
func (h *RCPHandler) status([]byte) (int, bool) { return http.StatusOK, false }

// sse: progress is streamed when the client accepts SSE and the server advertises streaming
// (RCP/1 §5.2).
func (h *RCPHandler) sse(r *http.Request) bool {
	return h.streaming && strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

func (h *RCPHandler) cancel(id jsonrpc.ID) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":%s}}`, id)
}

func (h *RCPHandler) evicted(id jsonrpc.ID) []byte {
	return jsonrpc.AppendError(nil, id, &jsonrpc.Error{Code: rcp.CodeBackendUnavailable,
		Message: "Session evicted: a new session needed room and this one had been idle longest; initialize again", Data: map[string]any{"retryable": true}})
}

func (h *RCPHandler) other(http.ResponseWriter, *http.Request) bool { return false }

// post checks the body against the URL, finds or opens the session in session mode, and
// serves the frame.
func (h *RCPHandler) post(w http.ResponseWriter, r *http.Request, method string, body []byte) {
	if method == "" {
		observationOf(r).setMethod("batch")
	} else {
		observationOf(r).setMethod(method)
	}
	frame, id, compact, status, e := h.prepare(body, method)
	if e != nil {
		writeJSONError(w, status, id, e)
		return
	}
	if !h.stateful {
		h.serveAlone(w, r, frame, id, compact)
		return
	}
	var sess *session
	opened := false // by this initialize
	if token := r.Header.Get("RCP-Session"); token != "" {
		if sess = h.sessions.lookup(r, token); sess == nil {
			h.refuse(w, refusedSession, "Not found: the session has ended or never existed; initialize again")
			return
		}
		sess.active.Add(1)
	} else if method == "initialize" {
		var why refusal
		var ok bool
		if sess, why, ok = h.sessions.open(r, h.rt, h, ""); !ok {
			w.Header().Set("Retry-After", "5")
			h.refuse(w, why, sessionRefusal(why))
			return
		}
		opened = true
	} else {
		h.serveAlone(w, r, frame, id, compact) // before initialize: the session profile refuses it
		return
	}
	defer sess.active.Add(-1)
	h.serveInSession(w, r, sess, frame, id, compact, opened)
}

// prepare checks a body against the URL and returns the frame to dispatch: a batch (posted
// to the base), a request or notification whose method matches the URL, or a compact
// {method, params} envelope made into a request. A compact envelope has no id, so every
// answer to it, a refusal here or whatever the dispatcher says, carries id null (RCP/1 §5.3).
func (h *RCPHandler) prepare(body []byte, urlMethod string) (frame []byte, id jsonrpc.ID, compact bool, status int, e *jsonrpc.Error) {
	if jsonrpc.IsBatch(body) {
		if urlMethod != "" {
			return nil, jsonrpc.Null, false, http.StatusOK, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "Invalid request: post a batch to the base path itself")
		}
		if !jsonrpc.Valid(body) {
			return nil, jsonrpc.Null, false, http.StatusBadRequest, jsonrpc.Errorf(jsonrpc.CodeParseError, "Parse error: the body is not valid JSON")
		}
		return body, nil, false, 0, nil
	}
	if !jsonrpc.Valid(body) {
		return nil, jsonrpc.Null, false, http.StatusBadRequest, jsonrpc.Errorf(jsonrpc.CodeParseError, "Parse error: the body is not valid JSON")
	}
	if jsonrpc.Field(body, "jsonrpc") == nil && jsonrpc.Field(body, "id") == nil && jsonrpc.Field(body, "method") != nil {
		frame, id, status, e = h.prepareOne(h.compactRequest(body), urlMethod)
		if e != nil {
			id = jsonrpc.Null
		}
		return frame, id, true, status, e
	}
	frame, id, status, e = h.prepareOne(body, urlMethod)
	return frame, id, false, status, e
}

// prepareOne checks a body that is one message, not a batch.
func (h *RCPHandler) prepareOne(body []byte, urlMethod string) (frame []byte, id jsonrpc.ID, status int, e *jsonrpc.Error) {
	msg, err := jsonrpc.Decode(body)
	if err != nil {
		if msg.Kind == jsonrpc.KindNotification {
			return body, nil, 0, nil // never answered: the dispatcher logs it
		}
		var de *jsonrpc.DecodeError
		errors.As(err, &de)
		id := msg.ID
		if id == nil {
			id = jsonrpc.Null
		}
		return nil, id, http.StatusOK, de.AsError() // a JSON-RPC answer: 200
	}
	if msg.Kind == jsonrpc.KindRequest && msg.Method != urlMethod {
		return nil, msg.ID, http.StatusOK, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("Invalid request: the URL names %q but the body's method is %q", urlMethod, msg.Method))
	}
	return body, msg.ID, 0, nil
}

// compactRequest makes a compact envelope into a request: its method as it is (so that one
// that is not a string is refused as any request's would be), its params ({} when absent),
// and an id that stands in for the missing one while it is dispatched. The id is new for
// every envelope, so that two in flight in one session are two requests.
func (h *RCPHandler) compactRequest(body []byte) []byte {
	params := jsonrpc.Field(body, "params")
	if params == nil {
		params = json.RawMessage("{}")
	}
	frame := append([]byte(nil), `{"jsonrpc":"2.0","id":"relay-compact-`...)
	frame = strconv.AppendUint(frame, h.compacts.Add(1), 10)
	frame = append(frame, `","method":`...)
	frame = append(frame, jsonrpc.Field(body, "method")...)
	frame = append(frame, `,"params":`...)
	frame = append(frame, params...)
	return append(frame, '}')
}

// serveAlone dispatches a frame in a dispatcher of its own and writes what comes back: 204
// when nothing is owed (notifications, a batch of them), else the answer as JSON, or progress
// as SSE when the client asks for it and the server advertises streaming.
func (h *RCPHandler) serveAlone(w http.ResponseWriter, r *http.Request, frame []byte, id jsonrpc.ID, compact bool) {
	frames, gone, end := h.alone(r, frame, id)
	defer end()
	if id == nil && !batchOwesAnswer(frame) {
		w.WriteHeader(http.StatusNoContent) // the deferred end waits for the dispatcher
		return
	}
	h.respond(w, r, reply{frames: frames, gone: gone, final: compactAnswer(compact)})
}

// serveInSession dispatches a frame in a session and writes what comes back, as serveAlone.
// Closing the stream cancels the request within its session. When opened, the session was
// opened by this initialize: a result carries its token, an error closes it.
func (h *RCPHandler) serveInSession(w http.ResponseWriter, r *http.Request, sess *session, frame []byte, id jsonrpc.ID, compact, opened bool) {
	defer sess.touch()
	sess.touch()
	var key string
	switch {
	case id != nil:
		key = string(id)
	case batchOwesAnswer(frame):
		key = batchKey
	}
	wt, took := sess.post(frame, key, "", "", false)
	if took != postTaken {
		h.refuse(w, refusedSession, "Not found: the session has ended; initialize again")
		return
	}
	if key == "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	gone := func() {
		wt.leave() // first, so the session never waits on this stream again
		if id != nil {
			sess.post(h.cancel(id), "", "", "", false)
		}
	}
	shape := compactAnswer(compact)
	final := func(answer []byte) []byte {
		answer = shape(answer)
		if opened {
			if jsonrpc.Field(answer, "error") == nil {
				answer = withSessionToken(answer, sess.id)
			} else {
				h.sessions.remove(sess.id)
				sess.close()
			}
		}
		return answer
	}
	h.respond(w, r, reply{frames: wt.out, gone: gone, final: final})
}

// compactAnswer shapes the answer to a compact envelope: id null, as every answer to a
// request whose id could not be read (RCP/1 §4, §5.3).
func compactAnswer(compact bool) func([]byte) []byte {
	return func(answer []byte) []byte {
		if compact {
			answer = jsonrpc.SetMember(answer, "id", jsonrpc.Null)
		}
		return answer
	}
}

// batchOwesAnswer reports whether a frame is a batch with at least one request in it (or a
// malformed member, which is answered too).
func batchOwesAnswer(frame []byte) bool {
	if !jsonrpc.IsBatch(frame) {
		return false
	}
	members, err := jsonrpc.SplitBatch(frame)
	if err != nil || len(members) == 0 {
		return true
	}
	for _, m := range members {
		if msg, _ := jsonrpc.Decode(m); msg.Kind != jsonrpc.KindNotification && msg.Kind != jsonrpc.KindResponse {
			return true
		}
	}
	return false
}

// withSessionToken puts the session token into an initialize result's _meta.
func withSessionToken(answer []byte, token string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(answer, &m) != nil {
		return answer
	}
	var result map[string]json.RawMessage
	json.Unmarshal(m["result"], &result)
	meta := map[string]json.RawMessage{}
	json.Unmarshal(result["_meta"], &meta)
	meta["session"], _ = json.Marshal(token)
	result["_meta"], _ = json.Marshal(meta)
	m["result"], _ = json.Marshal(result)
	out, _ := json.Marshal(m)
	return out
}
