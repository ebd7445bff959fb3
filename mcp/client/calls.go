package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"

	"github.com/relayrt/relay/mcp"
)

// pages walks a paginated list (MCP 2025-11-25 and 2026-07-28, Utilities › Pagination):
// each page's items under key, until a page has no nextCursor. It stops at the first error,
// which it yields.
func pages[T any](ctx context.Context, c *Client, method, key string, seen func([]json.RawMessage) []json.RawMessage, opts []CallOption) iter.Seq2[T, error] {
	var co callOptions
	for _, opt := range opts {
		opt.applyCall(&co)
	}
	return func(yield func(T, error) bool) {
		var zero T
		var cursor *string
		for {
			var params map[string]any
			if cursor != nil {
				params = map[string]any{"cursor": *cursor}
			}
			res, err := c.call(ctx, request{method: method, params: params}, opts...)
			if err != nil {
				yield(zero, err)
				return
			}
			var page map[string]json.RawMessage
			if err := json.Unmarshal(res, &page); err != nil {
				yield(zero, fmt.Errorf("mcp/client: a %s result that does not decode: %w", method, err))
				return
			}
			if co.cache != nil {
				var ms int64
				json.Unmarshal(page["ttlMs"], &ms)
				co.cache(time.Duration(max(ms, 0))*time.Millisecond, string(page["cacheScope"]) == `"private"`)
			}
			var items []json.RawMessage
			if err := json.Unmarshal(page[key], &items); err != nil {
				yield(zero, fmt.Errorf("mcp/client: %s.%s does not decode: %w", method, key, err))
				return
			}
			if seen != nil {
				items = seen(items)
			}
			for _, raw := range items {
				var v T
				if err := json.Unmarshal(raw, &v); err != nil {
					if co.undecodable != nil {
						co.undecodable(raw, err)
						continue
					}
					yield(zero, fmt.Errorf("mcp/client: an item of %s does not decode: %w", method, err))
					return
				}
				if !yield(v, nil) {
					return
				}
			}
			var next *string
			if raw, ok := page["nextCursor"]; ok && string(raw) != "null" {
				next = new(string)
				json.Unmarshal(raw, next)
			}
			if next == nil || *next == "" {
				return
			}
			cursor = next
		}
	}
}

// ListTools lists the server's tools, page by page as the iteration goes on. A tool whose
// x-mcp-header annotations are invalid is left out (MCP 2026-07-28, Transports ›
// Streamable HTTP › custom headers: clients must exclude it); the others' annotations are
// kept for CallTool to mirror.
func (c *Client) ListTools(ctx context.Context, opts ...CallOption) iter.Seq2[*mcp.Tool, error] {
	return pages[*mcp.Tool](ctx, c, "tools/list", "tools", c.keepTools, opts)
}

// ListResources lists the server's resources, page by page.
func (c *Client) ListResources(ctx context.Context, opts ...CallOption) iter.Seq2[*mcp.Resource, error] {
	return pages[*mcp.Resource](ctx, c, "resources/list", "resources", nil, opts)
}

// ListResourceTemplates lists the server's resource templates, page by page.
func (c *Client) ListResourceTemplates(ctx context.Context, opts ...CallOption) iter.Seq2[*mcp.ResourceTemplate, error] {
	return pages[*mcp.ResourceTemplate](ctx, c, "resources/templates/list", "resourceTemplates", nil, opts)
}

// ListPrompts lists the server's prompts, page by page.
func (c *Client) ListPrompts(ctx context.Context, opts ...CallOption) iter.Seq2[*mcp.Prompt, error] {
	return pages[*mcp.Prompt](ctx, c, "prompts/list", "prompts", nil, opts)
}

// CallTool calls the tool name with args (anything that marshals to a JSON object, or nil).
// A failure of the tool itself is a result with IsError set; a protocol failure is an
// error (a *jsonrpc.Error when the server answered with one).
//
// A server may run the call as a task (io.modelcontextprotocol/tasks): CallTool then waits
// for it, answering its questions through the client's handlers, and cancels it when ctx
// ends first; StartTool hands the task over instead.
func (c *Client) CallTool(ctx context.Context, name string, args any, opts ...CallOption) (*mcp.CallToolResult, error) {
	res, err := c.callTool(ctx, name, args, opts, nil)
	if err != nil {
		return nil, err
	}
	if rt, _ := resultType(res); rt == "task" {
		t := &Task{c: c}
		if err := t.take(res); err != nil {
			return nil, err
		}
		return t.waitOrCancel(ctx)
	}
	return decodeToolResult(res)
}

// callTool sends tools/call and returns its raw result: the tool's, or a task.
// extra holds other members of params to send as they are (Call's), or nil.
func (c *Client) callTool(ctx context.Context, name string, args any, opts []CallOption, extra map[string]json.RawMessage) (json.RawMessage, error) {
	params := map[string]any{"name": name}
	rawMembers(params, extra)
	var headers map[string]string
	if args != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		params["arguments"] = json.RawMessage(raw)
		if _, isHTTP := c.conn.(*httpConn); c.modern && isHTTP {
			c.mu.Lock()
			hp, known := c.headers[name]
			c.mu.Unlock()
			if !known {
				// The x-mcp-header arguments come from the tool's schema: list the tools to
				// learn it (MCP 2026-07-28, Transports › Streamable HTTP › custom headers).
				for _, err := range c.ListTools(ctx) {
					if err != nil {
						break
					}
				}
				c.mu.Lock()
				hp = c.headers[name]
				c.mu.Unlock()
			}
			headers = paramHeaders(hp, raw)
		}
	}
	return c.call(ctx, request{method: "tools/call", params: params, name: name, headers: headers}, opts...)
}

// decodeToolResult decodes a CallToolResult.
func decodeToolResult(res json.RawMessage) (*mcp.CallToolResult, error) {
	var w struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
		Meta              map[string]any    `json:"_meta"`
	}
	if err := json.Unmarshal(res, &w); err != nil {
		return nil, fmt.Errorf("mcp/client: a tools/call result that does not decode: %w", err)
	}
	r := &mcp.CallToolResult{IsError: w.IsError, Meta: w.Meta}
	for i, raw := range w.Content {
		c, err := mcp.DecodeContent(raw)
		if err != nil {
			return nil, fmt.Errorf("mcp/client: block %d of a tools/call result: %w", i, err)
		}
		r.Content = append(r.Content, c)
	}
	if len(w.StructuredContent) > 0 && string(w.StructuredContent) != "null" {
		var sc any
		json.Unmarshal(w.StructuredContent, &sc)
		r.StructuredContent = sc
	}
	return r, nil
}

// ReadResource reads the resource at uri.
func (c *Client) ReadResource(ctx context.Context, uri string, opts ...CallOption) (*mcp.ReadResourceResult, error) {
	res, err := c.call(ctx, request{method: "resources/read", params: map[string]any{"uri": uri}, name: uri}, opts...)
	if err != nil {
		return nil, err
	}
	var w struct {
		Contents []resourceWire `json:"contents"`
		Meta     map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(res, &w); err != nil {
		return nil, fmt.Errorf("mcp/client: a resources/read result that does not decode: %w", err)
	}
	r := &mcp.ReadResourceResult{Meta: w.Meta}
	for i := range w.Contents {
		r.Contents = append(r.Contents, w.Contents[i].contents())
	}
	return r, nil
}

// GetPrompt gets the prompt name with its arguments.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string, opts ...CallOption) (*mcp.GetPromptResult, error) {
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	res, err := c.call(ctx, request{method: "prompts/get", params: params, name: name}, opts...)
	if err != nil {
		return nil, err
	}
	var w struct {
		Description string         `json:"description"`
		Meta        map[string]any `json:"_meta"`
		Messages    []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(res, &w); err != nil {
		return nil, fmt.Errorf("mcp/client: a prompts/get result that does not decode: %w", err)
	}
	r := &mcp.GetPromptResult{Description: w.Description, Meta: w.Meta}
	for i, m := range w.Messages {
		c, err := mcp.DecodeContent(m.Content)
		if err != nil {
			return nil, fmt.Errorf("mcp/client: message %d of a prompts/get result: %w", i, err)
		}
		r.Messages = append(r.Messages, &mcp.PromptMessage{Role: m.Role, Content: c})
	}
	return r, nil
}

// Ping checks that the server answers. Under 2026-07-28, which removed ping, it sends
// server/discover instead.
func (c *Client) Ping(ctx context.Context) error {
	method := "ping"
	if c.modern {
		method = "server/discover"
	}
	_, err := c.call(ctx, request{method: method})
	return err
}

// Complete asks the server for completion values of the argument name, whose value so far
// is value, of a prompt or resource template (ref); args holds the values of the
// arguments already filled in (Server Features › Utilities › Completion).
func (c *Client) Complete(ctx context.Context, ref mcp.CompleteReference, name, value string, args map[string]string) (*mcp.CompleteResult, error) {
	params := map[string]any{"ref": ref, "argument": map[string]string{"name": name, "value": value}}
	if len(args) > 0 {
		params["context"] = map[string]any{"arguments": args}
	}
	res, err := c.call(ctx, request{method: "completion/complete", params: params})
	if err != nil {
		return nil, err
	}
	var w struct {
		Completion struct {
			Values  []string `json:"values"`
			Total   int      `json:"total"`
			HasMore bool     `json:"hasMore"`
		} `json:"completion"`
	}
	if err := json.Unmarshal(res, &w); err != nil {
		return nil, fmt.Errorf("mcp/client: a completion/complete result that does not decode: %w", err)
	}
	return &mcp.CompleteResult{Values: w.Completion.Values, Total: w.Completion.Total, HasMore: w.Completion.HasMore}, nil
}

// SetLogLevel asks the server for its log messages at level and above. Under the
// initialize generation it sends logging/setLevel for the session; under 2026-07-28,
// which removed that method, every later request carries the level in its _meta
// (Utilities › Logging), unless WithLogLevel sets another for a call. The messages reach
// the WithNotifications of the call they belong to.
func (c *Client) SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if c.modern {
		c.mu.Lock()
		c.logLevel = string(level)
		c.mu.Unlock()
		return nil
	}
	_, err := c.call(ctx, request{method: "logging/setLevel", params: map[string]any{"level": level}})
	return err
}
