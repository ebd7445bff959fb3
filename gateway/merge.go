package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/yosida95/uritemplate/v3"
	"go.uber.org/zap"

	"github.com/relayrt/relay/mcp"
)

// route is where an exposed tool or prompt name goes: an upstream, and its own name there.
type route struct {
	up   *upstream
	name string
}

// routes is an immutable snapshot of the gateway's routing: every exposed name and URI of
// the upstreams whose lists are known, up or not (a call to one that is restarting waits for
// it; to one that is down, it gets an error naming it).
type routes struct {
	tools, prompts map[string]route
	resources      map[string]*upstream // URI → the first upstream in config order to list it
	templates      map[string]*upstream // URI template → the first to list it
	matchers       []templateRoute      // the templates, in config order, to match URIs with
	caches         [listKinds]listCache // of the merged lists: the least reusable upstream's
}

// cache is the gateway's server's ServerOptions.Cache: a merged list may be reused for as
// long as the least reusable of the lists in it, by the user alone if one says so. What
// is not a list (discover, whose capabilities follow the servers; a resource read from a
// server that did not say) is not reused.
func (g *Gateway) cache(method string) (time.Duration, bool) {
	var c listCache
	switch caches := &g.routes.Load().caches; method {
	case "tools/list":
		c = caches[listTools]
	case "prompts/list":
		c = caches[listPrompts]
	case "resources/list":
		c = caches[listResources]
	case "resources/templates/list":
		c = caches[listTemplates]
	}
	return c.ttl, c.private
}

type templateRoute struct {
	tmpl *uritemplate.Template
	up   *upstream
}

// resourceOwner returns the upstream that serves uri: the first that listed it, or else
// the first whose template matches it (nil: none).
func (rt *routes) resourceOwner(uri string) *upstream {
	if u := rt.resources[uri]; u != nil {
		return u
	}
	for _, t := range rt.matchers {
		if t.tmpl.Match(uri) != nil {
			return t.up
		}
	}
	return nil
}

// registered is what the gateway's mcp.Server lists now: each entry's definition, encoded.
type registered struct {
	tools, prompts, resources, templates map[string]string
}

// rebuild recomputes the routes from every upstream's lists, in config order, and brings
// the mcp.Server's registry to the lists of the upstreams that are up: each entry added,
// changed or removed is a list change, which the server tells the clients that listen.
func (g *Gateway) rebuild() {
	g.mu.Lock()
	defer g.mu.Unlock()
	rt := &routes{tools: map[string]route{}, prompts: map[string]route{},
		resources: map[string]*upstream{}, templates: map[string]*upstream{}}
	want := registered{tools: map[string]string{}, prompts: map[string]string{},
		resources: map[string]string{}, templates: map[string]string{}}
	tools := map[string]*mcp.Tool{}
	prompts := map[string]*mcp.Prompt{}
	resources := map[string]*mcp.Resource{}
	templates := map[string]*mcp.ResourceTemplate{}
	for _, u := range g.upstreams() {
		l := u.lists()
		if !l.known {
			continue
		}
		for i, c := range l.caches {
			if l.up && c.read {
				rt.caches[i].add(c.ttl, c.private)
			}
		}
		for _, t := range l.tools {
			if !u.cfg.Tools.Keeps(t.Name) {
				continue
			}
			name := g.expose(rt.tools, u, "tool", t.Name)
			rt.tools[name] = route{up: u, name: t.Name}
			if l.up {
				def := *t
				def.Name = name
				tools[name] = &def
				want.tools[name] = encode(&def)
			}
		}
		for _, p := range l.prompts {
			if !u.cfg.Prompts.Keeps(p.Name) {
				continue
			}
			name := g.expose(rt.prompts, u, "prompt", p.Name)
			rt.prompts[name] = route{up: u, name: p.Name}
			if l.up {
				def := *p
				def.Name = name
				prompts[name] = &def
				want.prompts[name] = encode(&def)
			}
		}
		for _, r := range l.resources {
			if first := rt.resources[r.URI]; first != nil && first != u {
				g.once("uri "+r.URI, func() {
					g.log.Warn("two upstreams list the same resource URI; the first in the configuration serves it",
						zap.String("uri", r.URI), zap.String("served_by", first.cfg.Name), zap.String("ignored", u.cfg.Name))
				})
				continue
			}
			rt.resources[r.URI] = u
			if l.up {
				resources[r.URI] = r
				want.resources[r.URI] = encode(r)
			}
		}
		for _, t := range l.templates {
			if first := rt.templates[t.URITemplate]; first != nil && first != u {
				g.once("template "+t.URITemplate, func() {
					g.log.Warn("two upstreams list the same resource template; the first in the configuration serves it",
						zap.String("uri_template", t.URITemplate), zap.String("served_by", first.cfg.Name), zap.String("ignored", u.cfg.Name))
				})
				continue
			}
			tmpl, err := uritemplate.New(t.URITemplate)
			if err != nil {
				g.once("bad template "+u.cfg.Name+" "+t.URITemplate, func() {
					g.log.Warn("an upstream lists a resource template that is not RFC 6570; it is left out",
						zap.String("upstream", u.cfg.Name), zap.String("uri_template", t.URITemplate), zap.Error(err))
				})
				continue
			}
			rt.templates[t.URITemplate] = u
			rt.matchers = append(rt.matchers, templateRoute{tmpl: tmpl, up: u})
			if l.up {
				templates[t.URITemplate] = t
				want.templates[t.URITemplate] = encode(t)
			}
		}
	}
	g.routes.Store(rt)
	g.srv.Batch(func() { g.sync(want, tools, prompts, resources, templates) })
	g.srv.ResourceUpdated(StatusURI)
	if g.opts.StateChanged != nil {
		g.opts.StateChanged()
	}
}

// expose returns the exposed name of an upstream's tool or prompt: ExposedName, or, when
// that name is taken by an upstream earlier in the configuration, one with a hash suffix.
// A name that is not the plain PREFIX+separator+NAME is logged once.
func (g *Gateway) expose(taken map[string]route, u *upstream, kind, own string) string {
	name, changed := ExposedName(u.cfg.Prefix, g.opts.Separator, own)
	if prev, clash := taken[name]; clash && prev.up != u || clash && prev.name != own {
		valid := name
		name = distinctName(valid, u.cfg.Name+"\x00"+own)
		g.once(kind+" clash "+u.cfg.Name+" "+own, func() {
			g.log.Warn("two "+kind+"s would have the same exposed name; the later one in the configuration gets a hash suffix",
				zap.String("upstream", u.cfg.Name), zap.String(kind, own), zap.String("exposed_as", name), zap.String("taken_by", prev.up.cfg.Name))
		})
		return name
	}
	if changed {
		g.once(kind+" name "+u.cfg.Name+" "+own, func() {
			g.log.Warn("a "+kind+" is exposed under another name than PREFIX"+g.opts.Separator+"NAME: hosts require ^[a-zA-Z0-9_-]{1,64}$",
				zap.String("upstream", u.cfg.Name), zap.String(kind, own), zap.String("exposed_as", name))
		})
	}
	return name
}

// once runs fn the first time key is seen (under g.mu).
func (g *Gateway) once(key string, fn func()) {
	if !g.logged[key] {
		g.logged[key] = true
		fn()
	}
}

// sync brings the mcp.Server's registry to want: what is new or changed is added (under
// g.mu), what is gone removed.
func (g *Gateway) sync(want registered, tools map[string]*mcp.Tool, prompts map[string]*mcp.Prompt,
	resources map[string]*mcp.Resource, templates map[string]*mcp.ResourceTemplate) {
	have := &g.registered
	g.syncList("tool", have.tools, want.tools, g.srv.RemoveTools, func(name string) error { return g.addTool(tools[name]) })
	g.syncList("prompt", have.prompts, want.prompts, g.srv.RemovePrompts, func(name string) error {
		return catch(func() { g.srv.AddPrompt(prompts[name], unreachablePrompt) })
	})
	g.syncList("resource", have.resources, want.resources, g.srv.RemoveResources, func(uri string) error {
		return catch(func() { g.srv.AddResource(resources[uri], unreachableResource) })
	})
	g.syncList("resource template", have.templates, want.templates, g.srv.RemoveResourceTemplates, func(key string) error {
		return catch(func() { g.srv.AddResourceTemplate(templates[key], unreachableResource) })
	})
}

// syncList brings one list of the registry, have (each entry's key and its definition,
// encoded), to want: what is gone is removed in one registry update, what is new or changed
// added. An entry the server cannot serve (a schema that does not resolve, say) is left
// out, with a warning once for each definition.
func (g *Gateway) syncList(kind string, have, want map[string]string, remove func(...string), add func(key string) error) {
	if gone := dropGone(have, want); len(gone) > 0 {
		remove(gone...)
	}
	for key, enc := range want {
		if have[key] == enc {
			continue
		}
		if err := add(key); err != nil {
			g.once("bad "+kind+" "+key+enc, func() {
				g.log.Warn("an upstream's "+kind+" cannot be served; it is left out", zap.String("name", key), zap.Error(err))
			})
			if _, was := have[key]; was {
				remove(key)
				delete(have, key)
			}
			continue
		}
		have[key] = enc
	}
}

// dropGone deletes from have the keys that want lacks, and returns them.
func dropGone(have, want map[string]string) []string {
	var gone []string
	for k := range have {
		if _, ok := want[k]; !ok {
			gone = append(gone, k)
			delete(have, k)
		}
	}
	return gone
}

// addTool registers a tool of an upstream under its exposed name. The mcp.Server lists it;
// its calls never reach the handler, because the gateway's middleware passes every
// tools/call on to the upstream raw, before the server would look the tool up.
func (g *Gateway) addTool(t *mcp.Tool) error {
	return catch(func() {
		mcp.AddTool(g.srv, t, func(context.Context, *mcp.CallToolRequest, json.RawMessage) (*mcp.CallToolResult, error) {
			return nil, errNotRouted
		})
	})
}

// errNotRouted would answer a call that reached the registry instead of the middleware: a
// bug of the gateway's, said as such.
var errNotRouted = fmt.Errorf("relay gateway: internal error: a call was not routed to its upstream; please report it")

func unreachablePrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return nil, errNotRouted
}

func unreachableResource(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, errNotRouted
}

// catch runs fn and returns the panic it raised, as an error: the mcp.Server panics on a
// definition it cannot serve (a schema that does not resolve), which an upstream's list
// may hold.
func catch(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	fn()
	return nil
}

func encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
