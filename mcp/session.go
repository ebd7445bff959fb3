package mcp

import (
	"encoding/json"
	"slices"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// session is the MCP state of one connection. Only legacy clients have any: a 2026-07-28
// request is served from its own _meta alone. The runtime calls it on the connection's
// dispatcher goroutine, so it needs no locks.
type session struct {
	s      *Server
	peer   *runtime.Peer
	legacy *legacySession
}

// legacySession is what an initialize handshake established, for the life of the connection.
type legacySession struct {
	version     string
	caps        json.RawMessage
	initialized bool // notifications/initialized has arrived
}

// removedMethods answer -32601 under 2026-07-28.
var removedMethods = []string{
	"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
}

func (ss *session) Route(req *runtime.Request) runtime.Route {
	meta := jsonrpc.Field(req.Params, "_meta")
	if meta != nil && !jsonrpc.IsObject(meta) {
		return runtime.Route{Err: errInvalidParams("_meta must be an object")}
	}
	if pv := jsonrpc.Field(meta, MetaProtocolVersion); pv != nil {
		return ss.routeModern(req, meta, pv)
	}
	if req.Method == "initialize" {
		return ss.initialize(req)
	}
	if ss.legacy != nil {
		return ss.routeLegacy(req, meta)
	}
	if req.Method == "ping" {
		return runtime.Route{Result: json.RawMessage("{}")}
	}
	return runtime.Route{Err: errInvalidParams(
		"params._meta lacks %q; a 2026-07-28 client sends it with every request, an older client sends initialize first",
		MetaProtocolVersion)}
}

func (ss *session) routeModern(req *runtime.Request, meta, pv json.RawMessage) runtime.Route {
	var version string
	if json.Unmarshal(pv, &version) != nil {
		return runtime.Route{Err: errInvalidParams("_meta %q must be a string", MetaProtocolVersion)}
	}
	caps := jsonrpc.Field(meta, MetaClientCapabilities)
	if caps == nil || !jsonrpc.IsObject(caps) {
		return runtime.Route{Err: errInvalidParams("_meta %q is required: an object, {} when the client has none",
			MetaClientCapabilities)}
	}
	if !slices.Contains(ModernVersions, version) {
		return runtime.Route{Err: errUnsupportedVersion(version)}
	}
	rm := requestMeta{version: version, clientCaps: caps}
	if tok := jsonrpc.Field(meta, MetaProgressToken); jsonrpc.IsRequestID(tok) {
		rm.progressToken = tok
	}
	s := ss.s
	switch req.Method {
	case "server/discover":
		return runtime.Route{Result: s.discoverResult()}
	case "tools/list":
		res, err := s.toolsList(req, true)
		return runtime.Route{Result: res, Err: err}
	case "tools/call":
		return runtime.Route{Handler: s.callTool(rm, true)}
	}
	if slices.Contains(removedMethods, req.Method) {
		return runtime.Route{Err: errMethodNotFound(req.Method, " (removed in 2026-07-28)")}
	}
	return runtime.Route{Err: errMethodNotFound(req.Method, "")}
}

func (ss *session) routeLegacy(req *runtime.Request, meta json.RawMessage) runtime.Route {
	rm := requestMeta{version: ss.legacy.version, clientCaps: ss.legacy.caps}
	if tok := jsonrpc.Field(meta, MetaProgressToken); jsonrpc.IsRequestID(tok) {
		rm.progressToken = tok
	}
	s := ss.s
	switch req.Method {
	case "ping":
		return runtime.Route{Result: json.RawMessage("{}")}
	case "tools/list":
		res, err := s.toolsList(req, false)
		return runtime.Route{Result: res, Err: err}
	case "tools/call":
		return runtime.Route{Handler: s.callTool(rm, false)}
	}
	return runtime.Route{Err: errMethodNotFound(req.Method, "")}
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
	ss.legacy = &legacySession{version: version, caps: p.Capabilities}
	s := ss.s
	return runtime.Route{Result: initializeResult{
		ProtocolVersion: version,
		Capabilities:    s.capabilities(),
		ServerInfo:      s.info,
		Instructions:    s.opts.Instructions,
	}}
}

func (ss *session) Notification(method string, params json.RawMessage) {
	switch method {
	case "notifications/initialized":
		if ss.legacy != nil {
			ss.legacy.initialized = true
		}
	}
	// Other notifications (roots/list_changed, progress from the client) need nothing here.
}

type initializeResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	ServerInfo      Implementation `json:"serverInfo"`
	Instructions    string         `json:"instructions,omitempty"`
}

// capabilities lists what the server offers.
func (s *Server) capabilities() map[string]any {
	return map[string]any{"tools": map[string]any{}}
}

func (s *Server) discoverResult() json.RawMessage {
	body, _ := json.Marshal(struct {
		SupportedVersions []string       `json:"supportedVersions"`
		Capabilities      map[string]any `json:"capabilities"`
		Instructions      string         `json:"instructions,omitempty"`
	}{ModernVersions, s.capabilities(), s.opts.Instructions})
	return s.modernResult(s.cacheable(body))
}

func (s *Server) toolsList(req *runtime.Request, modern bool) (json.RawMessage, error) {
	if c := jsonrpc.Field(req.Params, "cursor"); c != nil && string(c) != `""` {
		return nil, errInvalidParams("invalid cursor: this server returns every tool in one page")
	}
	body := append(append([]byte(`{"tools":`), s.tools.Load().list...), '}')
	if !modern {
		return body, nil
	}
	return s.modernResult(s.cacheable(body)), nil
}
