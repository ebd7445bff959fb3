package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// Tool describes a tool as tools/list shows it.
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Icons are images a client may show for it (2025-11-25 on).
	Icons []Icon `json:"icons,omitempty"`
	// InputSchema describes the arguments. AddTool derives it from the handler's argument
	// type when it is nil.
	InputSchema *jsonschema.Schema `json:"inputSchema"`
	// OutputSchema, when set, describes StructuredContent, which every successful result
	// must then carry and match.
	OutputSchema *jsonschema.Schema `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations   `json:"annotations,omitempty"`
	Meta         map[string]any     `json:"_meta,omitempty"`
}

// ToolAnnotations are hints about a tool's behaviour. Clients must not trust them from an
// untrusted server; supervisors use them to decide which calls are safe to repeat.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// CallToolResult is what a tool returns. A failure of the tool itself (bad input values, an
// API that failed) is a result with IsError set, so the model can see it; a Go error returned
// by a handler becomes such a result too, unless it is a *jsonrpc.Error or ErrInputRequired.
type CallToolResult struct {
	Content           []Content
	StructuredContent any
	IsError           bool
	Meta              map[string]any

	start TaskFunc // set by StartTask: the call goes on as a task running it
}

// TextResult returns a result with one text item.
func TextResult(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{&TextContent{Text: text}}}
}

// ErrorResult returns a tool-error result with one text item saying what went wrong.
func ErrorResult(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{&TextContent{Text: text}}, IsError: true}
}

// MarshalJSON writes the result in the protocol's shape.
func (r *CallToolResult) MarshalJSON() ([]byte, error) { return json.Marshal(r.wireForm()) }

type callToolWire struct {
	Meta              map[string]any `json:"_meta,omitempty"`
	Content           []contentWire  `json:"content"`
	StructuredContent any            `json:"structuredContent,omitempty"`
	IsError           bool           `json:"isError,omitempty"`
}

// textOnly reports whether the result holds text items and nothing else.
func (r *CallToolResult) textOnly() bool {
	if r.Meta != nil || r.StructuredContent != nil {
		return false
	}
	for _, c := range r.Content {
		if t, ok := c.(*TextContent); !ok || t.Meta != nil || t.Annotations != nil {
			return false
		}
	}
	return true
}

// appendTextMembers appends the members of a textOnly result and the closing brace.
func (r *CallToolResult) appendTextMembers(dst []byte) []byte {
	dst = append(dst, `"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"text","text":`...)
		dst = jsonrpc.AppendString(dst, c.(*TextContent).Text)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return append(dst, '}')
}

// textResult is a textOnly tools/call result, the common one, that the runtime encodes
// straight into the response frame (runtime.Appender): without encoding/json's reflection and
// second pass over the output, and without the three copies a 64 KiB echo otherwise made
// after encoding (into the 2026-07-28 form, into the frame, and once on the way).
type textResult struct {
	open []byte // "{", or the start of a 2026-07-28 result up to its first member
	r    *CallToolResult
}

// SizeHint implements runtime.Appender.
func (t *textResult) SizeHint() int {
	n := len(t.open) + 32
	for _, c := range t.r.Content {
		n += len(c.(*TextContent).Text) + 32
	}
	return n
}

// AppendJSON implements runtime.Appender.
func (t *textResult) AppendJSON(dst []byte) []byte {
	return t.r.appendTextMembers(append(dst, t.open...))
}

func (r *CallToolResult) wireForm() *callToolWire {
	return &callToolWire{r.Meta, wireContents(r.Content), r.StructuredContent, r.IsError}
}

// CallToolRequest is a tools/call request as a tool handler sees it.
type CallToolRequest struct {
	*Request
	Name      string
	Arguments json.RawMessage
}

// ToolHandler serves one tool. In is the type the arguments are decoded into, after they
// have been validated against the tool's input schema.
type ToolHandler[In any] func(ctx context.Context, req *CallToolRequest, in In) (*CallToolResult, error)

type tool struct {
	def     *Tool
	headers []HeaderParam
	raw     json.RawMessage // the definition, encoded once
	input   *jsonschema.Resolved
	output  *jsonschema.Resolved
	opts    toolOptions
	// start checks and decodes the arguments (req.toolCall.Arguments) and returns the call
	// of the handler, or else the tool-error result that answers the request.
	start func(req *Request) (toolRunner, *CallToolResult)
	// handler is the ToolHandler[In]: here rather than in each toolRun, which a call that
	// waits keeps (48 bytes instead of 64 for arguments of one word).
	handler any
	// running counts the calls in the handler on workers now; past waitingCalls, the tool
	// is one whose calls wait, and its next calls are detached (see routing.run).
	running atomic.Int32
}

// waitingCalls is how many calls of a tool may be in its handler on workers at once before
// the next ones run on goroutines of their own. A tool that answers at once never has more
// calls running than there are cores to run them, and detaching would only cost each call a
// goroutine and a message to the dispatcher; one whose calls wait piles them up, and each
// call that waits on a worker keeps the worker's whole stack.
const waitingCalls = 16

// toolRunner is a tool call whose arguments are decoded: a *toolRun.
type toolRunner interface {
	// call runs the tool on the caller's goroutine and returns what callTool returns.
	call(ctx context.Context) (any, error)
	// waits reports whether the tool's calls wait (see waitingCalls).
	waits() bool
	// detach returns the tool's call as the rest of routing.run, to run on a goroutine of
	// its own: it runs the tool under ctx and finishes the request as run does; stop ends
	// the request's time limit (nil without one).
	detach(ctx context.Context, stop context.CancelFunc) runtime.Continuation
}

// toolRun is a tool call ready to run: the handler and its decoded arguments. Detached, it
// and the closure that calls it are what a tools/call that waits keeps besides its Request
// (and the runtime's own: the request's entry and context, its goroutine).
type toolRun[In any] struct {
	req  *Request
	tl   *tool
	ctx  context.Context    // detached: the handler's, with its trace and time limit
	stop context.CancelFunc // detached: ends the time limit; nil without one
	in   In                 // the handler is tl.handler
}

func (t *toolRun[In]) call(ctx context.Context) (any, error) {
	res, err := t.run(ctx)
	return t.req.s.toolReturned(ctx, t.req, t.tl, res, err)
}

// run calls the handler on the caller's goroutine, counted in running.
func (t *toolRun[In]) run(ctx context.Context) (*CallToolResult, error) {
	t.tl.running.Add(1)
	defer t.tl.running.Add(-1)
	return t.tl.handler.(ToolHandler[In])(ctx, &t.req.toolCall, t.in)
}

func (t *toolRun[In]) waits() bool { return t.tl.running.Load() >= waitingCalls }

// detach: the closure it returns is all that sits between the runtime's frames and the
// tool's, so its frame must stay small: it captures t alone, and keeps only t across the
// tool's call (a closure that captured t's fields instead, 8 bytes less on the heap, took 64
// bytes more of the stack the call waits on).
func (t *toolRun[In]) detach(ctx context.Context, stop context.CancelFunc) runtime.Continuation {
	t.ctx, t.stop = ctx, stop
	return func() (any, error) {
		return t.finished(t.tl.handler.(ToolHandler[In])(t.ctx, &t.req.toolCall, t.in))
	}
}

// finished is the end of a detached tool call: its result, finished as routing.run
// finishes every request.
func (t *toolRun[In]) finished(res *CallToolResult, err error) (any, error) {
	r, err := t.req.s.toolReturned(t.ctx, t.req, t.tl, res, err)
	return t.req.s.finish(t.ctx, toolsCall, t.req, t.stop, r, err)
}

// AddTool registers a tool, replacing one of the same name. If t.InputSchema is nil it is
// derived from In (a struct: its exported fields become properties; fields without omitempty
// are required). It panics if a schema cannot be derived or resolved, or an icon is not valid,
// which is a programming error. opts tune how its calls are served: AsTask and StartsTask
// make them tasks.
//
// A long string argument (1 KiB or more, most of the arguments) is not copied out of the
// request: it shares the request's memory, which nothing changes. A handler that keeps it
// keeps the request's frame with it, at most about twice its size.
func AddTool[In any](s *Server, t *Tool, h ToolHandler[In], opts ...ToolOption) {
	var o toolOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.wholly && o.tasks != TaskForbidden {
		body := h
		h = func(ctx context.Context, req *CallToolRequest, in In) (*CallToolResult, error) {
			return req.StartTask(ctx, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
				return body(ctx, req, in)
			})
		}
	}
	def := *t
	checkIcons("tool "+t.Name, t.Icons)
	var flat *flatArgs
	if def.InputSchema == nil {
		schema, err := jsonschema.For[In](nil)
		if err != nil {
			panic(fmt.Sprintf("mcp: cannot derive the input schema of tool %q: %v", t.Name, err))
		}
		def.InputSchema = schema
		if flat = flatSchema(schema); flat != nil {
			flat.fields = fieldsOf(reflect.TypeFor[In]())
		}
	}
	headers, err := headerParams(t.Name, def.InputSchema)
	if err != nil {
		panic("mcp: " + err.Error())
	}
	tl := &tool{def: &def, headers: headers, input: mustResolve(t.Name, "input", def.InputSchema), handler: h, opts: o}
	if def.OutputSchema != nil {
		tl.output = mustResolve(t.Name, "output", def.OutputSchema)
	}
	tl.start = func(req *Request) (toolRunner, *CallToolResult) {
		args := req.toolCall.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if flat != nil {
			if err := flat.check(args); err != nil {
				return nil, invalidArguments(t.Name, err)
			}
		} else {
			var inst any
			if err := json.Unmarshal(args, &inst); err != nil {
				return nil, invalidArguments(t.Name, err)
			}
			if err := tl.input.Validate(inst); err != nil {
				return nil, invalidArguments(t.Name, err)
			}
		}
		run := &toolRun[In]{req: req, tl: tl}
		if flat == nil || !flat.decode(args, &run.in) {
			run.in = *new(In)
			if err := json.Unmarshal(args, &run.in); err != nil {
				return nil, invalidArguments(t.Name, err)
			}
		}
		return run, nil
	}
	raw, err := json.Marshal(&def)
	if err != nil {
		panic(fmt.Sprintf("mcp: tool %q cannot be encoded: %v", t.Name, err))
	}
	tl.raw = raw
	s.update(toolsChanged, func(r *registry) { r.tools[def.Name] = tl })
}

// RemoveTools removes tools by name; clients listening for list changes are told.
func (s *Server) RemoveTools(names ...string) {
	s.update(toolsChanged, func(r *registry) {
		for _, n := range names {
			delete(r.tools, n)
		}
	})
}

func mustResolve(name, which string, schema *jsonschema.Schema) *jsonschema.Resolved {
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: the %s schema of tool %q is invalid: %v", which, name, err))
	}
	return resolved
}

func invalidArguments(tool string, err error) *CallToolResult {
	return ErrorResult("Invalid arguments for tool " + tool + ": " + err.Error())
}

// callTool serves tools/call on one goroutine, as middleware sees it. Without middleware,
// routing.run calls startTool and then the tool itself, detached if its calls wait.
func (s *Server) callTool(ctx context.Context, req *Request) (any, error) {
	run, res, err := s.startTool(ctx, req)
	if run == nil {
		return res, err
	}
	return run.call(ctx)
}

// startTool is the first part of a tools/call: it finds the tool, restores the answers of
// earlier input rounds, and checks and decodes the arguments. It returns the call of the
// tool, ready to run, or else the request's answer.
func (s *Server) startTool(ctx context.Context, req *Request) (toolRunner, any, error) {
	p := req.params // read when the request was routed
	tl := lookupTool(s.reg.Load().tools, p[pName])
	if tl == nil {
		name, err := asString(p[pName], "name")
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, errInvalidParams("unknown tool %q; tools/list names the tools", name)
	}
	name := tl.def.Name
	if req.meta.taskSupport = tl.opts.tasks; req.meta.taskSupport == TaskRequired && !req.tasksNegotiated() {
		if !req.meta.modern { // -32021 exists only in 2026-07-28: the model reads why instead
			return nil, ErrorResult("Tool " + name + " runs only as a task (" + ExtensionTasks +
				"), which a client of this protocol version cannot ask for; use a 2026-07-28 client that declares it"), nil
		}
		return nil, nil, errTasksRequired("tool " + name)
	}
	args := p[pArguments]
	if string(args) == "null" {
		args = nil
	}
	if args != nil && !jsonrpc.IsObject(args) {
		return nil, ErrorResult("Invalid arguments for tool " + name + ": arguments must be an object"), nil
	}
	if err := s.resumeInput(ctx, req, name, args, p[pRequestState], p[pInputResponses]); err != nil {
		return nil, nil, err
	}
	req.toolCall = CallToolRequest{Request: req, Name: name, Arguments: json.RawMessage(args)}
	run, bad := tl.start(req)
	if run == nil {
		res, err := s.toolReturned(ctx, req, tl, bad, nil)
		return nil, res, err
	}
	return run, nil, nil
}

// toolReturned turns what a tool returned into the tools/call's result: a Go error becomes a
// tool-error result unless it is the protocol's, and a structured result must match the
// output schema; under 2026-07-28, a request for input becomes an input_required result.
func (s *Server) toolReturned(ctx context.Context, req *Request, tl *tool, res *CallToolResult, err error) (any, error) {
	name := tl.def.Name
	if err != nil {
		if isProtocolError(ctx, err) {
			return s.askedInput(ctx, req, name, req.toolCall.Arguments, nil, err)
		}
		res = ErrorResult(err.Error())
	}
	if res == nil {
		res = &CallToolResult{Content: []Content{}}
	}
	if res.start != nil {
		return s.createTask(ctx, req, tl, res.start)
	}
	if tl.output != nil && !res.IsError {
		if err := checkOutput(tl.output, res.StructuredContent); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "Internal error: tool " + name + " returned structuredContent that does not match its outputSchema: " + err.Error()}
		}
	}
	return res, nil
}

// lookupTool finds the tool a raw JSON name names, without allocating for the common name
// that has no escapes.
func lookupTool(tools map[string]*tool, raw json.RawMessage) *tool {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return tools[string(raw[1:n-1])]
	}
	if name, ok := unquote(raw); ok {
		return tools[name]
	}
	return nil
}

// isProtocolError reports whether a tool handler's error is answered as a JSON-RPC error
// rather than as a tool-error result: a *jsonrpc.Error, a request for input (of the client,
// or of the user at a URL), or the end of the request's context.
func isProtocolError(ctx context.Context, err error) bool {
	var je *jsonrpc.Error
	var ue *URLElicitationRequiredError
	return errors.As(err, &je) || errors.Is(err, ErrInputRequired) || errors.As(err, &ue) || ctx.Err() != nil
}

// checkOutput validates structured content against a tool's output schema.
func checkOutput(schema *jsonschema.Resolved, v any) error {
	if v == nil {
		return errors.New("structuredContent is missing")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var inst any
	json.Unmarshal(raw, &inst)
	return schema.Validate(inst)
}
