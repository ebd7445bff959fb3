package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// Tool describes a tool as tools/list shows it.
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema describes the arguments. AddTool derives it from the handler's argument
	// type when it is nil.
	InputSchema  *jsonschema.Schema `json:"inputSchema"`
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

// Content is one item of a tool result: TextContent, and the other kinds as they are added.
type Content interface {
	wire() contentWire
}

// TextContent is a text item.
type TextContent struct {
	Text string
	Meta map[string]any
}

func (c *TextContent) wire() contentWire {
	return contentWire{Type: "text", Text: &c.Text, Meta: c.Meta}
}

// contentWire is the JSON shape shared by every content kind.
type contentWire struct {
	Type     string         `json:"type"`
	Text     *string        `json:"text,omitempty"`
	Data     string         `json:"data,omitempty"`
	MimeType string         `json:"mimeType,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// CallToolResult is what a tool returns. A failure of the tool itself (bad input values, an
// API that failed) is a result with IsError set, so the model can see it; a Go error returned
// by a handler becomes such a result too, unless it is a *jsonrpc.Error.
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

type callToolWire struct {
	ResultType        string          `json:"resultType,omitempty"`
	Content           []contentWire   `json:"content"`
	StructuredContent any             `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              json.RawMessage `json:"_meta,omitempty"`
}

// CallToolRequest is a tools/call request as a tool handler sees it.
type CallToolRequest struct {
	Name      string
	Arguments json.RawMessage

	rt           *runtime.Request
	meta         requestMeta
	lastProgress float64
	sentProgress bool
}

// ProtocolVersion returns the revision the request was made under.
func (r *CallToolRequest) ProtocolVersion() string { return r.meta.version }

// Progress reports progress to the client if the request asked for it with a progressToken;
// otherwise it does nothing. progress must increase from call to call (calls that do not
// are dropped, as the protocol requires); total and message may be zero.
func (r *CallToolRequest) Progress(progress, total float64, message string) error {
	if r.meta.progressToken == nil || (r.sentProgress && progress <= r.lastProgress) {
		return nil
	}
	r.sentProgress, r.lastProgress = true, progress
	return r.rt.Notify("notifications/progress", progressParams{
		Token: r.meta.progressToken, Progress: progress, Total: total, Message: message,
	})
}

type progressParams struct {
	Token    json.RawMessage `json:"progressToken"`
	Progress float64         `json:"progress"`
	Total    float64         `json:"total,omitempty"`
	Message  string          `json:"message,omitempty"`
}

// ToolHandler serves one tool. In is the type the arguments are decoded into, after they
// have been validated against the tool's input schema.
type ToolHandler[In any] func(ctx context.Context, req *CallToolRequest, in In) (*CallToolResult, error)

type tool struct {
	def    *Tool
	schema *jsonschema.Resolved
	call   func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)
}

// AddTool registers a tool. If t.InputSchema is nil it is derived from In (a struct: its
// exported fields become properties; fields without omitempty are required). It panics if the
// schema cannot be derived or resolved, which is a programming error.
func AddTool[In any](s *Server, t *Tool, h ToolHandler[In]) {
	def := *t
	if def.InputSchema == nil {
		schema, err := jsonschema.For[In](nil)
		if err != nil {
			panic(fmt.Sprintf("mcp: cannot derive the input schema of tool %q: %v", t.Name, err))
		}
		def.InputSchema = schema
	}
	resolved, err := def.InputSchema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: the input schema of tool %q is invalid: %v", t.Name, err))
	}
	tl := &tool{def: &def, schema: resolved}
	tl.call = func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		args := req.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		var inst any
		if err := json.Unmarshal(args, &inst); err != nil {
			return ErrorResult("Invalid arguments for tool " + t.Name + ": " + err.Error()), nil
		}
		if err := tl.schema.Validate(inst); err != nil {
			return ErrorResult("Invalid arguments for tool " + t.Name + ": " + err.Error()), nil
		}
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return ErrorResult("Invalid arguments for tool " + t.Name + ": " + err.Error()), nil
		}
		return h(ctx, req, in)
	}
	s.addTool(tl)
}

// callTool runs tools/call in a request actor.
func (s *Server) callTool(rm requestMeta, modern bool) runtime.Handler {
	return func(ctx context.Context, rt *runtime.Request) (any, error) {
		var name string
		if raw := jsonrpc.Field(rt.Params, "name"); raw == nil || json.Unmarshal(raw, &name) != nil {
			return nil, errInvalidParams(`tools/call needs "name", a string`)
		}
		tl := s.tools.Load().byName[name]
		if tl == nil {
			return nil, errInvalidParams("unknown tool %q; tools/list names the tools", name)
		}
		args := jsonrpc.Field(rt.Params, "arguments")
		if string(args) == "null" {
			args = nil
		}
		if args != nil && !jsonrpc.IsObject(args) {
			return s.encodeCallResult(ErrorResult("Invalid arguments for tool "+name+": arguments must be an object"), modern)
		}
		req := &CallToolRequest{Name: name, Arguments: json.RawMessage(args), rt: rt, meta: rm}
		res, err := tl.call(ctx, req)
		if err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) || ctx.Err() != nil {
				return nil, err
			}
			res = ErrorResult(err.Error())
		}
		if res == nil {
			res = &CallToolResult{}
		}
		return s.encodeCallResult(res, modern)
	}
}

func (s *Server) encodeCallResult(res *CallToolResult, modern bool) (json.RawMessage, error) {
	w := callToolWire{
		Content:           make([]contentWire, len(res.Content)),
		StructuredContent: res.StructuredContent,
		IsError:           res.IsError,
	}
	for i, c := range res.Content {
		w.Content[i] = c.wire()
	}
	meta := res.Meta
	if modern {
		w.ResultType = "complete"
		if meta == nil {
			w.Meta = s.serverInfo
		} else {
			merged := make(map[string]any, len(meta)+1)
			for k, v := range meta {
				merged[k] = v
			}
			merged[MetaServerInfo] = s.info
			meta = merged
		}
	}
	if w.Meta == nil && meta != nil {
		raw, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		w.Meta = raw
	}
	return json.Marshal(w)
}
