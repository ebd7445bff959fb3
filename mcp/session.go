package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// session is the MCP state of one connection. Only legacy clients have any: a 2026-07-28
// request is served from its own _meta alone. The runtime calls Route and Notification on the
// connection's dispatcher goroutine, so the session's own fields need no locks.
type session struct {
	s      *Server
	peer   *runtime.Peer
	legacy *legacySession
	kept   *runtime.SessionState // where a transport keeps the legacy state; nil: nowhere
}

// newSession is the runtime's NewSession: a connection's session, restored from the state its
// transport kept when it serves a session that began elsewhere (another process of a fleet).
func (s *Server) newSession(peer *runtime.Peer) runtime.Session {
	ss := &session{s: s, peer: peer, kept: peer.SessionState()}
	if ss.kept != nil && ss.kept.Restore != nil {
		ss.TakeState(ss.kept.Restore)
	}
	return ss
}

// TakeState takes the legacy state another connection of the session saved (in another
// process of a fleet): it begins the session if this connection has not, and takes what the
// client set since. A state that cannot be read is logged and left: a connection that has
// none asks its requests to initialize.
func (ss *session) TakeState(raw []byte) {
	var st savedSession
	if err := json.Unmarshal(raw, &st); err != nil || st.V != 1 || st.Version == "" {
		ss.peer.Logger().Warn("mcp: a session's kept state could not be read, and is left", zap.Error(err), zap.Int("version", st.V))
		return
	}
	l := ss.legacy
	if l != nil && st.Rev <= l.rev {
		return // this one has it already, or a newer one
	}
	if l == nil {
		l = ss.begin(st.Version, st.Caps)
	}
	l.apply(&st)
}

// legacySession is what an initialize handshake established, for the life of the connection.
type legacySession struct {
	version     string
	pv          protocolVersion // version, as a Request keeps it
	caps        json.RawMessage
	logLevel    int    // -1 until logging/setLevel
	initialized bool   // notifications/initialized has arrived
	rev         uint64 // of the state kept (runtime.SessionState): the last saved or taken
	peer        *runtime.Peer

	// The forwarder goroutine sends server-wide changes to this client. Whether the client
	// subscribed to an updated resource is asked on the dispatcher's goroutine (Peer.Run),
	// where Route changes subs: the session's state has one owner and no lock.
	changes chan change
	stop    chan struct{}
	done    chan struct{}
	subs    map[string]bool
}

// removedMethods answer -32601 under 2026-07-28.
var removedMethods = []string{
	"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
}

func (ss *session) Route(req *runtime.Request) runtime.Route {
	params := readParams(req.Params)
	if f, ok := features[req.Method]; ok { // nearly every request
		rm, trace, err := readMeta(params[pMeta], ss.legacy)
		if err != nil {
			return runtime.Route{Err: err}
		}
		if !ss.s.advertises(f.capability) {
			return runtime.Route{Err: errMethodNotFound(req.Method, "")}
		}
		return runtime.Route{Handler: ss.s.handler(f, rm, trace, &params)}
	}
	meta := params[pMeta]
	if meta != nil && !jsonrpc.IsObject(meta) {
		return runtime.Route{Err: errInvalidParams("_meta must be an object")}
	}
	if jsonrpc.Field(meta, MetaProtocolVersion) != nil {
		return ss.routeModern(req, params)
	}
	if req.Method == "initialize" {
		return ss.initialize(req)
	}
	if ss.legacy != nil {
		return ss.afterBus(req, ss.routeLegacy(req))
	}
	if req.Method == "ping" {
		return runtime.Route{Result: json.RawMessage("{}")}
	}
	return runtime.Route{Err: errNoVersion}
}

// errNoVersion answers a request that is neither of the 2026-07-28 revision nor on an
// initialized connection.
var errNoVersion = errInvalidParams(
	"params._meta lacks %q; a 2026-07-28 client sends it with every request, an older client sends initialize first",
	MetaProtocolVersion)

// routeModern routes a 2026-07-28 request for a method that is not a feature.
func (ss *session) routeModern(req *runtime.Request, params paramValues) runtime.Route {
	rm, _, err := readMeta(params[pMeta], nil)
	if err != nil {
		return runtime.Route{Err: err}
	}
	switch req.Method {
	case "server/discover":
		return runtime.Route{Result: ss.s.discoverResult()}
	case "subscriptions/listen":
		return runtime.Route{Handler: ss.s.listen}
	case "tasks/get", "tasks/update", "tasks/cancel":
		if h := ss.s.opts.TaskHandler; h != nil {
			return ss.routeTaskHandler(h, req, rm)
		}
		if ss.s.reg.Load().tasks {
			return ss.routeTask(req, rm)
		}
	}
	if slices.Contains(removedMethods, req.Method) {
		return runtime.Route{Err: errMethodNotFound(req.Method, " (removed in 2026-07-28)")}
	}
	return runtime.Route{Err: errMethodNotFound(req.Method, "")}
}

// routeLegacy routes a request of the initialize generation for a method that is not a
// feature.
func (ss *session) routeLegacy(req *runtime.Request) runtime.Route {
	l := ss.legacy
	s := ss.s
	switch req.Method {
	case "ping":
		return runtime.Route{Result: json.RawMessage("{}")}
	case "logging/setLevel":
		level, ok := parseLevel(jsonrpc.Field(req.Params, "level"))
		if !ok {
			return runtime.Route{Err: errInvalidParams(`"level" must be one of debug, info, notice, warning, error, critical, alert, emergency`)}
		}
		was := l.logLevel
		l.logLevel = level
		return ss.keep(func() { l.logLevel = was })
	case "resources/subscribe", "resources/unsubscribe":
		if !s.advertises("resources") {
			break
		}
		uri, err := stringParam(req.Params, "uri")
		if err != nil {
			return runtime.Route{Err: err}
		}
		was := l.subs[uri]
		setSub := func(on bool) {
			if on {
				l.subs[uri] = true
			} else {
				delete(l.subs, uri)
			}
		}
		setSub(req.Method == "resources/subscribe")
		return ss.keep(func() { setSub(was) })
	}
	return runtime.Route{Err: errMethodNotFound(req.Method, "")}
}

// metaKeys are the members of _meta the server reads, in one pass.
var metaKeys = [...]string{MetaProtocolVersion, MetaClientCapabilities, MetaProgressToken, MetaLogLevel,
	"traceparent", "tracestate"}

const (
	mVersion = iota
	mCaps
	mProgressToken
	mLogLevel
	mTraceParent
	mTraceState
)

// readMeta reads what a request runs under from its _meta in one pass: the 2026-07-28
// protocol members when it has them, otherwise what the connection's initialize established
// (legacy, nil on a connection without one); and the W3C trace context it carries.
func readMeta(meta json.RawMessage, legacy *legacySession) (rm requestMeta, trace runtime.TraceContext, err error) {
	rm.logLevel = -1
	if meta != nil && !jsonrpc.IsObject(meta) {
		return rm, trace, errInvalidParams("_meta must be an object")
	}
	var m [len(metaKeys)]json.RawMessage
	if meta != nil {
		jsonrpc.Fields(meta, metaKeys[:], m[:])
	}
	switch {
	case m[mVersion] != nil:
		version, ok := knownVersion(m[mVersion])
		if !ok {
			if version, ok = unquote(m[mVersion]); !ok {
				return rm, trace, errInvalidParams("_meta %q must be a string", MetaProtocolVersion)
			}
		}
		if caps := m[mCaps]; caps == nil || !jsonrpc.IsObject(caps) {
			return rm, trace, errInvalidParams("_meta %q is required: an object, {} when the client has none",
				MetaClientCapabilities)
		}
		if !slices.Contains(ModernVersions, version) {
			return rm, trace, errUnsupportedVersion(version)
		}
		rm.modern, rm.version, rm.clientCaps = true, internVersion(version), m[mCaps]
		if raw := m[mLogLevel]; raw != nil {
			level, ok := parseLevel(raw)
			if !ok {
				return rm, trace, errInvalidParams("unknown log level %s; use debug, info, notice, warning, error, critical, alert or emergency", raw)
			}
			rm.logLevel = int8(level)
		}
	case legacy != nil:
		rm.version, rm.clientCaps, rm.logLevel, rm.peer = legacy.pv, legacy.caps, int8(legacy.logLevel), legacy.peer
	default:
		return rm, trace, errNoVersion
	}
	rm.progress = jsonrpc.IsRequestID(m[mProgressToken])
	// W3C trace context (DIGEST A2: traceparent, tracestate); a malformed one is ignored.
	if raw := m[mTraceParent]; raw != nil {
		trace.Parent, _ = unquote(raw)
		trace.State, _ = unquote(m[mTraceState])
	}
	return rm, trace, nil
}

// unquote decodes a raw JSON string; ok is false when raw is not one.
func unquote(raw json.RawMessage) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : n-1]), true // valid JSON already: a string without escapes is its bytes
	}
	return unquoteSlow(raw)
}

func unquoteSlow(raw json.RawMessage) (string, bool) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// knownVersion returns the 2026-07-28 revision named by a raw JSON string without allocating,
// or false when raw names none of ModernVersions as it is.
func knownVersion(raw json.RawMessage) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		for _, v := range ModernVersions {
			if string(raw[1:n-1]) == v {
				return v, true
			}
		}
	}
	return "", false
}

func parseLevel(raw json.RawMessage) (int, bool) {
	var level LoggingLevel
	if raw == nil || json.Unmarshal(raw, &level) != nil {
		return 0, false
	}
	rank, ok := levelRank[level]
	return rank, ok
}

func (ss *session) initialize(req *runtime.Request) runtime.Route {
	if ss.legacy != nil {
		return runtime.Route{Err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "Invalid request: this connection is already initialized; start a new one to initialize again"}}
	}
	var p struct {
		ProtocolVersion *string         `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.ProtocolVersion == nil {
		return runtime.Route{Err: errInvalidParams(`initialize needs "protocolVersion", a string`)}
	}
	version := *p.ProtocolVersion
	if !isSupportedLegacy(version) {
		version = LegacyVersions[0] // the latest we speak; the client decides whether it can use it
	}
	if p.Capabilities == nil {
		p.Capabilities = json.RawMessage("{}")
	}
	ss.begin(version, p.Capabilities)
	if err := ss.save(); err != nil {
		ss.Close()
		ss.legacy = nil
		return runtime.Route{Err: err}
	}
	s := ss.s
	return runtime.Route{Result: initializeResult{
		ProtocolVersion: version,
		Capabilities:    s.capabilities(),
		ServerInfo:      s.info,
		Instructions:    s.opts.Instructions,
	}}
}

// begin starts the legacy session that initialize negotiated, and its change forwarder.
func (ss *session) begin(version string, caps json.RawMessage) *legacySession {
	l := &legacySession{
		version: version, pv: internVersion(version), caps: caps, logLevel: -1, peer: ss.peer,
		changes: ss.s.hub.subscribe(),
		stop:    make(chan struct{}), done: make(chan struct{}),
		subs: map[string]bool{},
	}
	ss.legacy = l
	go ss.forward(l)
	return l
}

// savedSession is a legacy session's state as its transport keeps it (runtime.SessionState):
// what initialize negotiated, and what the client has set since.
type savedSession struct {
	V        int             `json:"v"`   // 1
	Rev      uint64          `json:"rev"` // one more with each save (runtime.SessionState)
	Version  string          `json:"version"`
	Caps     json.RawMessage `json:"caps"`
	LogLevel int             `json:"logLevel"`
	Subs     []string        `json:"subs,omitempty"`
}

// save hands the legacy state to the transport that keeps it, if any.
func (ss *session) save() error {
	if ss.kept == nil || ss.kept.Save == nil || ss.legacy == nil {
		return nil
	}
	l := ss.legacy
	st := savedSession{V: 1, Rev: l.rev + 1, Version: l.version, Caps: l.caps, LogLevel: l.logLevel}
	for uri := range l.subs {
		st.Subs = append(st.Subs, uri)
	}
	slices.Sort(st.Subs)
	raw, err := json.Marshal(&st)
	if err == nil {
		err = ss.kept.Save(raw)
	}
	if err == nil {
		l.rev = st.Rev
	}
	if err != nil {
		return StateNotKept(err)
	}
	return nil
}

// StateNotKept is the answer to a request whose change of a session's state its transport
// could not keep (runtime.SessionState's Save failed, a fleet's store being out of reach):
// the change is undone, and the client may retry.
func StateNotKept(err error) *jsonrpc.Error {
	msg := "Server busy: the session's state could not be kept where every instance finds it: " + err.Error()
	if !strings.HasSuffix(msg, "retry") {
		msg += "; retry"
	}
	return &jsonrpc.Error{Code: CodeServerBusy, Message: msg, Data: map[string]any{"retryable": true}}
}

// keep answers a request that changed the legacy state: {} once the state is saved, or the
// save's error after undo has put the state back as it was.
func (ss *session) keep(undo func()) runtime.Route {
	if err := ss.save(); err != nil {
		undo()
		return runtime.Route{Err: err}
	}
	return runtime.Route{Result: json.RawMessage("{}")}
}

// apply takes what the client set, as another connection of the session saved it.
func (l *legacySession) apply(st *savedSession) {
	l.logLevel, l.rev = st.LogLevel, st.Rev
	clear(l.subs)
	for _, uri := range st.Subs {
		l.subs[uri] = true
	}
}

// forward is the legacy session's change forwarder: it tells this client about list
// changes and updates of the resources it subscribed to, until the connection stops.
func (ss *session) forward(l *legacySession) {
	defer close(l.done)
	if s := ss.s; s.bus != nil {
		s.bus.start() // the lists' changes on other instances are told unasked: hear them
	}
	for {
		select {
		case <-l.stop:
			return
		case c := <-l.changes:
			method, params := "", any(nil)
			switch c.kind {
			case toolsChanged:
				method = "notifications/tools/list_changed"
			case promptsChanged:
				method = "notifications/prompts/list_changed"
			case resourcesChanged:
				method = "notifications/resources/list_changed"
			case resourceUpdated:
				uri := c.uri
				err := ss.peer.Run(func(notify func(string, any) error) {
					if l.subs[uri] { // read where Route writes it
						notify("notifications/resources/updated", map[string]string{"uri": uri})
					}
				})
				if err != nil {
					return
				}
				continue
			case busResumed:
				if ss.tellAgain(l) != nil {
					return
				}
				continue
			}
			if method != "" && ss.peer.Notify(method, params) != nil {
				return
			}
		}
	}
}

// afterBus makes the answer r to a resources/subscribe wait, on the handler's goroutine,
// until the Server's Bus subscription is in force, as a listen's acknowledgement does: the
// updates other instances of the fleet tell after it are heard (MCP 2025-11-25, Server
// Features › Resources › Subscriptions).
func (ss *session) afterBus(req *runtime.Request, r runtime.Route) runtime.Route {
	s := ss.s
	if s.bus == nil || req.Method != "resources/subscribe" || r.Err != nil || r.Handler != nil {
		return r
	}
	result := r.Result
	return runtime.Route{Handler: func(ctx context.Context, rt *runtime.Request) (any, error) {
		s.awaitBus(ctx)
		return result, nil
	}}
}

// tellAgain tells a legacy client that everything it hears of may have changed: the
// Server's Bus subscription is in force again after it was lost, and other instances'
// changes made meanwhile were missed. It is told that each list the server says it tells
// of (listChanged) changed, and that each resource it subscribed to was updated: one
// notification too many is harmless, one missing is not.
func (ss *session) tellAgain(l *legacySession) error {
	caps := ss.s.capabilities()
	for _, list := range []string{"tools", "prompts", "resources"} {
		if _, ok := caps[list]; ok {
			if err := ss.peer.Notify("notifications/"+list+"/list_changed", nil); err != nil {
				return err
			}
		}
	}
	return ss.peer.Run(func(notify func(string, any) error) {
		for uri := range l.subs { // read where Route writes it
			notify("notifications/resources/updated", map[string]string{"uri": uri})
		}
	})
}

// Close stops the forwarder; the runtime calls it when the connection stops.
func (ss *session) Close() {
	if l := ss.legacy; l != nil {
		ss.s.hub.unsubscribe(l.changes)
		close(l.stop)
		<-l.done
	}
}

func (ss *session) Notification(method string, params json.RawMessage) {
	// Nothing of it is kept for a fleet's other instances (SessionState): it changes nothing
	// they do, and a save racing the client's next request, made at once through another
	// instance, could undo what that request set.
	if method == "notifications/initialized" && ss.legacy != nil {
		ss.legacy.initialized = true
	}
	// Other notifications (roots/list_changed, progress from the client) need nothing here.
}

type initializeResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	ServerInfo      Implementation `json:"serverInfo"`
	Instructions    string         `json:"instructions,omitempty"`
}

func (s *Server) discoverResult() json.RawMessage {
	body, _ := json.Marshal(struct {
		SupportedVersions []string       `json:"supportedVersions"`
		Capabilities      map[string]any `json:"capabilities"`
		Instructions      string         `json:"instructions,omitempty"`
	}{ModernVersions, s.reg.Load().modernCaps, s.opts.Instructions})
	ttl, private := s.cachePolicy("server/discover")
	return s.cacheable(s.modernResult(body), ttl, private)
}

// progressToken returns the progressToken of a request's _meta (as readMeta reads it), or nil
// if it has none that is a string or an integer.
func progressToken(meta json.RawMessage) json.RawMessage {
	var m [len(metaKeys)]json.RawMessage
	if meta != nil {
		jsonrpc.Fields(meta, metaKeys[:], m[:])
	}
	if tok := m[mProgressToken]; jsonrpc.IsRequestID(tok) {
		return tok
	}
	return nil
}
