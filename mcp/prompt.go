package mcp

import (
	"context"
	"encoding/json"
	"fmt"
)

// Prompt describes a prompt template as prompts/list shows it.
type Prompt struct {
	Name        string            `json:"name"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Arguments   []*PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon            `json:"icons,omitempty"` // images a client may show for it
	Meta        map[string]any    `json:"_meta,omitempty"`
}

// PromptArgument is one argument a prompt takes.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptMessage is one message of a prompt: Role is "user" or "assistant".
type PromptMessage struct {
	Role    string
	Content Content
}

// MarshalJSON writes the message in the protocol's shape.
func (m *PromptMessage) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Role    string      `json:"role"`
		Content contentWire `json:"content"`
	}{m.Role, m.Content.wire()})
}

// GetPromptResult is what a prompt handler returns.
type GetPromptResult struct {
	Meta        map[string]any   `json:"_meta,omitempty"`
	Description string           `json:"description,omitempty"`
	Messages    []*PromptMessage `json:"messages"`
}

// GetPromptRequest is a prompts/get request as a prompt handler sees it. Required
// arguments have been checked to be present.
type GetPromptRequest struct {
	*Request
	Name      string
	Arguments map[string]string
}

// PromptHandler serves one prompt.
type PromptHandler func(ctx context.Context, req *GetPromptRequest) (*GetPromptResult, error)

type prompt struct {
	def *Prompt
	raw json.RawMessage
	get PromptHandler
}

// AddPrompt registers a prompt, replacing one of the same name. It panics if an icon is not
// valid (see Icon), which is a programming error.
func (s *Server) AddPrompt(p *Prompt, h PromptHandler) {
	def := *p
	checkIcons("prompt "+p.Name, p.Icons)
	raw, err := json.Marshal(&def)
	if err != nil {
		panic(fmt.Sprintf("mcp: prompt %q cannot be encoded: %v", p.Name, err))
	}
	s.update(promptsChanged, func(r *registry) {
		r.prompts[def.Name] = &prompt{def: &def, raw: raw, get: h}
	})
}

// RemovePrompts removes prompts by name; clients listening for list changes are told.
func (s *Server) RemovePrompts(names ...string) {
	s.update(promptsChanged, func(r *registry) {
		for _, n := range names {
			delete(r.prompts, n)
		}
	})
}

func (s *Server) getPrompt(ctx context.Context, req *Request) (any, error) {
	params := req.params // read when the request was routed
	name, err := asString(params[pName], "name")
	if err != nil {
		return nil, err
	}
	p := s.reg.Load().prompts[name]
	if p == nil {
		return nil, errInvalidParams("unknown prompt %q; prompts/list names the prompts", name)
	}
	rawArgs := params[pArguments]
	var args map[string]string
	if rawArgs != nil && string(rawArgs) != "null" && json.Unmarshal(rawArgs, &args) != nil {
		return nil, errInvalidParams("prompt arguments must be an object of strings")
	}
	for _, a := range p.def.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return nil, errInvalidParams("prompt %q needs argument %q", name, a.Name)
		}
	}
	return s.interactive(ctx, req, name, rawArgs, params[pRequestState], params[pInputResponses], func() (any, error) {
		res, err := p.get(ctx, &GetPromptRequest{Request: req, Name: name, Arguments: args})
		if err != nil {
			return nil, err
		}
		if res.Messages == nil {
			res.Messages = []*PromptMessage{}
		}
		return res, nil
	})
}
