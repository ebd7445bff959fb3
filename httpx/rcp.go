package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// RCPOptions configures an RCPHandler. The zero value is ready to use.
type RCPOptions struct {
	// Base is the path prefix (default "/rcp"): requests go to <Base>/<method>, batches to
	// <Base> itself.
	Base string
	// Sessions selects session mode: initialize returns a token in result._meta.session that
	// every later request sends in the RCP-Session header, and the full lifecycle applies per
	// session. Without it (the default) the server is stateless: every request is implicitly
	// initialised at the advertised capabilities.
	Sessions bool
	// AllowedOrigins, AllowedHosts, Authenticator and MaxBody are as in MCPOptions.
	AllowedOrigins []string
	AllowedHosts   []string
	Authenticator  Authenticator
	MaxBody        int64
	// MaxResponse and MaxInFlight are as in MCPOptions.
	MaxResponse, MaxInFlight int
	// MaxSessions and SessionIdle bound session mode (defaults 1,000 and 10 minutes).
	MaxSessions int
	SessionIdle time.Duration
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
	s    *rcp.Server
	rt   *runtime.Server
	opts RCPOptions
	log  *zap.Logger
	sessionHost
	limits
	streaming bool
	compacts  atomic.Uint64 // numbers the stand-in ids of compact envelopes
}

// NewRCPHandler returns a handler for s. Call Close to end its sessions.
func NewRCPHandler(s *rcp.Server, opts *RCPOptions) *RCPHandler {
	h := &RCPHandler{s: s}
	if opts != nil {
		h.opts = *opts
	}
	o := &h.opts
	if o.Base == "" {
		o.Base = "/rcp"
	}
	o.Base = strings.TrimSuffix(o.Base, "/")
	if o.MaxBody <= 0 {
		o.MaxBody = 16 << 20
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 1000
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = 10 * time.Minute
	}
	h.log = o.Logger
	if h.log == nil {
		h.log = runtime.DefaultLogger()
	}
	profile := s.StatelessProfile()
	if o.Sessions {
		profile = s.Profile()
	}
	h.rt = runtime.NewServer(profile, append([]runtime.Option{runtime.WithLogger(h.log)}, o.Runtime...)...)
	h.streaming = s.Advertises("streaming")
	h.limits = newLimits(o.MaxInFlight, o.MaxResponse)
	h.start(o.MaxSessions, o.SessionIdle)
	return h
}

// Close ends every session and the janitor.
func (h *RCPHandler) Close() error {
	h.close()
	return nil
}

// refuse answers before dispatch: the status, and a JSON-RPC error with id null.
func (h *RCPHandler) refuse(w http.ResponseWriter, status int, code int64, message string) {
	h.log.Info("refused an RCP request", zap.Int("status", status), zap.String("reason", message))
	writeJSONError(w, status, jsonrpc.Null, &jsonrpc.Error{Code: code, Message: message})
}

func (h *RCPHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	ob := h.opts.Ops.begin("rcp")
	w := &statusWriter{ResponseWriter: rw}
	defer func() {
		ob.end(w.status)
		h.opts.Ops.sessionCount("rcp", h.sessions.len())
	}()
	h.serveHTTP(w, r.WithContext(context.WithValue(r.Context(), observationKey{}, ob)))
}

func (h *RCPHandler) serveHTTP(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, h.opts.Base)
	if !ok || (method != "" && !strings.HasPrefix(method, "/")) {
		h.refuse(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "Not found: RCP is served under "+h.opts.Base+"/<method>")
		return
	}
	method = strings.TrimPrefix(method, "/")
	if !hostAllowed(r.Host, h.opts.AllowedHosts) {
		h.refuse(w, http.StatusForbidden, rcp.CodeUnauthorized, "Forbidden: this server answers only to a loopback Host (DNS rebinding protection)")
		return
	}
	origin := r.Header.Get("Origin")
	if !originAllowed(origin, h.opts.AllowedOrigins) {
		h.refuse(w, http.StatusForbidden, rcp.CodeUnauthorized, "Forbidden: Origin "+origin+" is not allowed")
		return
	}
	if origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
	}
	switch r.Method {
	case http.MethodPost:
	case http.MethodOptions:
		w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Accept, Authorization, RCP-Session")
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", "POST, OPTIONS")
		h.refuse(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "Method not allowed: POST JSON-RPC to "+h.opts.Base+"/<method>")
		return
	}
	if h.opts.Authenticator != nil {
		p, err := h.opts.Authenticator(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			h.refuse(w, http.StatusUnauthorized, rcp.CodeUnauthorized, "Unauthorized: "+err.Error())
			return
		}
		r = r.WithContext(withPrincipal(r.Context(), p))
	}
	if wait, ok := h.opts.Ops.allow(r); !ok {
		w.Header().Set("Retry-After", retryAfterSeconds(wait))
		h.refuse(w, http.StatusTooManyRequests, rcp.CodeRateLimited,
			"Rate limited: too many requests from this client; retry after "+retryAfterSeconds(wait)+" s")
		return
	}
	if !h.enter() {
		w.Header().Set("Retry-After", "1")
		h.refuse(w, http.StatusServiceUnavailable, rcp.CodeBackendUnavailable,
			"Backend unavailable: the server is at its limit of requests in flight; retry shortly")
		return
	}
	defer h.leave()
	if method == "" {
		observationOf(r).setMethod("batch")
	} else {
		observationOf(r).setMethod(method)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.refuse(w, http.StatusRequestEntityTooLarge, rcp.CodePayloadTooLarge,
				fmt.Sprintf("Payload too large: the body exceeds %d bytes; split the request", h.opts.MaxBody))
			return
		}
		h.refuse(w, http.StatusBadRequest, jsonrpc.CodeParseError, "Bad request: the body could not be read")
		return
	}
	frame, id, compact, status, refusal := h.prepare(body, method)
	if refusal != nil {
		writeJSONError(w, status, id, refusal)
		return
	}
	var sess *legacySession
	opened := false // by this initialize
	if h.opts.Sessions {
		if token := r.Header.Get("RCP-Session"); token != "" {
			if sess = h.sessions.get(token); sess == nil || sess.principal != principalID(r) {
				h.refuse(w, http.StatusNotFound, rcp.CodeNotInitialized, "Not found: the session has ended or never existed; initialize again")
				return
			}
		} else if method == "initialize" {
			sess = startSession(withPrincipal(h.base, runtime.PrincipalFrom(r.Context())), h.rt, "")
			sess.principal = principalID(r)
			if !h.sessions.add(sess) {
				sess.close()
				w.Header().Set("Retry-After", "5")
				h.refuse(w, http.StatusServiceUnavailable, rcp.CodeBackendUnavailable, "Backend unavailable: every session is busy; retry later")
				return
			}
			opened = true
		}
	}
	h.serve(w, r, sess, frame, id, compact, opened)
}

// prepare checks a body against the URL and returns the frame to dispatch: a batch (posted
// to the base), a request or notification whose method matches the URL, or a compact
// {method, params} envelope made into a request. A compact envelope has no id, so every
// answer to it, a refusal here or whatever the dispatcher says, carries id null (RCP/1 §5.3).
func (h *RCPHandler) prepare(body []byte, urlMethod string) (frame []byte, id jsonrpc.ID, compact bool, status int, refusal *jsonrpc.Error) {
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
		frame, id, status, refusal = h.prepareOne(h.compactRequest(body), urlMethod)
		if refusal != nil {
			id = jsonrpc.Null
		}
		return frame, id, true, status, refusal
	}
	frame, id, status, refusal = h.prepareOne(body, urlMethod)
	return frame, id, false, status, refusal
}

// prepareOne checks a body that is one message, not a batch.
func (h *RCPHandler) prepareOne(body []byte, urlMethod string) (frame []byte, id jsonrpc.ID, status int, refusal *jsonrpc.Error) {
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

// serve dispatches one frame (in the session's dispatcher, or a dispatcher of its own) and
// writes what comes back: 204 when nothing is owed (notifications), the answer as JSON, or
// progress as SSE when the client asks for it and the server advertises streaming. When
// opened, sess was opened for this initialize: a result carries its token, an error closes it.
func (h *RCPHandler) serve(w http.ResponseWriter, r *http.Request, sess *legacySession, frame []byte, id jsonrpc.ID, compact, opened bool) {
	owed := id != nil || batchOwesAnswer(frame)
	var frames <-chan runtime.Outbound
	var cancel func()
	if sess != nil {
		sess.active.Add(1)
		defer sess.active.Add(-1)
		defer sess.touch()
		var key []byte
		switch {
		case id != nil:
			key = id
		case owed:
			key = []byte(batchKey)
		}
		out, ok := sess.post(frame, key)
		if !ok {
			h.refuse(w, http.StatusNotFound, rcp.CodeNotInitialized, "Not found: the session has ended; initialize again")
			return
		}
		if !owed {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		frames = out
		cancel = func() {
			sess.forget(key, out) // first, so the actor never waits on this stream again
			if id != nil {        // closing the stream cancels the request within its session
				sess.post(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":%s}}`, id), nil)
			}
		}
	} else {
		in := make(chan runtime.Inbound, 2)
		out := make(chan runtime.Outbound, 16)
		go h.rt.ServeOutbound(requestContext(h.base, r), in, out)
		in <- runtime.Inbound{Frame: frame}
		if id == nil {
			close(in) // a notification or a batch: input ends here, the dispatcher drains
		}
		defer func() {
			if id != nil {
				close(in) // the request is answered (or cancelled): input ends, the dispatcher stops
			}
			for range out {
			}
		}()
		frames = out
		cancel = func() {
			in <- runtime.Inbound{Frame: fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":%s}}`, id)}
		}
		if !owed {
			w.WriteHeader(http.StatusNoContent) // the deferred drain waits for the dispatcher
			return
		}
	}
	sseOK := h.streaming && strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	var sse *sseWriter
	for {
		select {
		case <-r.Context().Done():
			observationOf(r).cancelled()
			if id != nil || sess != nil {
				cancel() // closing the response stream cancels the request
			}
			return
		case o, ok := <-frames:
			if !ok {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			if !o.Final {
				if frame := h.capAnswer(o.Frame, false); sseOK && o.Request != nil && frame != nil {
					if sse == nil {
						sse = startSSE(w)
						h.opts.Ops.stream("rcp", 1)
						defer h.opts.Ops.stream("rcp", -1)
					}
					sse.event(o.Frame)
				}
				continue
			}
			observationOf(r).answered(o.Frame)
			answer := h.capAnswer(o.Frame, true)
			if compact {
				answer = jsonrpc.SetMember(answer, "id", jsonrpc.Null)
			}
			if opened {
				if jsonrpc.Field(answer, "error") == nil {
					answer = withSessionToken(answer, sess.id)
				} else {
					h.sessions.remove(sess.id)
					sess.close()
				}
			}
			if sse != nil {
				sse.event(answer)
			} else {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				w.Write(answer)
			}
			return
		}
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
