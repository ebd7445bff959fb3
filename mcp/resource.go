package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/yosida95/uritemplate/v3"

	"github.com/relayrt/relay/jsonrpc"
)

// Resource describes a resource as resources/list shows it.
type Resource struct {
	URI         string         `json:"uri"`
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	MimeType    string         `json:"mimeType,omitempty"`
	Size        int64          `json:"size,omitempty"`
	Icons       []Icon         `json:"icons,omitempty"` // images a client may show for it
	Annotations *Annotations   `json:"annotations,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// ResourceTemplate describes a family of resources by an RFC 6570 URI template.
type ResourceTemplate struct {
	URITemplate string         `json:"uriTemplate"`
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	MimeType    string         `json:"mimeType,omitempty"`
	Icons       []Icon         `json:"icons,omitempty"` // images a client may show for it
	Annotations *Annotations   `json:"annotations,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// ReadResourceResult is what a resource handler returns.
type ReadResourceResult struct {
	Meta     map[string]any      `json:"_meta,omitempty"`
	Contents []*ResourceContents `json:"contents"`
}

// ReadResourceRequest is a resources/read request as a resource handler sees it. Vars holds
// the template variables when the URI matched a resource template.
type ReadResourceRequest struct {
	*Request
	URI  string
	Vars map[string]string
}

// ResourceHandler serves a resource or every resource of a template.
type ResourceHandler func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error)

// ErrResourceNotFound may be returned by a template's handler for a URI that matches the
// template but names nothing; the client gets the protocol's resource-not-found error.
var ErrResourceNotFound = errors.New("mcp: resource not found")

type resource struct {
	raw  json.RawMessage
	read ResourceHandler
}

type resourceTemplate struct {
	raw  json.RawMessage
	tmpl *uritemplate.Template
	read ResourceHandler
}

// AddResource registers a resource, replacing one with the same URI. It panics if an icon is
// not valid (see Icon), which is a programming error.
func (s *Server) AddResource(res *Resource, h ResourceHandler) {
	checkIcons("resource "+res.URI, res.Icons)
	raw, err := json.Marshal(res)
	if err != nil {
		panic(fmt.Sprintf("mcp: resource %q cannot be encoded: %v", res.URI, err))
	}
	s.update(resourcesChanged, func(r *registry) {
		r.resources[res.URI] = &resource{raw: raw, read: h}
	})
}

// AddResourceTemplate registers a resource template. It panics if the template is not valid
// RFC 6570 or an icon is not valid, which is a programming error.
func (s *Server) AddResourceTemplate(t *ResourceTemplate, h ResourceHandler) {
	checkIcons("resource template "+t.URITemplate, t.Icons)
	tmpl, err := uritemplate.New(t.URITemplate)
	if err != nil {
		panic(fmt.Sprintf("mcp: resource template %q is invalid: %v", t.URITemplate, err))
	}
	raw, err := json.Marshal(t)
	if err != nil {
		panic(fmt.Sprintf("mcp: resource template %q cannot be encoded: %v", t.URITemplate, err))
	}
	s.update(resourcesChanged, func(r *registry) {
		r.templates[t.URITemplate] = &resourceTemplate{raw: raw, tmpl: tmpl, read: h}
	})
}

// RemoveResources removes resources by URI; clients listening for list changes are told.
func (s *Server) RemoveResources(uris ...string) {
	s.update(resourcesChanged, func(r *registry) {
		for _, u := range uris {
			delete(r.resources, u)
		}
	})
}

// RemoveResourceTemplates removes resource templates by their URI template; clients
// listening for list changes are told.
func (s *Server) RemoveResourceTemplates(uriTemplates ...string) {
	s.update(resourcesChanged, func(r *registry) {
		for _, t := range uriTemplates {
			delete(r.templates, t)
		}
	})
}

// ResourceUpdated tells the clients subscribed to uri that it changed: those of the fleet's
// other instances too, when the Server has a Bus.
func (s *Server) ResourceUpdated(uri string) {
	s.changed(change{kind: resourceUpdated, uri: uri})
}

func (s *Server) readResource(ctx context.Context, req *Request) (any, error) {
	params := req.params // read when the request was routed
	uri, err := asString(params[pURI], "uri")
	if err != nil {
		return nil, err
	}
	reg := s.reg.Load()
	var read ResourceHandler
	var vars map[string]string
	if r := reg.resources[uri]; r != nil {
		read = r.read
	} else if h := reg.skills.reader(uri); h != nil { // a skill's supporting file (skills.go)
		read = h
	} else {
		for _, k := range reg.templateKeys {
			t := reg.templates[k]
			if m := t.tmpl.Match(uri); m != nil {
				read, vars = t.read, map[string]string{}
				for name, v := range m {
					vars[name] = v.String()
				}
				break
			}
		}
	}
	if read == nil {
		return nil, ResourceNotFound(req, uri)
	}
	return s.interactive(ctx, req, uri, nil, params[pRequestState], params[pInputResponses], func() (any, error) {
		res, err := read(ctx, &ReadResourceRequest{Request: req, URI: uri, Vars: vars})
		if errors.Is(err, ErrResourceNotFound) {
			return nil, ResourceNotFound(req, uri)
		}
		if err != nil {
			return nil, err
		}
		if res.Contents == nil {
			res.Contents = []*ResourceContents{}
		}
		return res, nil
	})
}

// ResourceNotFound is the error for a resource req asks for that does not exist: -32602
// under 2026-07-28, -32002 before it (MCP 2026-07-28, Server Features › Resources › Error
// Handling).
func ResourceNotFound(req *Request, uri string) *jsonrpc.Error {
	code := int64(jsonrpc.CodeInvalidParams)
	if !req.meta.modern {
		code = -32002
	}
	return &jsonrpc.Error{Code: code, Message: "Resource not found: " + uri, Data: map[string]string{"uri": uri}}
}
