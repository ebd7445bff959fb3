package mcp

import (
	"context"
	"encoding/json"
)

// CompleteReference names what is being completed: a prompt (Type "ref/prompt", Name) or a
// resource template (Type "ref/resource", URI).
type CompleteReference struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteRequest is a completion/complete request.
type CompleteRequest struct {
	*Request
	Ref      CompleteReference
	Argument struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	// Context holds the values of arguments already filled in.
	Context map[string]string
}

// CompleteResult offers completion values (at most 100).
type CompleteResult struct {
	Values  []string
	Total   int
	HasMore bool
}

// CompletionHandler serves completion/complete.
type CompletionHandler func(ctx context.Context, req *CompleteRequest) (*CompleteResult, error)

// SetCompletionHandler sets the server's completion handler and advertises completions.
func (s *Server) SetCompletionHandler(h CompletionHandler) {
	s.update(0, func(r *registry) { r.complete = h })
}

func (s *Server) complete(ctx context.Context, req *Request) (any, error) {
	var p struct {
		Ref      CompleteReference `json:"ref"`
		Argument struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"argument"`
		Context struct {
			Arguments map[string]string `json:"arguments"`
		} `json:"context"`
	}
	if err := json.Unmarshal(req.rt.Params, &p); err != nil || p.Ref.Type == "" || p.Argument.Name == "" {
		return nil, errInvalidParams("completion/complete needs ref{type} and argument{name,value}")
	}
	h := s.reg.Load().complete
	cr := &CompleteRequest{Request: req, Ref: p.Ref, Context: p.Context.Arguments}
	cr.Argument = p.Argument
	res, err := h(ctx, cr)
	if err != nil {
		return nil, err
	}
	values := res.Values
	if values == nil {
		values = []string{}
	}
	if len(values) > 100 {
		values, res.HasMore = values[:100], true
	}
	type completion struct {
		Values  []string `json:"values"`
		Total   int      `json:"total,omitempty"`
		HasMore bool     `json:"hasMore,omitempty"`
	}
	return struct {
		Completion completion `json:"completion"`
	}{completion{values, res.Total, res.HasMore}}, nil
}
