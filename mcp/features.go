package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// feature describes a method that serves what the server offers, in both eras.
type feature struct {
	method     string
	capability string // the server capability that must be advertised
	cacheable  bool   // complete 2026-07-28 results carry ttlMs and cacheScope
	serve      func(s *Server, ctx context.Context, req *Request) (any, error)
	index      int // in featureList, and in Server.chains
}

var featureList = [...]feature{
	{method: "tools/list", capability: "tools", cacheable: true, serve: (*Server).listTools},
	{method: "tools/call", capability: "tools", serve: (*Server).callTool},
	{method: "prompts/list", capability: "prompts", cacheable: true, serve: (*Server).listPrompts},
	{method: "prompts/get", capability: "prompts", serve: (*Server).getPrompt},
	{method: "resources/list", capability: "resources", cacheable: true, serve: (*Server).listResources},
	{method: "resources/templates/list", capability: "resources", cacheable: true, serve: (*Server).listTemplates},
	{method: "resources/read", capability: "resources", cacheable: true, serve: (*Server).readResource},
	{method: "completion/complete", capability: "completions", serve: (*Server).complete},
}

// features finds a feature by its method.
var features = func() map[string]*feature {
	m := make(map[string]*feature, len(featureList))
	for i := range featureList {
		f := &featureList[i]
		f.index = i
		m[f.method] = f
	}
	return m
}()

// middlewareChains wraps each feature method in the server's middleware, once.
func (s *Server) middlewareChains() []MethodHandler {
	chains := make([]MethodHandler, len(featureList))
	for i := range featureList {
		f := &featureList[i]
		inner := MethodHandler(func(ctx context.Context, req *Request) (any, error) { return f.serve(s, ctx, req) })
		for i := len(s.opts.Middleware) - 1; i >= 0; i-- {
			inner = s.opts.Middleware[i](inner)
		}
		chains[i] = inner
	}
	return chains
}

// handler returns the request actor's body for a feature method: middleware, the
// per-request timeout, encoding, and the 2026-07-28 result fields. The Request is made here,
// on the dispatcher's goroutine, and handed to the actor, which alone uses it from then on.
func (s *Server) handler(f *feature, rm requestMeta) runtime.Handler {
	req := &Request{s: s, meta: rm}
	return func(ctx context.Context, rt *runtime.Request) (any, error) {
		req.method, req.rt = rt.Method, rt
		if req.meta.trace.Parent != "" {
			ctx = runtime.WithTrace(ctx, req.meta.trace)
		}
		if s.opts.RequestTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeoutCause(ctx, s.opts.RequestTimeout, errTimedOut)
			defer cancel()
		}
		res, err := s.chains[f.index](ctx, req)
		if err != nil {
			if errors.Is(context.Cause(ctx), errTimedOut) {
				return nil, &jsonrpc.Error{Code: CodeServerBusy, Message: fmt.Sprintf(
					"Request timed out after %s; retry with a simpler request, or later", s.opts.RequestTimeout)}
			}
			return nil, err
		}
		if r, ok := res.(*CallToolResult); ok && r.textOnly() {
			req.text = textResult{open: s.modernOpen, r: r}
			if !req.meta.modern {
				req.text.open = legacyOpen
			}
			return &req.text, nil
		}
		raw, err := encodeResult(res)
		if err != nil || !req.meta.modern {
			return raw, err
		}
		complete := jsonrpc.FirstKey(raw) != "resultType" // only input_required sets it
		raw = s.modernResult(raw)
		if f.cacheable && complete {
			ttl := s.opts.CacheTTL
			if req.retrying {
				ttl = 0 // results of input_required retries must not be reused
			}
			raw = s.cacheable(raw, ttl)
		}
		return raw, nil
	}
}

// legacyOpen starts a result object of the initialize generation.
var legacyOpen = []byte("{")

var errTimedOut = errors.New("mcp: the request's time limit passed")

// encodeResult encodes a handler's result. Every result type of this package encodes _meta
// (and resultType, when it sets one) as its first member, which modernResult relies on.
func encodeResult(res any) (json.RawMessage, error) {
	switch r := res.(type) {
	case json.RawMessage:
		return r, nil
	case *CallToolResult: // one that is not textOnly (those are a textResult)
		return json.Marshal(r.wireForm()) // not through MarshalJSON: that costs encoding/json a second pass
	case nil:
		return json.RawMessage("{}"), nil
	}
	return json.Marshal(res)
}

// interactive runs a handler of a method that may ask the client for input (tools/call,
// prompts/get, resources/read). Under 2026-07-28 it restores the answers of earlier rounds
// from requestState and inputResponses, and turns ErrInputRequired into an input_required
// result whose requestState carries every answer so far.
// state and responses are the request's raw requestState and inputResponses.
func (s *Server) interactive(ctx context.Context, req *Request, target string, args, state, responses json.RawMessage,
	run func() (any, error)) (any, error) {
	if !req.meta.modern {
		return run()
	}
	// The binding is computed only when a requestState is read or issued: hashing the
	// arguments costs a decode and an encode of them, which plain calls need not pay.
	var bind *requestState
	binding := func() *requestState {
		if bind == nil {
			bind = &requestState{Method: req.method, Target: target, Args: argsDigest(args)}
			if p := runtime.PrincipalFrom(ctx); p != nil {
				bind.Principal = p.ID
			}
		}
		return bind
	}
	var answers map[string]json.RawMessage // made only when a retry brings answers
	if state != nil || responses != nil {
		answers = map[string]json.RawMessage{}
	}
	if raw := state; raw != nil {
		var token string
		if json.Unmarshal(raw, &token) != nil {
			return nil, errInvalidParams("requestState must be a string")
		}
		st, err := s.openState(token, binding())
		if err != nil {
			return nil, errInvalidParams("%v", err)
		}
		for k, v := range st.Answers {
			answers[k] = v
		}
		req.retrying = true
	}
	if raw := responses; raw != nil {
		var got map[string]json.RawMessage
		if json.Unmarshal(raw, &got) != nil {
			return nil, errInvalidParams("inputResponses must be an object")
		}
		for k, v := range got {
			answers[k] = v
		}
		req.retrying = true
	}
	req.answers = answers
	res, err := run()
	if err == nil || !errors.Is(err, ErrInputRequired) || len(req.asked) == 0 {
		return res, err
	}
	if answers == nil {
		answers = map[string]json.RawMessage{}
	}
	binding().Answers = answers
	return struct {
		ResultType    string                  `json:"resultType"`
		InputRequests map[string]inputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}{"input_required", req.asked, s.sealState(bind)}, nil
}

// listPage decodes a list request's cursor and returns the keys of its page.
func (s *Server) listPage(req *Request, keys []string) ([]string, string, error) {
	var cursor string
	if raw := jsonrpc.Field(req.rt.Params, "cursor"); raw != nil && json.Unmarshal(raw, &cursor) != nil {
		return nil, "", errInvalidParams("cursor must be a string")
	}
	out, next, ok := page(keys, cursor, s.opts.PageSize)
	if !ok {
		return nil, "", errInvalidParams("invalid cursor; use a nextCursor from an earlier result, or none")
	}
	return out, next, nil
}

// listResult encodes {"<field>":[items...],"nextCursor":...} from pre-encoded items.
func listResult(field string, items []json.RawMessage, next string) json.RawMessage {
	out := append([]byte(`{"`), field...)
	out = append(out, `":[`...)
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	out = append(out, ']')
	if next != "" {
		c, _ := json.Marshal(next)
		out = append(out, `,"nextCursor":`...)
		out = append(out, c...)
	}
	return append(out, '}')
}

// stringParam reads a required string member of params.
func stringParam(params json.RawMessage, name string) (string, error) {
	return asString(jsonrpc.Field(params, name), name)
}

func asString(raw json.RawMessage, name string) (string, error) {
	v, ok := unquote(raw)
	if !ok {
		return "", errInvalidParams("%q is required and must be a string", name)
	}
	return v, nil
}

// topParams are the members of params the server reads, all in the one pass the session
// makes when it routes a request (a large tools/call is not scanned again).
var topParams = [...]string{"_meta", "name", "uri", "arguments", "requestState", "inputResponses"}

const (
	pMeta = iota
	pName
	pURI
	pArguments
	pRequestState
	pInputResponses
)

// paramValues holds the members of params named by topParams.
type paramValues [len(topParams)]json.RawMessage

func readParams(params json.RawMessage) (out paramValues) {
	jsonrpc.Fields(params, topParams[:], out[:])
	return out
}
