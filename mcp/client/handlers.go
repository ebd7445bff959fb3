package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// WithElicitation lets the server ask the user for input in form mode (elicitation/create;
// MCP 2025-11-25 and 2026-07-28, Client Features › Elicitation): fn shows p.Message and the
// form p.RequestedSchema describes, and returns the user's answer. A field of the schema
// that an accepted answer leaves out gets the schema's default, as a form prefilled with
// its defaults would send it (SEP-1034). The client declares elicitation.form; for URL
// mode, see WithURLElicitation.
func WithElicitation(fn func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)) Option {
	return optionFunc(func(o *options) { o.elicit = fn })
}

// WithURLElicitation lets the server send the user to a URL (elicitation/create with mode
// "url"; 2025-11-25 on, Client Features › Elicitation › URL mode): fn shows p.Message and
// p.URL and, with the user's consent, opens it; it returns "accept" once opened, or
// "decline" or "cancel". Under the initialize generation the server tells of the end of
// the interaction with notifications/elicitation/complete, which WithElicitationComplete
// hears. The client declares elicitation.url.
func WithURLElicitation(fn func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)) Option {
	return optionFunc(func(o *options) { o.elicitURL = fn })
}

// WithElicitationComplete gives fn the id of each URL-mode elicitation the server says is
// complete (notifications/elicitation/complete; MCP 2025-11-25, Client Features ›
// Elicitation › URL mode): the user is done at the URL that WithURLElicitation's handler
// was given with that id (p.ElicitationID), so a client that waits for them can go on, or
// retry the request that needed it. fn is called on the connection's reading goroutine and
// must return quickly. Only servers of the initialize generation send it: 2026-07-28 has no
// such notification, and a URL-mode elicitation there has no id.
func WithElicitationComplete(fn func(elicitationID string)) Option {
	return optionFunc(func(o *options) { o.elicitDone = fn })
}

// WithSampling lets the server ask the client's model for a completion
// (sampling/createMessage; Client Features › Sampling). The client declares sampling with
// tools (sampling.tools, 2025-11-25 on): fn offers p.Tools to the model as p.ToolChoice
// says, and a model that wants one answers with StopReason "toolUse" and
// *mcp.ToolUseContent blocks, which the server runs and answers in its next request.
func WithSampling(fn func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)) Option {
	return optionFunc(func(o *options) { o.sample = fn })
}

// WithRoots lets the server list the directories and files the client exposes
// (roots/list; Client Features › Roots).
func WithRoots(fn func(ctx context.Context) ([]mcp.Root, error)) Option {
	return optionFunc(func(o *options) { o.roots = fn })
}

// maxInputRounds bounds the retries of one call answered input_required again and again.
const maxInputRounds = 16

// capabilities is the client's capabilities object: what its handlers answer.
func (o *options) capabilities() map[string]any {
	caps := map[string]any{}
	if o.elicit != nil || o.elicitURL != nil {
		modes := map[string]any{}
		if o.elicit != nil {
			modes["form"] = map[string]any{}
		}
		if o.elicitURL != nil {
			modes["url"] = map[string]any{}
		}
		caps["elicitation"] = modes
	}
	if o.sample != nil {
		caps["sampling"] = map[string]any{"tools": map[string]any{}}
	}
	if o.roots != nil {
		caps["roots"] = map[string]any{}
	}
	return caps
}

// inbox takes what a server sends its client unasked: requests, which the client's
// handlers answer, and notifications that belong to no call, which go to the listeners.
// Every transport is given one when it is dialled.
type inbox struct {
	o *options

	mu        sync.Mutex
	listeners map[*listener]struct{}
}

// serve answers what a server asks of this client, through the handlers it was given: as a
// server-to-client request under the initialize generation, as one input request of an
// input_required result under 2026-07-28. An error is sent as a *jsonrpc.Error.
func (in *inbox) serve(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	o := in.o
	var res any
	var err error
	switch {
	case method == "ping":
		return json.RawMessage("{}"), nil
	case method == "elicitation/create" && o.handles(method):
		var p mcp.ElicitParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams(method, err)
		}
		var r *mcp.ElicitResult
		switch {
		case p.Mode == mcp.ElicitURL && o.elicitURL != nil:
			r, err = o.elicitURL(ctx, &p)
		case p.Mode != mcp.ElicitURL && o.elicit != nil:
			if r, err = o.elicit(ctx, &p); err == nil && r != nil && r.Action == "accept" {
				r.Content = withDefaults(p.RequestedSchema, r.Content)
			}
		default:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("this client did not declare elicitation mode %q", p.Mode)}
		}
		res = r
	case method == "sampling/createMessage" && o.sample != nil:
		var p mcp.CreateMessageParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams(method, err)
		}
		res, err = o.sample(ctx, &p)
	case method == "roots/list" && o.roots != nil:
		var roots []mcp.Root
		if roots, err = o.roots(ctx); err == nil {
			if roots == nil {
				roots = []mcp.Root{}
			}
			res = mcp.ListRootsResult{Roots: roots}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: "Method not found: this client has no handler for " + method}
	}
	if err != nil {
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) {
			return nil, rpc
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	raw, err := json.Marshal(res)
	if err == nil && string(raw) == "null" {
		err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the client's " + method + " handler gave no answer"}
	}
	return raw, err
}

func invalidParams(method string, err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the params of %s do not decode: %v", method, err)}
}

// withDefaults fills the fields of content that schema's properties give a default and
// content leaves out.
func withDefaults(schema any, content map[string]any) map[string]any {
	s, _ := schema.(map[string]any)
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		p, _ := p.(map[string]any)
		def, ok := p["default"]
		if !ok {
			continue
		}
		if _, set := content[name]; set {
			continue
		}
		if content == nil {
			content = map[string]any{}
		}
		content[name] = def
	}
	return content
}

// inputRequired is an input_required result (MCP 2026-07-28, Basic › Patterns ›
// Multi-round-trip requests).
type inputRequired struct {
	InputRequests map[string]inputRequest `json:"inputRequests"`
	RequestState  *string                 `json:"requestState"`
}

// inputRequest is one question of an input_required result or task.
type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// answerInputs answers each input request of res through the handlers, and returns the
// params of the retry: the original params, the answers as inputResponses under the same
// keys, and requestState echoed untouched, or left out when res had none.
func (c *Client) answerInputs(ctx context.Context, res json.RawMessage, params map[string]any) (map[string]any, error) {
	var ir inputRequired
	if err := json.Unmarshal(res, &ir); err != nil {
		return nil, fmt.Errorf("mcp/client: an input_required result that does not decode: %w", err)
	}
	responses := make(map[string]json.RawMessage, len(ir.InputRequests))
	for key, q := range ir.InputRequests {
		answer, err := c.answerOne(ctx, q)
		if err != nil {
			return nil, err
		}
		responses[key] = answer
	}
	retry := make(map[string]any, len(params)+2)
	for k, v := range params {
		retry[k] = v
	}
	retry["inputResponses"] = responses
	delete(retry, "requestState")
	if ir.RequestState != nil {
		retry["requestState"] = *ir.RequestState
	}
	return retry, nil
}

// answerOne answers one question of an input_required result or task through the
// client's handlers.
func (c *Client) answerOne(ctx context.Context, q inputRequest) (json.RawMessage, error) {
	switch q.Method {
	case "elicitation/create", "sampling/createMessage", "roots/list":
	default:
		return nil, fmt.Errorf("%w: it asked for %q, which is not an input request", ErrInputRequired, q.Method)
	}
	if !c.o.handles(q.Method) {
		return nil, fmt.Errorf("%w: it asked for %s, which this client has no handler for", ErrInputRequired, q.Method)
	}
	answer, err := c.in.serve(ctx, q.Method, q.Params)
	if err != nil {
		return nil, fmt.Errorf("mcp/client: answering the server's %s: %w", q.Method, err)
	}
	return answer, nil
}

// handles reports whether a handler answers method.
func (o *options) handles(method string) bool {
	switch method {
	case "elicitation/create":
		return o.elicit != nil || o.elicitURL != nil
	case "sampling/createMessage":
		return o.sample != nil
	case "roots/list":
		return o.roots != nil
	}
	return false
}
