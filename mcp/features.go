package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

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
	{method: "tools/list", capability: "tools", cacheable: true,
		serve: list("tools", func(r *registry) ([]string, map[string]*tool) { return r.toolNames, r.tools })},
	{method: "tools/call", capability: "tools", serve: (*Server).callTool},
	{method: "prompts/list", capability: "prompts", cacheable: true,
		serve: list("prompts", func(r *registry) ([]string, map[string]*prompt) { return r.promptNames, r.prompts })},
	{method: "prompts/get", capability: "prompts", serve: (*Server).getPrompt},
	{method: "resources/list", capability: "resources", cacheable: true,
		serve: list("resources", func(r *registry) ([]string, map[string]*resource) { return r.resourceURIs, r.resources })},
	{method: "resources/templates/list", capability: "resources", cacheable: true,
		serve: list("resourceTemplates", func(r *registry) ([]string, map[string]*resourceTemplate) { return r.templateKeys, r.templates })},
	{method: "resources/read", capability: "resources", cacheable: true, serve: (*Server).readResource},
	{method: "completion/complete", capability: "completions", serve: (*Server).complete},
	// The Skills extension (skills.go), served while the server has skills.
	{method: "skills/list", cacheable: true, serve: listSkills},
	{method: "skills/get", cacheable: true, serve: skillsOnly((*Server).getSkill)},
	{method: "resources/directory/read", serve: skillsOnly((*Server).readDirectory)},
}

// listed is what a list serves of each entry: its definition, encoded once.
type listed interface{ definition() json.RawMessage }

func (t *tool) definition() json.RawMessage             { return t.raw }
func (p *prompt) definition() json.RawMessage           { return p.raw }
func (r *resource) definition() json.RawMessage         { return r.raw }
func (t *resourceTemplate) definition() json.RawMessage { return t.raw }

// list serves one of the four lists, under member: a page of the registry's entries, in the
// order of their sorted keys, with the cursor of the next page.
func list[T listed](member string, entries func(*registry) (keys []string, byKey map[string]T)) func(*Server, context.Context, *Request) (any, error) {
	return func(s *Server, _ context.Context, req *Request) (any, error) {
		keys, byKey := entries(s.reg.Load())
		page, next, err := s.listPage(req, keys)
		if err != nil {
			return nil, err
		}
		items := make([]json.RawMessage, len(page))
		for i, k := range page {
			items[i] = byKey[k].definition()
		}
		return listResult(member, items, next), nil
	}
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

// toolsCall is the feature that may run on a goroutine of its own (see routing.run).
var toolsCall = features["tools/call"]

// routing is what Route read of a feature request, for the first part of its handler. It is
// filled on the dispatcher's goroutine and handed to the request's actor, which alone uses it
// and gives it back to the pool as soon as it has read what it needs: before a tool call goes
// on on its own goroutine, so that a call that waits does not keep it, or when the handler
// returns. Routings are reused because one is made for every request: as garbage, they would
// leave the heap in pieces that a burst of parked calls keeps resident.
type routing struct {
	s      *Server
	f      *feature
	meta   requestMeta
	trace  runtime.TraceContext
	params paramValues     // the members of params in topParams, read once at routing
	serve  runtime.Handler // rc.run, made once for each routing
}

var routings sync.Pool

func init() {
	routings.New = func() any {
		rc := new(routing)
		rc.serve = rc.run
		return rc
	}
}

// handler returns the request actor's body for a feature method: middleware, the
// per-request timeout, encoding, and the 2026-07-28 result fields.
func (s *Server) handler(f *feature, rm requestMeta, trace runtime.TraceContext, params *paramValues) runtime.Handler {
	rc := routings.Get().(*routing)
	rc.s, rc.f, rc.meta, rc.trace, rc.params = s, f, rm, trace, *params
	return rc.serve
}

// release gives rc back to the pool.
func (rc *routing) release() {
	*rc = routing{serve: rc.serve}
	routings.Put(rc)
}

// run is the request actor's body. A tools/call (without middleware, which must see the
// whole call) runs everything up to the tool itself here, on a worker: finding it, checking
// and decoding its arguments, the deep part. Then, if the tool's calls wait (waitingCalls of
// them already wait on workers), the tool runs as a runtime.Continuation on a goroutine of its
// own, which keeps a small stack however long it waits; otherwise it runs here too, which
// costs a call that answers at once nothing more.
func (rc *routing) run(ctx context.Context, rt *runtime.Request) (any, error) {
	s, f := rc.s, rc.f
	req := &Request{rt: rt, s: s, meta: rc.meta, params: &rc.params}
	if rc.trace.Parent != "" {
		ctx = runtime.WithTrace(ctx, rc.trace)
	}
	var stop context.CancelFunc
	if s.opts.RequestTimeout > 0 {
		ctx, stop = context.WithTimeoutCause(ctx, s.opts.RequestTimeout, errTimedOut)
	}
	var res any
	var err error
	if f == toolsCall && len(s.opts.Middleware) == 0 {
		var run toolRunner
		run, res, err = s.startTool(ctx, req)
		req.params = nil
		rc.release()
		switch {
		case run == nil:
		case run.waits():
			return run.detach(ctx, stop), nil
		default:
			res, err = run.call(ctx)
		}
	} else {
		res, err = s.chains[f.index](ctx, req)
		req.params = nil
		rc.release()
	}
	return s.finish(ctx, f, req, stop, res, err)
}

// finish turns what a feature method returned into the request's result: a timeout's
// error, a textOnly tool result for the runtime to encode, or the encoded result with the
// 2026-07-28 fields. stop, if not nil, ends the request's time limit.
func (s *Server) finish(ctx context.Context, f *feature, req *Request, stop context.CancelFunc, res any, err error) (any, error) {
	if stop != nil {
		defer stop()
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), errTimedOut) {
			return nil, &jsonrpc.Error{Code: CodeServerBusy, Message: fmt.Sprintf(
				"Request timed out after %s; retry with a simpler request, or later", s.opts.RequestTimeout)}
		}
		return nil, err
	}
	if r, ok := res.(*CallToolResult); ok {
		if r.IsError { // the MCP semantic conventions: error.type tool_error
			runtime.ReportFailure(ctx, "tool_error")
		}
		if r.textOnly() {
			req.text = r
			return (*textAnswer)(req), nil
		}
	}
	raw, err := encodeResult(res)
	if err != nil || !req.meta.modern {
		return raw, err
	}
	complete := jsonrpc.FirstKey(raw) != "resultType" // only input_required sets it
	_, own := res.(json.RawMessage)
	own = own && f.cacheable && jsonrpc.Field(raw, "ttlMs") != nil // a result passed on keeps its server's
	raw = s.modernResult(raw)
	if f.cacheable && complete && !own {
		ttl, private := s.cachePolicy(f.method)
		if req.meta.retrying {
			ttl = 0 // results of input_required retries must not be reused
		}
		raw = s.cacheable(raw, ttl, private)
	}
	return raw, nil
}

// textAnswer is a request whose result is a textOnly tool result (req.text), which the
// runtime encodes straight into the response frame (see textResult).
type textAnswer Request

func (t *textAnswer) result() textResult {
	if t.meta.modern {
		return textResult{open: t.s.modernOpen, r: t.text}
	}
	return textResult{open: legacyOpen, r: t.text}
}

// SizeHint implements runtime.Appender.
func (t *textAnswer) SizeHint() int { r := t.result(); return r.SizeHint() }

// AppendJSON implements runtime.Appender.
func (t *textAnswer) AppendJSON(dst []byte) []byte { r := t.result(); return r.AppendJSON(dst) }

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
	if err := s.resumeInput(ctx, req, target, args, state, responses); err != nil {
		return nil, err
	}
	res, err := run()
	return s.askedInput(ctx, req, target, args, res, err)
}

// resumeInput is interactive's first half: under 2026-07-28, the answers of earlier rounds,
// from requestState and inputResponses.
func (s *Server) resumeInput(ctx context.Context, req *Request, target string, args, state, responses json.RawMessage) error {
	if !req.meta.modern || (state == nil && responses == nil) {
		return nil
	}
	answers := map[string]json.RawMessage{}
	if raw := state; raw != nil {
		var token string
		if json.Unmarshal(raw, &token) != nil {
			return errInvalidParams("requestState must be a string")
		}
		st, err := s.openState(token, binding(ctx, req, target, args))
		if err != nil {
			return errInvalidParams("%v", err)
		}
		for k, v := range st.Answers {
			answers[k] = v
		}
		req.meta.retrying = true
	}
	if raw := responses; raw != nil {
		var got map[string]json.RawMessage
		if json.Unmarshal(raw, &got) != nil {
			return errInvalidParams("inputResponses must be an object")
		}
		for k, v := range got {
			answers[k] = v
		}
		req.meta.retrying = true
	}
	req.rounds().answers = answers
	return nil
}

// askedInput is interactive's second half: under 2026-07-28, a handler's ErrInputRequired
// becomes an input_required result whose requestState carries every answer so far.
func (s *Server) askedInput(ctx context.Context, req *Request, target string, args json.RawMessage, res any, err error) (any, error) {
	err = s.urlRequired(req, err)
	in := req.input.Load()
	if !req.meta.modern || err == nil || !errors.Is(err, ErrInputRequired) || in == nil {
		return res, err
	}
	asked := in.questions()
	if len(asked) == 0 {
		return res, err
	}
	answers := in.answers
	if answers == nil {
		answers = map[string]json.RawMessage{}
	}
	// The binding is computed only when a requestState is read or issued: hashing the
	// arguments costs a decode and an encode of them, which plain calls need not pay.
	bind := binding(ctx, req, target, args)
	bind.Answers = answers
	return struct {
		ResultType    string                  `json:"resultType"`
		InputRequests map[string]inputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}{"input_required", asked, s.sealState(bind)}, nil
}

// binding is what a requestState is bound to: the request's method, target, arguments and
// principal.
func binding(ctx context.Context, req *Request, target string, args json.RawMessage) *requestState {
	bind := &requestState{Method: req.rt.Method, Target: target, Args: argsDigest(args)}
	if p := runtime.PrincipalFrom(ctx); p != nil {
		bind.Principal = p.ID
	}
	return bind
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
