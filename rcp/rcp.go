package rcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// ProtocolVersion is the highest RCP version Relay speaks; it supports every version from 1
// up to it.
const ProtocolVersion = 1

// RCP's error codes.
const (
	CodeNotInitialized     = -32001
	CodeVersionMismatch    = -32002
	CodeCapabilityMissing  = -32003
	CodeUnknownMethod      = -32004
	CodeOptionUnsupported  = -32005
	CodeCancelled          = -32006
	CodeBackendUnavailable = -32010
	CodeRateLimited        = -32011
	CodeUnauthorized       = -32012
	CodePayloadTooLarge    = -32013
	CodeTimeout            = -32014
	CodeNotFound           = -32015
	CodeConflict           = -32016
)

// gates maps each optional method RCP/1 defines to the capability that gates it.
var gates = map[string]string{
	"embed": "embed", "embed/sparse": "sparseEmbed", "embed/multi": "multiVector",
	"rerank": "rerank", "retrieve": "retrieve", "query/transform": "transform", "graph": "graph",
	"index/add": "index", "index/delete": "index", "catalog/list": "catalog",
	"feedback": "feedback", "memory/build": "memory", "memory/recall": "memory",
}

// gate returns the capability that gates method, and false when RCP does not define the
// method. Vendor methods x-<vendor>/<name> are gated by the x-<vendor> capability.
func gate(method string) (string, bool) {
	if c, ok := gates[method]; ok {
		return c, true
	}
	if vendor, _, ok := strings.Cut(method, "/"); ok && strings.HasPrefix(vendor, "x-") && len(vendor) > 2 {
		return vendor, true
	}
	return "", false
}

// Implementation names a server or a client.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Options configures a Server. The zero value is ready to use.
type Options struct {
	// Conformance is the level the server meets and declares in initialize and info: "L0",
	// "L1" or "L2". Declare only what is true.
	Conformance string
	// RequestTimeout is every request's deadline (default 30 s); a request still running
	// then is answered with -32014.
	RequestTimeout time.Duration
}

// Handler serves one RCP method. Return an error made by InvalidParams, OptionUnsupported or
// Errorf (or any *jsonrpc.Error) to choose the code the client sees.
type Handler func(ctx context.Context, req *Request) (result any, err error)

// Server is an RCP/1 server: what it advertises and the handlers behind it.
type Server struct {
	info     Implementation
	opts     Options
	caps     map[string]any
	handlers map[string]Handler
}

// NewServer returns a server that describes itself as info. opts may be nil.
func NewServer(info Implementation, opts *Options) *Server {
	s := &Server{info: info, caps: map[string]any{}, handlers: map[string]Handler{}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.RequestTimeout <= 0 {
		s.opts.RequestTimeout = 30 * time.Second
	}
	return s
}

// Advertise declares a capability with its metadata ({} when it has none). Call it before
// serving: a connection's capabilities are fixed once its initialize succeeds.
func (s *Server) Advertise(capability string, metadata any) {
	if metadata == nil {
		metadata = map[string]any{}
	}
	s.caps[capability] = metadata
}

// Advertises reports whether a capability is advertised.
func (s *Server) Advertises(capability string) bool {
	_, ok := s.caps[capability]
	return ok
}

// Handle registers the handler of an optional method. It panics for a method RCP/1 does not
// define (vendor methods are x-<vendor>/<name>), which is a programming error. The method
// is served only while its gating capability is advertised.
func (s *Server) Handle(method string, h Handler) {
	if _, ok := gate(method); !ok {
		panic(fmt.Sprintf("rcp: %q is not an RCP/1 method; vendor methods are named x-<vendor>/<name>", method))
	}
	s.handlers[method] = h
}

// Runtime returns a runtime server for this RCP server, ready for any transport.
func (s *Server) Runtime(opts ...runtime.Option) *runtime.Server {
	return runtime.NewServer(s.Profile(), opts...)
}

// Profile returns the RCP/1 profile for Relay's runtime: one lifecycle per connection.
func (s *Server) Profile() runtime.Profile { return s.profile(false) }

// StatelessProfile returns the profile for stateless transports (RCP over HTTP without
// sessions, R §5.2): every connection starts initialised at the advertised capabilities,
// initialize and info are answered idempotently, and gated methods still need their
// capability (-32003).
func (s *Server) StatelessProfile() runtime.Profile { return s.profile(true) }

func (s *Server) profile(stateless bool) runtime.Profile {
	return runtime.Profile{
		NullID:       true,
		Batches:      true,
		CancelMethod: "notifications/cancel",
		CancelTarget: func(params json.RawMessage) (jsonrpc.ID, bool) {
			id := jsonrpc.Field(params, "id")
			return jsonrpc.ID(id), jsonrpc.IsRequestID(id)
		},
		Cancelled: &jsonrpc.Error{Code: CodeCancelled, Message: "Cancelled: the client cancelled this request"},
		Abandoned: &jsonrpc.Error{Code: CodeBackendUnavailable,
			Message: "Backend unavailable: the server is shutting down; retry on another connection",
			Data:    map[string]any{"retryable": true}},
		FrameTooLarge: func(limit int) *jsonrpc.Error {
			return &jsonrpc.Error{Code: CodePayloadTooLarge,
				Message: fmt.Sprintf("Payload too large: the message exceeds the %d-byte limit; split the request", limit),
				Data:    map[string]any{"retryable": false}}
		},
		Overloaded: func(retryAfter time.Duration) *jsonrpc.Error {
			return &jsonrpc.Error{Code: CodeRateLimited,
				Message: fmt.Sprintf("Rate limited: too many requests in flight; retry after %d ms", retryAfter.Milliseconds()),
				Data:    map[string]any{"retryable": true, "retryAfterMs": retryAfter.Milliseconds()}}
		},
		InvalidParams: InvalidParams("params", "params must be a JSON object"),
		Proxy:         &proxyRules,
		Methods:       methods,
		NewSession: func(*runtime.Peer) runtime.Session {
			ss := &session{s: s, stateless: stateless, logLevel: -1}
			if stateless {
				ss.initialized, ss.version = true, ProtocolVersion
				_, ss.streaming = s.caps["streaming"]
			}
			return ss
		},
	}
}

// InvalidParams returns the -32602 error for a malformed field.
func InvalidParams(field, reason string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + reason,
		Data: map[string]any{"field": field}}
}

// OptionUnsupported returns the -32005 error for an option the server did not advertise.
func OptionUnsupported(option, value string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeOptionUnsupported,
		Message: fmt.Sprintf("Option unsupported: %s %q is not advertised; see the capabilities", option, value),
		Data:    map[string]any{"option": option}}
}

// Errorf returns an error with one of RCP's codes.
func Errorf(code int64, format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// describe is the shape of the initialize result and of info.
func (s *Server) describe(version int) any {
	type meta struct {
		Conformance string `json:"conformance,omitempty"`
	}
	return struct {
		ProtocolVersion int            `json:"protocolVersion"`
		Server          Implementation `json:"server"`
		Capabilities    map[string]any `json:"capabilities"`
		Meta            *meta          `json:"_meta,omitempty"`
	}{version, s.info, s.caps, &meta{s.opts.Conformance}}
}
