package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/relayrt/relay/jsonrpc"
)

// Tool describes a tool as tools/list shows it.
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
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
	call    func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)
}

// AddTool registers a tool, replacing one of the same name. If t.InputSchema is nil it is
// derived from In (a struct: its exported fields become properties; fields without omitempty
// are required). It panics if a schema cannot be derived or resolved, which is a programming
// error.
func AddTool[In any](s *Server, t *Tool, h ToolHandler[In]) {
	def := *t
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
	tl := &tool{def: &def, headers: headers, input: mustResolve(t.Name, "input", def.InputSchema)}
	if def.OutputSchema != nil {
		tl.output = mustResolve(t.Name, "output", def.OutputSchema)
	}
	tl.call = func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		args := req.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if flat != nil {
			if err := flat.check(args); err != nil {
				return invalidArguments(t.Name, err), nil
			}
		} else {
			var inst any
			if err := json.Unmarshal(args, &inst); err != nil {
				return invalidArguments(t.Name, err), nil
			}
			if err := tl.input.Validate(inst); err != nil {
				return invalidArguments(t.Name, err), nil
			}
		}
		var in In
		if flat == nil || !flat.decode(args, &in) {
			in = *new(In)
			if err := json.Unmarshal(args, &in); err != nil {
				return invalidArguments(t.Name, err), nil
			}
		}
		return h(ctx, req, in)
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

func (s *Server) listTools(ctx context.Context, req *Request) (any, error) {
	reg := s.reg.Load()
	keys, next, err := s.listPage(req, reg.toolNames)
	if err != nil {
		return nil, err
	}
	items := make([]json.RawMessage, len(keys))
	for i, k := range keys {
		items[i] = reg.tools[k].raw
	}
	return listResult("tools", items, next), nil
}

func (s *Server) callTool(ctx context.Context, req *Request) (any, error) {
	p := &req.meta.params // read when the request was routed
	tl := lookupTool(s.reg.Load().tools, p[pName])
	if tl == nil {
		name, err := asString(p[pName], "name")
		if err != nil {
			return nil, err
		}
		return nil, errInvalidParams("unknown tool %q; tools/list names the tools", name)
	}
	name := tl.def.Name
	args := p[pArguments]
	if string(args) == "null" {
		args = nil
	}
	if args != nil && !jsonrpc.IsObject(args) {
		return ErrorResult("Invalid arguments for tool " + name + ": arguments must be an object"), nil
	}
	return s.interactive(ctx, req, name, args, p[pRequestState], p[pInputResponses], func() (any, error) {
		req.toolCall = CallToolRequest{Request: req, Name: name, Arguments: json.RawMessage(args)}
		res, err := tl.call(ctx, &req.toolCall)
		if err != nil {
			if isProtocolError(ctx, err) {
				return nil, err
			}
			res = ErrorResult(err.Error())
		}
		if res == nil {
			res = &CallToolResult{Content: []Content{}}
		}
		if tl.output != nil && !res.IsError {
			if err := checkOutput(tl.output, res.StructuredContent); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: "Internal error: tool " + name + " returned structuredContent that does not match its outputSchema: " + err.Error()}
			}
		}
		return res, nil
	})
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
// rather than as a tool-error result: a *jsonrpc.Error, a request for input, or the end of
// the request's context.
func isProtocolError(ctx context.Context, err error) bool {
	var je *jsonrpc.Error
	return errors.As(err, &je) || errors.Is(err, ErrInputRequired) || ctx.Err() != nil
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
