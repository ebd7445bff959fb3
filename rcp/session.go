package rcp

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// session is one connection's lifecycle, driven by the dispatcher's goroutine.
type session struct {
	s           *Server
	stateless   bool // every request stands alone: initialize is answered, never remembered
	initialized bool
	version     int
	streaming   bool // the client accepts progress (and the server advertised streaming)
	logLevel    int  // -1: the client asked for no logs
}

var logLevels = map[string]int{"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4}

func (ss *session) Route(req *runtime.Request) runtime.Route {
	s := ss.s
	if strings.HasPrefix(req.Method, "notifications/") {
		return runtime.Route{Err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "Invalid request: " + req.Method + " is a notification and must not carry an id"}}
	}
	switch req.Method {
	case "initialize":
		return ss.initialize(req)
	case "info":
		return runtime.Route{Result: s.describe(max(ss.version, ProtocolVersion))}
	case "ping":
		if nonce := jsonrpc.Field(req.Params, "nonce"); nonce != nil {
			return runtime.Route{Result: map[string]json.RawMessage{"nonce": nonce}}
		}
		return runtime.Route{Result: json.RawMessage("{}")}
	case "shutdown":
		return runtime.Route{Result: json.RawMessage("{}"), Shutdown: true}
	}
	capability, defined := gate(req.Method)
	switch {
	case !ss.initialized:
		return runtime.Route{Err: Errorf(CodeNotInitialized, "Not initialized: send initialize first")}
	case !defined:
		return runtime.Route{Err: Errorf(CodeUnknownMethod, "Unknown method: %s is not an RCP/1 method", req.Method)}
	}
	if _, advertised := s.caps[capability]; !advertised || s.handlers[req.Method] == nil {
		return runtime.Route{Err: Errorf(CodeCapabilityMissing,
			"Capability missing: %s needs the %s capability, which this server does not advertise", req.Method, capability)}
	}
	if req.Method == "index/add" && !writable(s.caps["index"]) {
		return runtime.Route{Err: Errorf(CodeCapabilityMissing, "Capability missing: the index is not writable")}
	}
	return runtime.Route{Handler: ss.handler(s.handlers[req.Method])}
}

func writable(meta any) bool {
	raw, _ := json.Marshal(meta)
	return string(jsonrpc.Field(raw, "writable")) == "true"
}

func (ss *session) initialize(req *runtime.Request) runtime.Route {
	if ss.stateless {
		return ss.negotiate(req, false)
	}
	if ss.initialized {
		return runtime.Route{Err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "Invalid request: already initialized; the capabilities are fixed for this connection"}}
	}
	return ss.negotiate(req, true)
}

// negotiate checks initialize's params and answers with the negotiated version; remember
// makes the result the connection's lifecycle state.
func (ss *session) negotiate(req *runtime.Request, remember bool) runtime.Route {
	if req.Params == nil {
		return runtime.Route{Err: InvalidParams("params", "initialize needs params")}
	}
	raw := jsonrpc.Field(req.Params, "protocolVersion")
	var v float64
	if raw == nil || json.Unmarshal(raw, &v) != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return runtime.Route{Err: InvalidParams("protocolVersion", "protocolVersion must be an integer")}
	}
	if v < 1 {
		return runtime.Route{Err: &jsonrpc.Error{Code: CodeVersionMismatch,
			Message: "Version mismatch: no common protocol version; this server speaks 1",
			Data:    map[string]any{"supported": []int{ProtocolVersion}}}}
	}
	version := min(int(v), ProtocolVersion)
	if !remember {
		return runtime.Route{Result: ss.s.describe(version)}
	}
	ss.initialized = true
	ss.version = version
	caps := jsonrpc.Field(req.Params, "capabilities")
	_, serverStreams := ss.s.caps["streaming"]
	ss.streaming = serverStreams
	ss.logLevel = -1
	if _, serverLogs := ss.s.caps["log"]; serverLogs && jsonrpc.Field(caps, "log") != nil {
		ss.logLevel = 0
		var level string
		if json.Unmarshal(jsonrpc.Field(jsonrpc.Field(req.Params, "_meta"), "logLevel"), &level) == nil {
			if rank, ok := logLevels[level]; ok {
				ss.logLevel = rank
			}
		}
	}
	return runtime.Route{Result: ss.s.describe(ss.version)}
}

func (ss *session) Notification(string, json.RawMessage) {
	// notifications/cancel is the runtime's; RCP defines no other client notification, and
	// unknown ones are ignored.
}

// handler runs a method's handler with the request's deadline.
func (ss *session) handler(h Handler) runtime.Handler {
	s := ss.s
	streaming, logLevel := ss.streaming, ss.logLevel
	return func(ctx context.Context, rt *runtime.Request) (any, error) {
		ctx, cancel := context.WithTimeoutCause(ctx, s.opts.RequestTimeout, errDeadline)
		defer cancel()
		meta := jsonrpc.Field(rt.Params, "_meta")
		if raw := jsonrpc.Field(meta, "traceparent"); raw != nil {
			var t runtime.TraceContext
			json.Unmarshal(raw, &t.Parent)
			json.Unmarshal(jsonrpc.Field(meta, "tracestate"), &t.State)
			ctx = runtime.WithTrace(ctx, t)
		}
		req := &Request{rt: rt, logLevel: logLevel}
		if streaming {
			if tok := jsonrpc.Field(jsonrpc.Field(rt.Params, "_meta"), "progressToken"); jsonrpc.IsRequestID(tok) {
				req.progressToken = tok
			}
		}
		res, err := h(ctx, req)
		if err != nil && errors.Is(context.Cause(ctx), errDeadline) {
			return nil, &jsonrpc.Error{Code: CodeTimeout, Message: "Timeout: the request ran past its deadline",
				Data: map[string]any{"retryable": true}}
		}
		return res, err
	}
}

var errDeadline = errors.New("rcp: request deadline")
