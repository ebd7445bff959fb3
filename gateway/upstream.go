package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/fleet"
	"github.com/relayrt/relay/internal/filewatch"
	"github.com/relayrt/relay/internal/ratelog"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
	"github.com/relayrt/relay/supervise"
)

// upstream is one server of the configuration, kept connected by its actor (run). The
// middleware reads its client; rebuild reads its lists.
type upstream struct {
	g   *Gateway
	cfg Server
	log *zap.Logger
	// badItems logs the items of its lists that do not decode, a few a second at most
	badItems *ratelog.Limiter

	client atomic.Pointer[client.Client] // nil while it is not connected
	stop   context.CancelFunc            // ends its actor (set by Gateway.start)
	// supervised is a local upstream's transport, which upgrades its child (set by connect,
	// used by the actor alone)
	supervised *client.SupervisedTransport
	done       chan struct{} // closed when its actor has returned

	// What the supervised child's observer and the listen stream report, for the actor:
	// counters and bits, and a wake-up (kick, which never blocks its sender).
	starts, restarts atomic.Int64
	changed          atomic.Uint32
	lost             atomic.Bool // a call found the connection closed
	probe            atomic.Bool // a call failed below JSON-RPC: ask the upstream whether it answers
	kick             chan struct{}
	tried            chan struct{} // closed once it has been connected, or failed to be
	triedOnce        sync.Once

	mu        sync.Mutex // guards the fields below
	state     string
	lastErr   string
	known     bool // the lists below are the upstream's (it answered them once)
	tools     []*mcp.Tool
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	caches    [listKinds]listCache // each list's, as the upstream answered it

	levels logLevels // of an upstream of the initialize generation that logs
}

// The lists, as indexes of upstream.caches and routes.caches.
const (
	listTools = iota
	listPrompts
	listResources
	listTemplates
	listKinds
)

// listCache is how long a list may be reused, and whether by its user alone (MCP
// 2026-07-28, Server › Utilities › Caching): over the pages of one upstream's list, or over
// the upstreams' lists the gateway merged, the smallest ttlMs, and private if one was.
type listCache struct {
	read    bool // the list was read (the upstream declared it)
	ttl     time.Duration
	private bool
}

// add merges in a page's or an upstream's ttlMs and cacheScope.
func (lc *listCache) add(ttl time.Duration, private bool) {
	if !lc.read || ttl < lc.ttl {
		lc.ttl = ttl
	}
	lc.read, lc.private = true, lc.private || private
}

// The bits of upstream.changed: which lists to read again.
const (
	changedTools uint32 = 1 << iota
	changedPrompts
	changedResources
	changedAll = changedTools | changedPrompts | changedResources
)

// maxListed bounds how many items of one list the gateway keeps of an upstream.
const maxListed = 10_000

func newUpstream(g *Gateway, s Server) *upstream {
	log := g.log.With(zap.String("upstream", s.Name))
	return &upstream{g: g, cfg: s, log: log, badItems: ratelog.New(log, nil), kick: make(chan struct{}, 1), tried: make(chan struct{}), state: stateStarting}
}

// listsView is what rebuild reads of an upstream.
type listsView struct {
	known, up bool
	tools     []*mcp.Tool
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	caches    [listKinds]listCache
}

func (u *upstream) lists() listsView {
	u.mu.Lock()
	defer u.mu.Unlock()
	return listsView{known: u.known, up: u.state == stateUp, tools: u.tools, prompts: u.prompts,
		resources: u.resources, templates: u.templates, caches: u.caches}
}

func (u *upstream) status() UpstreamStatus {
	u.mu.Lock()
	defer u.mu.Unlock()
	st := UpstreamStatus{Name: u.cfg.Name, State: u.state, Restarts: u.restarts.Load(), LastError: u.lastErr,
		Resources: len(u.resources), Templates: len(u.templates)}
	for _, t := range u.tools {
		if u.cfg.Tools.Keeps(t.Name) {
			st.Tools++
		}
	}
	for _, p := range u.prompts {
		if u.cfg.Prompts.Keeps(p.Name) {
			st.Prompts++
		}
	}
	return st
}

// setState records the upstream's state (and why, for down) and brings the gateway's
// lists to it.
func (u *upstream) setState(state string, why error) {
	u.mu.Lock()
	was := u.state
	u.state = state
	if why != nil {
		u.lastErr = why.Error()
	}
	u.mu.Unlock()
	if was != state {
		switch state {
		case stateUp:
			u.log.Info("upstream is up")
		case stateDown:
			u.log.Warn("upstream is down; its tools, prompts and resources leave the lists until it is back", zap.NamedError("cause", why))
		case stateRestarting:
			u.log.Warn("upstream's child exited and is being restarted; its entries leave the lists until it is back")
		}
	}
	u.g.rebuild()
	u.triedOnce.Do(func() { close(u.tried) }) // after the rebuild: its routes are there
}

// signal wakes the actor; it never blocks (a wake-up already pending is enough).
func (u *upstream) signal(bits uint32) {
	u.changed.Or(bits)
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

// ready returns the client for a call, or an error naming the upstream when it is down.
func (u *upstream) ready() (*client.Client, error) {
	c := u.client.Load()
	u.mu.Lock()
	state, last := u.state, u.lastErr
	u.mu.Unlock()
	if c == nil || state == stateDown {
		why := "it is not connected yet"
		switch {
		case state == stateDown && u.cfg.URL != "":
			why = "it is down (" + last + "); relay gateway is trying to reach it again"
		case state == stateDown:
			why = "it is down (" + last + ") and its supervisor gave up restarting it; see relay's log, fix the server, and restart relay gateway"
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("upstream server %q is unavailable: %s; retry later, or call another server's tools", u.cfg.Name, why),
			Data:    map[string]any{"upstream": u.cfg.Name, "retryable": true}}
	}
	return c, nil
}

// callError is the error a host gets for a call that failed at u: the upstream's own
// JSON-RPC error as it is, or one that names the upstream.
func (u *upstream) callError(ctx context.Context, method string, err error) error {
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &je):
		return je
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, client.ErrInputRequired):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("upstream server %q asked the client for input (elicitation, sampling or roots), which relay gateway does not pass on yet", u.cfg.Name),
			Data:    map[string]any{"upstream": u.cfg.Name, "retryable": false}}
	}
	if errors.Is(err, client.ErrClosed) {
		u.lost.Store(true)
	} else {
		u.probe.Store(true) // a remote server gone away, say: the actor asks it at once
	}
	u.signal(0)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("upstream server %q could not answer %s: %v", u.cfg.Name, method, err),
		Data:    map[string]any{"upstream": u.cfg.Name, "retryable": true}}
}

// run is the upstream's actor: it connects, keeps the lists, follows the upstream's
// changes and its health until ctx ends. A remote upstream that is lost is connected again
// with backoff; a local one is restarted by its supervisor, and stays down once that gives
// up.
func (u *upstream) run(ctx context.Context) {
	defer u.badItems.Flush()
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		c, err := u.connect(ctx)
		if err == nil {
			delay = 100 * time.Millisecond
			u.client.Store(c)
			err = u.serve(ctx, c)
			u.client.Store(nil)
			c.Close()
		}
		if ctx.Err() != nil {
			return
		}
		u.setState(stateDown, err)
		if u.cfg.URL == "" {
			// A local server's supervisor restarts it as "relay"."restart" says; once it has
			// given up (or the command cannot run), the server stays down.
			u.log.Error("the local server is down for good: its supervisor gave up restarting it, or it cannot start", zap.Error(err))
			<-ctx.Done()
			return
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		delay = min(delay*2, 30*time.Second)
	}
}

// connect opens the upstream: a supervised child for a command, Streamable HTTP for a URL.
func (u *upstream) connect(ctx context.Context) (*client.Client, error) {
	var t client.Transport
	if u.cfg.URL != "" {
		h := http.Header{}
		for k, v := range u.cfg.Headers {
			h.Set(k, os.ExpandEnv(v))
		}
		ht := &client.HTTPTransport{URL: u.cfg.URL, Header: h, Client: u.g.opts.HTTPClient}
		if o := u.cfg.OAuth; o != nil {
			// MCP 2025-11-25, Basic › Authorization, with the client credentials grant: a
			// gateway has no user at a browser.
			ht.OAuth = &client.OAuth{ClientID: o.ClientID, ClientSecret: os.ExpandEnv(o.ClientSecret), Issuer: o.Issuer,
				Grant: client.ClientCredentials(), Client: u.g.opts.HTTPClient}
		}
		t = ht
	} else {
		spec := u.cfg.Restart.Spec
		spec.Command = supervise.Command{Path: u.cfg.Command, Args: u.cfg.Args, Dir: u.cfg.Dir, Name: u.cfg.Name}
		if len(u.cfg.Env) > 0 || u.g.opts.Redis != "" {
			env := os.Environ()
			if u.g.opts.Redis != "" { // checked by New; the server's own "env" may set another
				env, _ = fleet.ChildEnv(env, u.g.opts.Redis, "gateway:"+u.cfg.Name)
			}
			for _, k := range slices.Sorted(maps.Keys(u.cfg.Env)) {
				env = append(env, k+"="+u.cfg.Env[k])
			}
			spec.Command.Env = env
		}
		spec.Child.Logger = u.log
		if u.g.opts.ChildStderr != nil {
			spec.Child.Stderr = u.g.opts.ChildStderr
		}
		opts := u.cfg.Restart.Proxy
		opts.Logger = u.log
		opts.Observer = &observer{u: u, spans: u.g.opts.Telemetry.Children(u.cfg.Name)}
		st := &client.SupervisedTransport{Spec: spec, Options: &opts}
		u.supervised = st
		t = st
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	c, err := client.Connect(cctx, t, append(askHost(), client.WithClientInfo(u.g.opts.Info))...)
	if err != nil {
		return nil, fmt.Errorf("cannot connect: %w", err)
	}
	return c, nil
}

// serve follows a connected upstream until ctx ends (nil) or the upstream is lost (why).
func (u *upstream) serve(ctx context.Context, c *client.Client) error {
	startsSeen := u.starts.Load()
	u.lost.Store(false)
	u.changed.Store(0) // the first refresh, below, reads every list
	listed := u.refresh(ctx, c, changedAll)
	if listed != nil {
		if ctx.Err() != nil || errors.Is(listed, client.ErrClosed) {
			return listed
		}
		// It answers, but not its lists: down, and listed again at the next health check.
		u.setState(stateDown, fmt.Errorf("cannot list: %w", listed))
	}

	listened := make(chan error, 1)
	acked := make(chan struct{}, 1) // the change stream is in force
	var stopListen context.CancelFunc
	listening := false
	var subscribed []string // the resources the change stream tells of
	startListen := func() {
		var lctx context.Context
		lctx, stopListen = context.WithCancel(ctx)
		subscribed = u.subscriptions(c)
		listening = u.listen(lctx, c, subscribed, acked, listened)
	}
	// resubscribe opens the stream again when the resources to hear updates of have changed
	// (its acknowledgement reads the lists once more).
	resubscribe := func() {
		if listening && !slices.Equal(subscribed, u.subscriptions(c)) {
			stopListen()
			<-listened
			startListen()
		}
	}
	startListen()
	defer func() {
		stopListen()
		if listening {
			<-listened
		}
	}()
	if listed == nil && listening {
		// A change between the first reading and the stream's acknowledgement was told to
		// no one: the lists are read again once it is in force, before the hosts see them
		// (so that none of these calls overlaps theirs: over stdio, a call's log message
		// can only be told apart when it is the only one).
		timeout := time.NewTimer(30 * time.Second)
		select {
		case <-ctx.Done():
			timeout.Stop()
			return nil
		case <-acked:
			if listed = u.refresh(ctx, c, changedAll); listed == nil {
				resubscribe() // its resources may have changed meanwhile
			}
		case err := <-listened:
			listened <- err // for the loop, below
		case <-timeout.C:
		}
		timeout.Stop()
		if listed != nil {
			if ctx.Err() != nil || errors.Is(listed, client.ErrClosed) {
				return listed
			}
			u.setState(stateDown, fmt.Errorf("cannot list: %w", listed))
		}
	}
	if listed == nil {
		u.setState(stateUp, nil)
	}
	health := time.NewTicker(u.g.opts.HealthEvery)
	defer health.Stop()
	// "restart": {"watch": PATH}: a change of the file upgrades the child without downtime.
	var watchTick <-chan time.Time
	var watched *filewatch.File
	if u.cfg.Restart.Watch != "" && u.supervised != nil {
		w := time.NewTicker(watchEvery)
		defer w.Stop()
		watchTick, watched = w.C, filewatch.New(u.cfg.Restart.Watch)
	}
	var relisten <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-listened:
			listening = false
			if errors.Is(err, client.ErrClosed) {
				return err
			}
			if err != nil {
				u.log.Info("the upstream's change stream ended; it is opened again", zap.Error(err))
				u.probe.Store(true)
			}
			relisten = time.After(time.Second)
		case <-relisten:
			relisten = nil
			stopListen()
			startListen()
		case <-u.kick:
		case <-acked: // opened again: what changed meanwhile was told to no one
			u.changed.Or(changedAll)
		case <-health.C:
			u.probe.Store(true)
		case <-watchTick:
			if watched.Look() {
				u.log.Info("the watched file changed: upgrading the child", zap.String("watch", u.cfg.Restart.Watch))
				if err := u.supervised.Upgrade(ctx, "relay gateway: "+u.cfg.Restart.Watch+" changed"); err != nil && ctx.Err() == nil {
					u.log.Error("the upgrade failed; the old child still serves", zap.Error(err))
				}
			}
		}
		if u.probe.Swap(false) {
			switch err := u.check(ctx, c); {
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, client.ErrClosed):
				return err
			case err != nil:
				u.setState(stateDown, err)
				continue
			}
		}
		if u.lost.Swap(false) { // a call found the connection closed
			return client.ErrClosed
		}
		// A local child being restarted leaves the lists until the new one has started.
		starts, restarts := u.starts.Load(), u.restarts.Load()
		if restarts >= starts && starts > 0 {
			if u.status().State != stateRestarting {
				u.setState(stateRestarting, nil)
			}
			continue
		}
		bits := u.changed.Swap(0)
		if starts != startsSeen {
			startsSeen, bits = starts, changedAll
		}
		if st := u.status().State; bits == 0 && st == stateUp {
			continue
		} else if st != stateUp {
			bits = changedAll
		}
		if err := u.refresh(ctx, c, bits); err != nil {
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, client.ErrClosed):
				return err
			}
			u.setState(stateDown, fmt.Errorf("cannot list: %w", err))
			continue
		}
		u.setState(stateUp, nil)
		if bits&changedResources != 0 {
			resubscribe()
		}
	}
}

// subscribes reports whether the upstream declared resource subscriptions.
func subscribes(c *client.Client) bool {
	return string(jsonrpc.Field(jsonrpc.Field(c.Capabilities(), "resources"), "subscribe")) == "true"
}

// watchEvery is how often a watched file ("restart": {"watch"}) is looked at.
const watchEvery = time.Second

// check asks the upstream whether it answers (ping, or server/discover under
// 2026-07-28); an answer, even an error, is a server that answers. One that answers after
// it was down is listed again.
func (u *upstream) check(ctx context.Context, c *client.Client) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := c.Ping(pctx)
	cancel()
	var je *jsonrpc.Error
	switch {
	case errors.Is(err, client.ErrClosed):
		return err
	case err != nil && !errors.As(err, &je):
		return fmt.Errorf("does not answer: %w", err)
	}
	if u.status().State == stateDown {
		u.signal(changedAll) // back: list it again
	}
	return nil
}

// subscriptions returns the URIs of the upstream's resources when it declared resource
// subscriptions: the ones its change stream is asked to tell of.
func (u *upstream) subscriptions(c *client.Client) []string {
	if !subscribes(c) {
		return nil
	}
	var uris []string
	for _, r := range u.lists().resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris) // compared with the last ones: a server may list them in any order
	return uris
}

// listen opens the upstream's change stream: its list changes, and the updates of its
// resources, which become the gateway's (the gateway's server tells each host only what it
// subscribed to). It reports false when the upstream offers nothing to listen to. acked
// hears when the stream is in force.
func (u *upstream) listen(ctx context.Context, c *client.Client, uris []string, acked chan<- struct{}, done chan<- error) bool {
	caps := c.Capabilities()
	filter := mcp.SubscriptionFilter{
		ToolsListChanged:      string(jsonrpc.Field(jsonrpc.Field(caps, "tools"), "listChanged")) == "true",
		PromptsListChanged:    string(jsonrpc.Field(jsonrpc.Field(caps, "prompts"), "listChanged")) == "true",
		ResourcesListChanged:  string(jsonrpc.Field(jsonrpc.Field(caps, "resources"), "listChanged")) == "true",
		ResourceSubscriptions: uris,
	}
	if !filter.ToolsListChanged && !filter.PromptsListChanged && !filter.ResourcesListChanged && len(filter.ResourceSubscriptions) == 0 {
		return false
	}
	go func() { // owned by serve, which cancels ctx and waits for done
		done <- c.Listen(ctx, filter, func(method string, params json.RawMessage) {
			switch method {
			case "notifications/subscriptions/acknowledged":
				select {
				case acked <- struct{}{}:
				default:
				}
			case "notifications/tools/list_changed":
				u.signal(changedTools)
			case "notifications/prompts/list_changed":
				u.signal(changedPrompts)
			case "notifications/resources/list_changed":
				u.signal(changedResources)
			case "notifications/resources/updated":
				uri, _ := stringField(params, "uri")
				if u.g.routes.Load().resourceOwner(uri) == u {
					u.g.srv.ResourceUpdated(uri)
				}
			}
		})
	}()
	return true
}

// refresh reads the lists bits names again (each only if the upstream declared it).
func (u *upstream) refresh(ctx context.Context, c *client.Client, bits uint32) error {
	caps := c.Capabilities()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var tools []*mcp.Tool
	var prompts []*mcp.Prompt
	var resources []*mcp.Resource
	var templates []*mcp.ResourceTemplate
	var caches [listKinds]listCache
	// One bad item leaves the list, not the upstream.
	skip := client.WithUndecodable(func(item json.RawMessage, err error) {
		u.badItems.Warn("the upstream lists an item that does not decode; it is left out", item, zap.Error(err))
	})
	cacheOf := func(list int) []client.CallOption {
		return []client.CallOption{client.WithCache(caches[list].add), skip}
	}
	var err error
	if bits&changedTools != 0 && jsonrpc.Field(caps, "tools") != nil {
		if tools, err = collect(c.ListTools(rctx, cacheOf(listTools)...)); err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
	}
	if bits&changedPrompts != 0 && jsonrpc.Field(caps, "prompts") != nil {
		if prompts, err = collect(c.ListPrompts(rctx, cacheOf(listPrompts)...)); err != nil {
			return fmt.Errorf("prompts/list: %w", err)
		}
	}
	if bits&changedResources != 0 && jsonrpc.Field(caps, "resources") != nil {
		if resources, err = collect(c.ListResources(rctx, cacheOf(listResources)...)); err != nil {
			return fmt.Errorf("resources/list: %w", err)
		}
		if templates, err = collect(c.ListResourceTemplates(rctx, cacheOf(listTemplates)...)); err != nil {
			return fmt.Errorf("resources/templates/list: %w", err)
		}
	}
	u.mu.Lock()
	if bits&changedTools != 0 {
		u.tools, u.caches[listTools] = tools, caches[listTools]
	}
	if bits&changedPrompts != 0 {
		u.prompts, u.caches[listPrompts] = prompts, caches[listPrompts]
	}
	if bits&changedResources != 0 {
		u.resources, u.templates = resources, templates
		u.caches[listResources], u.caches[listTemplates] = caches[listResources], caches[listTemplates]
	}
	u.known = true
	u.mu.Unlock()
	return nil
}

// collect reads a list to its end, or to maxListed items.
func collect[T any](seq func(yield func(T, error) bool)) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		if out = append(out, v); len(out) == maxListed {
			break
		}
	}
	return out, nil
}

// observer is what the supervised child's proxy tells the upstream: a child started, or is
// being restarted or upgraded. It runs on the proxy's actor, so it only counts and wakes;
// spans, when telemetry is on, makes the child's restart and upgrade spans. One per proxy.
type observer struct {
	u     *upstream
	spans supervise.Observer
}

func (o *observer) Request(method string, params json.RawMessage) (json.RawMessage, supervise.Call) {
	if o.spans != nil {
		return o.spans.Request(method, params) // a span per replay, under the call's
	}
	return params, nil
}

func (o *observer) Restarting(exit string, restarts int) {
	o.u.restarts.Add(1)
	o.u.signal(0)
	if o.spans != nil {
		o.spans.Restarting(exit, restarts)
	}
}

func (o *observer) Started() {
	o.u.starts.Add(1)
	o.u.signal(changedAll)
	if o.spans != nil {
		o.spans.Started()
	}
}

// Stopped: the supervisor gave up (err), or the proxy ended. The connection closes with it;
// the actor finds out at once.
func (o *observer) Stopped(err error) {
	if err != nil {
		o.u.lost.Store(true)
	}
	o.u.signal(0)
	if o.spans != nil {
		o.spans.Stopped(err)
	}
}

// Upgrade: a new child takes the old one's place (supervise's zero-downtime upgrade); once
// it serves, its lists may differ, and are read again.
func (o *observer) Upgrade(reason string) func(error) {
	end := func(error) {}
	if o.spans != nil {
		end = o.spans.Upgrade(reason)
	}
	return func(err error) {
		end(err)
		if err == nil {
			o.u.signal(changedAll)
		}
	}
}
