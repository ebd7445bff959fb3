package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/fleet"
	"github.com/relayrt/relay/internal/statekey"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
	"github.com/relayrt/relay/telemetry"
)

// Options tunes a Gateway. The zero value is ready to use.
type Options struct {
	// Separator joins a prefix and a server's own name (default "__").
	Separator string
	// Info is how the gateway describes itself (default relay-gateway).
	Info mcp.Implementation
	// Logger receives the gateway's log: upstreams up and down, renamed tools, URIs two
	// upstreams list (default: nothing is logged).
	Logger *zap.Logger
	// ChildStderr receives the stderr of the local upstreams, line by line, each line
	// prefixed with the server's name (default: the Logger, at info level).
	ChildStderr io.Writer
	// HealthEvery is how often an upstream that has not failed a call is asked whether it
	// still answers (ping, or server/discover under 2026-07-28), so that one that went away
	// drops out of the lists (default 10 s).
	HealthEvery time.Duration
	// HTTPClient makes the requests to remote upstreams (default: a client of each
	// upstream connection's own, which keeps up to client.DefaultMaxIdleConnsPerHost, 256,
	// idle connections to the upstream; see client.HTTPTransport.Client).
	HTTPClient *http.Client
	// Telemetry, when not nil, gives each request passed on to an upstream a client span, a
	// child of the request's own span, whose trace context the upstream gets in
	// _meta.traceparent, records mcp.client.operation.duration, and makes a span for each
	// restart and upgrade of a local upstream's child (see package telemetry).
	Telemetry *telemetry.Telemetry
	// StateKey signs the requestState of the input_required results the gateway makes for
	// the questions of upstreams of the initialize generation (mcp.ServerOptions.StateKey):
	// gateways that share it take each other's retries. With Redis, the task ids the gateway
	// hands out are signed with a key drawn from it too. At least 32 random bytes; nil, each
	// gateway draws its own. An upstream of 2026-07-28 signs its own requestState, which the
	// gateway passes on: its children need the key too (relay gateway hands them
	// $RELAY_STATE_KEY).
	StateKey []byte
	// Redis is the URL of the Redis that the gateways of a fleet share (relay gateway
	// --redis). Each local server gets it in $RELAY_REDIS_URL, under a key prefix of its own
	// (fleet.ScopedURL, after the server's name), where Relay's servers keep their tasks
	// and tell their changes to the same server's children on the other instances; and,
	// with StateKey, every gateway of the fleet takes the task ids the others hand out and
	// follows them to its own connection to that server. A local server that keeps its
	// tasks to itself answers such a poll that it has no such task (the tasks extension asks
	// for task ids no one can guess). "": none.
	Redis string
	// StateChanged, when set, is called after an upstream came up, went down or changed its
	// lists (from the gateway's goroutines: it must return quickly). Status says the new
	// state; a --listen gateway sets /readyz from Ready.
	StateChanged func()
}

// Gateway is one MCP server made of several: Server serves it on any transport of Relay's.
type Gateway struct {
	srv  *mcp.Server
	opts Options
	log  *zap.Logger
	ups  atomic.Pointer[[]*upstream] // in config order; Reload replaces it

	taskKey [32]byte // binds the task ids handed out to their host (taskMAC)

	reloading sync.Mutex // one Reload at a time
	life      context.Context

	routes atomic.Pointer[routes] // what each exposed name and URI routes to, read by every call

	mu         sync.Mutex // rebuild runs one at a time
	registered registered // what the mcp.Server lists now
	logged     map[string]bool

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// New starts a gateway over the servers of cfg: every upstream is connected (local ones
// started as supervised children) by a goroutine of its own, which keeps it connected until
// Close. New does not wait for them: an upstream's tools are listed once it answers, with
// a list_changed. ctx bounds nothing but New itself.
func New(ctx context.Context, cfg *Config, opts *Options) (*Gateway, error) {
	if cfg == nil || len(cfg.Servers) == 0 {
		return nil, errors.New("gateway: the configuration names no server")
	}
	g := &Gateway{logged: map[string]bool{}}
	if opts != nil && opts.Redis != "" && len(opts.StateKey) >= statekey.MinLen {
		copy(g.taskKey[:], statekey.Derive(opts.StateKey, "relay gateway: task ids"))
	} else {
		rand.Read(g.taskKey[:])
	}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.Separator == "" {
		g.opts.Separator = DefaultSeparator
	}
	if g.opts.Redis != "" {
		if _, err := fleet.ScopedURL(g.opts.Redis, ""); err != nil {
			return nil, err
		}
	}
	if ValidName(g.opts.Separator) != g.opts.Separator {
		return nil, fmt.Errorf("gateway: the separator %q may hold only letters, digits, '_' and '-'", g.opts.Separator)
	}
	if g.opts.Info.Name == "" {
		g.opts.Info = mcp.Implementation{Name: "relay-gateway", Version: "0.1.0"}
	}
	if g.opts.HealthEvery <= 0 {
		g.opts.HealthEvery = 10 * time.Second
	}
	g.log = g.opts.Logger
	if g.log == nil {
		g.log = zap.NewNop()
	}
	g.srv = mcp.NewServer(g.opts.Info, &mcp.ServerOptions{
		Instructions: "relay gateway: the tools and prompts of several MCP servers, each named PREFIX" + g.opts.Separator + "NAME.",
		Middleware:   []mcp.Middleware{g.middleware},
		TaskHandler:  g.task,
		TaskListen:   g.taskListen,
		// Servers come and go: a host that asked before the first one was up hears of it.
		DeclareLists: true,
		Cache:        g.cache,
		StateKey:     g.opts.StateKey,
	})
	g.srv.SetCompletionHandler(g.complete)
	g.srv.AddResource(&mcp.Resource{URI: StatusURI, Name: "relay-gateway-status", Title: "relay gateway: its servers",
		Description: "Each server of the gateway: its state (starting, up, restarting, down), restarts, last error and how many tools, prompts and resources it offers.",
		MimeType:    "application/json"}, g.readStatus)
	g.registered = registered{tools: map[string]string{}, prompts: map[string]string{},
		resources: map[string]string{}, templates: map[string]string{}}
	g.routes.Store(&routes{})
	ups := make([]*upstream, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		ups = append(ups, newUpstream(g, s))
	}
	g.ups.Store(&ups)
	g.life, g.stop = context.WithCancel(context.WithoutCancel(ctx))
	for _, u := range ups {
		g.start(u)
	}
	return g, nil
}

// start runs u's actor until u.stop or Close.
func (g *Gateway) start(u *upstream) {
	ctx, stop := context.WithCancel(g.life)
	u.stop, u.done = stop, make(chan struct{})
	g.wg.Add(1)
	go func() { // the upstream's actor; Close (or Reload) ends it and waits
		defer g.wg.Done()
		defer close(u.done)
		u.run(ctx)
	}()
}

// upstreams returns the upstreams, in config order.
func (g *Gateway) upstreams() []*upstream { return *g.ups.Load() }

// Reload brings the gateway to cfg without a break for its hosts: a server that cfg adds
// is started, one it no longer names is stopped (a local child in the stdio order, after its
// calls in flight have had their drain time), one whose entry changed is stopped and
// started again, and the others go on untouched, their children and calls with them. The
// hosts hear list_changed for the lists that changed, and stay connected. The separator
// and the other Options stay as New set them.
func (g *Gateway) Reload(cfg *Config) error {
	if cfg == nil || len(cfg.Servers) == 0 {
		return errors.New("gateway: the new configuration names no server; the gateway keeps the old one")
	}
	g.reloading.Lock()
	defer g.reloading.Unlock()
	if g.life.Err() != nil {
		return errors.New("gateway: closed")
	}
	old := map[string]*upstream{}
	for _, u := range g.upstreams() {
		old[u.cfg.Name] = u
	}
	var next, started []*upstream
	for _, s := range cfg.Servers {
		if u := old[s.Name]; u != nil && reflect.DeepEqual(u.cfg, s) {
			next = append(next, u)
			delete(old, s.Name)
			continue
		}
		u := newUpstream(g, s)
		next, started = append(next, u), append(started, u)
	}
	g.ups.Store(&next)
	for name, u := range old { // removed or changed: their entries leave with the rebuild
		u.log.Info("stopping the server: the configuration no longer names it as it was", zap.String("server", name))
		u.stop()
		<-u.done
	}
	g.rebuild()
	for _, u := range started {
		g.start(u)
	}
	g.log.Info("configuration reloaded", zap.Int("servers", len(next)), zap.Int("started", len(started)), zap.Int("stopped", len(old)))
	return nil
}

// Server returns the merged MCP server, for stdio.ServeStdio(ctx, g.Server().Runtime()) or
// httpx.NewMCPHandler.
func (g *Gateway) Server() *mcp.Server { return g.srv }

// Close disconnects every upstream (local children are stopped in the stdio order, after
// their calls in flight have had their drain time) and waits for the gateway's goroutines.
func (g *Gateway) Close() error {
	g.reloading.Lock() // a Reload under way ends first; one after this finds the gateway closed
	g.stop()
	g.reloading.Unlock()
	g.wg.Wait()
	return nil
}

// UpstreamStatus is what Status says of one upstream.
type UpstreamStatus struct {
	Name string `json:"name"`
	// State is "starting" (not connected yet), "up", "restarting" (a local child is being
	// restarted) or "down" (it cannot be reached; it is tried again with backoff).
	State     string `json:"state"`
	Restarts  int64  `json:"restarts"`
	LastError string `json:"lastError,omitempty"`
	// Tools and Prompts count what it offers through the gateway (what allow and deny
	// keep); Resources and Templates, what it lists (a URI an upstream earlier in the
	// configuration also lists is served by that one).
	Tools     int `json:"tools"`
	Prompts   int `json:"prompts"`
	Resources int `json:"resources"`
	Templates int `json:"resourceTemplates"`
}

// StatusURI is the gateway's own resource: Status, as JSON. A host that subscribes to it
// hears of every change of an upstream's state.
const StatusURI = "relay-gateway://status"

func (g *Gateway) readStatus(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	b, err := json.MarshalIndent(map[string]any{"servers": g.Status()}, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: StatusURI, MimeType: "application/json", Text: string(b)}}}, nil
}

// Status reports each upstream's state, in config order.
func (g *Gateway) Status() []UpstreamStatus {
	ups := g.upstreams()
	out := make([]UpstreamStatus, 0, len(ups))
	for _, u := range ups {
		out = append(out, u.status())
	}
	return out
}

// Started waits until every upstream has been connected, or has failed to be, once: a
// host that lists the tools right after its handshake (and may not heed list_changed)
// then sees every upstream that could start. It returns ctx's error if ctx ends first.
func (g *Gateway) Started(ctx context.Context) error {
	for _, u := range g.upstreams() {
		select {
		case <-u.tried:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Ready reports whether every upstream has been reached once and at least one is up.
func (g *Gateway) Ready() bool {
	anyUp := false
	for _, u := range g.upstreams() {
		switch u.status().State {
		case stateStarting:
			return false
		case stateUp:
			anyUp = true
		}
	}
	return anyUp
}

// The states of an upstream.
const (
	stateStarting   = "starting"
	stateUp         = "up"
	stateRestarting = "restarting"
	stateDown       = "down"
)

// middleware routes the methods that name a tool, a prompt or a resource to the upstream
// that owns it; the lists, served from the mirrored registry, go on to the mcp.Server.
func (g *Gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, req *mcp.Request) (any, error) {
		rt := g.routes.Load()
		params := req.Params()
		switch req.Method() {
		case "tools/call":
			name, _ := stringField(params, "name")
			r, ok := rt.tools[name]
			if !ok {
				// MCP 2026-07-28, Server Features › Tools › Error Handling: an unknown tool is -32602.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Unknown tool %q; tools/list names the tools", name)}
			}
			return g.forward(ctx, req, r.up, jsonrpc.SetMember(params, "name", quote(r.name)))
		case "prompts/get":
			name, _ := stringField(params, "name")
			r, ok := rt.prompts[name]
			if !ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Unknown prompt %q; prompts/list names the prompts", name)}
			}
			return g.forward(ctx, req, r.up, jsonrpc.SetMember(params, "name", quote(r.name)))
		case "resources/read":
			uri, _ := stringField(params, "uri")
			if uri == StatusURI {
				return next(ctx, req) // the gateway's own
			}
			u := rt.resourceOwner(uri)
			if u == nil {
				return nil, mcp.ResourceNotFound(req, uri)
			}
			return g.forward(ctx, req, u, params)
		}
		return next(ctx, req)
	}
}

// forward passes a request on to u, raw, with its progress and log messages carried back,
// and returns the upstream's result, or an error that names the upstream.
func (g *Gateway) forward(ctx context.Context, req *mcp.Request, u *upstream, params json.RawMessage) (any, error) {
	c, err := u.ready()
	if err != nil {
		return nil, err
	}
	var opts []client.CallOption
	if req.ProgressToken() != nil {
		// MCP 2026-07-28, Basic › Patterns › Progress: the upstream's progress for this call
		// becomes the host's, under the host's token.
		opts = append(opts, client.WithProgress(func(p client.Progress) { req.Progress(p.Progress, p.Total, p.Message) }))
	}
	switch level := req.LogLevel(); {
	case c.Modern():
		// MCP 2026-07-28, Utilities › Logging: a 2026-07-28 upstream sends the messages the
		// host asked for, and no others.
		if level != "" {
			opts = append(opts, client.WithLogLevel(string(level)))
		}
	case jsonrpc.Field(c.Capabilities(), "logging") != nil:
		// The initialize generation's level is its session's, shared by every host.
		defer u.levels.enter(ctx, c, level)()
	}
	opts = append(opts, client.WithNotifications(func(method string, params json.RawMessage) {
		if method != "notifications/message" {
			return
		}
		// MCP 2025-11-25 and 2026-07-28, Utilities › Logging: the host gets the messages at or
		// above the level it asked for (Request.Log filters).
		var m struct {
			Level  mcp.LoggingLevel `json:"level"`
			Logger string           `json:"logger"`
			Data   any              `json:"data"`
		}
		if json.Unmarshal(params, &m) == nil {
			req.Log(m.Level, m.Logger, m.Data)
		}
	}))
	// The upstream may ask only for what the host declared (MCP 2026-07-28, Basic › _meta).
	opts = append(opts, client.WithClientCapabilities(upstreamCaps(req)))
	passTasks := false
	if req.Stateless() {
		// A 2026-07-28 host answers an upstream's questions itself: the input_required
		// result goes to it as it is, and its retry, with inputResponses and the upstream's
		// requestState, comes back here and goes on to the upstream.
		opts = append(opts, client.ReturnInputRequired())
		// A host that declared the tasks extension follows a task itself: the task goes to
		// it under an id of the gateway's that names the upstream (see task).
		if passTasks = mcp.HasExtension(req.ClientCapabilities(), mcp.ExtensionTasks); passTasks {
			opts = append(opts, client.ReturnTask())
		}
	}
	// A server of the initialize generation asks its questions as requests, while the call
	// waits; a 2026-07-28 host answers them only by sending the call again (MCP 2026-07-28,
	// Basic › Patterns › Multi-round requests): the gateway asks the host itself (below).
	// forward serves tools/call, prompts/get and resources/read: the methods that may ask.
	asksByRetry := req.Stateless() && !c.Modern()
	if asksByRetry {
		params = withoutMember(withoutMember(params, "requestState"), "inputResponses") // the host's, for the gateway
	}
	callCtx, traced, end := g.opts.Telemetry.StartCall(withHost(ctx, req), req.Method(), params)
	if meta := jsonrpc.Field(traced, "_meta"); meta != nil {
		var tp, ts string
		json.Unmarshal(jsonrpc.Field(meta, "traceparent"), &tp)
		json.Unmarshal(jsonrpc.Field(meta, "tracestate"), &ts)
		opts = append(opts, client.WithTraceContext(tp, ts))
	}
	if asksByRetry {
		// The host is asked with input_required and the server's call given up; the host's
		// retry is sent again, and the server's questions are answered from the host's
		// answers. The requestState is bound to the names the host sees.
		target, _ := stringField(req.Params(), "name")
		if req.Method() == "resources/read" {
			target, _ = stringField(req.Params(), "uri")
		}
		ran := false
		res, err := req.Interactive(ctx, target, jsonrpc.Field(params, "arguments"), func() (any, error) {
			ran = true
			cctx, cancel := context.WithCancelCause(callCtx)
			defer cancel(nil)
			h := &host{req: req, asked: cancel}
			res, err := c.Call(context.WithValue(cctx, hostKey{}, h), req.Method(), params, opts...)
			h.mu.Lock()
			h.done = true // a question that comes late is refused; Request is the caller's again
			h.mu.Unlock()
			if errors.Is(context.Cause(cctx), mcp.ErrInputRequired) {
				end(nil) // asked, not failed; a result that came meanwhile is given up too
				return nil, mcp.ErrInputRequired
			}
			end(err)
			if err != nil {
				return nil, u.callError(ctx, req.Method(), err)
			}
			return passOn(res, true, req.Method() == "resources/read"), nil
		})
		if !ran {
			end(err) // the retry's requestState was refused
		}
		return res, err
	}
	res, err := c.Call(callCtx, req.Method(), params, opts...)
	end(err)
	if err != nil {
		return nil, u.callError(ctx, req.Method(), err)
	}
	if passTasks && string(jsonrpc.Field(res, "resultType")) == `"task"` {
		res = u.ownTaskID(mcp.TaskPrincipal(ctx), res)
	}
	return passOn(res, req.Stateless(), req.Method() == "resources/read"), nil
}

// upstreamCaps are the capabilities a call to an upstream declares: the host's own; for a
// host of the initialize generation, which cannot follow a task, with the tasks extension
// added, so that a tool an upstream runs only as a task still serves it (the gateway waits
// for the task).
func upstreamCaps(req *mcp.Request) json.RawMessage {
	caps := req.ClientCapabilities()
	if !jsonrpc.IsObject(caps) {
		caps = json.RawMessage(`{}`)
	}
	if req.Stateless() {
		return caps
	}
	ext := jsonrpc.Field(caps, "extensions")
	if !jsonrpc.IsObject(ext) {
		ext = []byte(`{}`)
	}
	return jsonrpc.SetMember(caps, "extensions", jsonrpc.SetMember(ext, mcp.ExtensionTasks, []byte(`{}`)))
}

// ownTaskID returns a task (a CreateTaskResult, or a tasks/get result) with its taskId made
// the gateway's for the host principal (see taskID), so that tasks/* find their way back.
func (u *upstream) ownTaskID(principal string, res json.RawMessage) json.RawMessage {
	id, ok := stringField(res, "taskId")
	if !ok {
		return res
	}
	return jsonrpc.SetMember(res, "taskId", quote(u.taskID(principal, id)))
}

// taskID returns the gateway's id of the upstream's task own, handed out to the host
// principal (mcp.TaskPrincipal): the upstream's name, a MAC that binds the id to that host,
// and the upstream's own id. Every host reaches the upstream as the gateway, so the
// upstream cannot keep hosts' tasks apart; the MAC does, as a server that binds its tasks
// to their principal would.
func (u *upstream) taskID(principal, own string) string {
	return u.g.taskID(principal, u.cfg.Name, own)
}

func (g *Gateway) taskID(principal, name, own string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(name)) + "." + g.taskMAC(principal, name, own) + "." + own
}

// taskMAC is the part of a task id that binds it to a host: a keyed hash of the host's
// principal, the upstream's name and its task id, under a key of this gateway's (so ids do
// not outlive the process).
func (g *Gateway) taskMAC(principal, name, own string) string {
	m := hmac.New(sha256.New, g.taskKey[:])
	m.Write([]byte(principal))
	m.Write([]byte{0})
	m.Write([]byte(name))
	m.Write([]byte{0})
	m.Write([]byte(own))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:12])
}

// task serves tasks/get, tasks/update and tasks/cancel (the io.modelcontextprotocol/tasks
// extension) by passing them on to the upstream that runs the task, which the gateway's
// task id names.
func (g *Gateway) task(ctx context.Context, req *mcp.Request) (any, error) {
	params := req.Params()
	id, _ := stringField(params, "taskId")
	principal := mcp.TaskPrincipal(ctx)
	u, own, err := g.taskOwner(principal, id)
	if err != nil {
		return nil, err
	}
	c, err := u.ready()
	if err != nil {
		return nil, err
	}
	res, err := c.Call(withHost(ctx, req), req.Method(), jsonrpc.SetMember(params, "taskId", quote(own)),
		client.WithClientCapabilities(upstreamCaps(req)))
	if err != nil {
		return nil, u.callError(ctx, req.Method(), err)
	}
	return passOn(u.ownTaskID(principal, res), true, false), nil
}

// taskOwner returns the upstream that runs the task the gateway's id names, and the
// upstream's own id of it, if the id was handed out to the host principal; to any other
// host it is unknown.
func (g *Gateway) taskOwner(principal, id string) (*upstream, string, error) {
	enc, rest, ok := strings.Cut(id, ".")
	mac, own, ok2 := strings.Cut(rest, ".")
	name, err := base64.RawURLEncoding.DecodeString(enc)
	if !ok || !ok2 || err != nil || !hmac.Equal([]byte(mac), []byte(g.taskMAC(principal, string(name), own))) {
		return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Unknown task %q: relay gateway did not hand out this task id to this client (or before it restarted)", id),
			Data: map[string]any{"taskId": id}}
	}
	for _, u := range g.upstreams() {
		if u.cfg.Name == string(name) {
			return u, own, nil
		}
	}
	return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Unknown task %q: its server %q is no longer in relay gateway's configuration", id, name),
		Data: map[string]any{"taskId": id, "upstream": string(name)}}
}

// taskListen is the gateway's server's TaskListen: the tasks a host's subscriptions/listen
// names are followed at the servers that run them (2026-07-28 ones), each with a listen of
// the gateway's own, and what those tell of them (notifications/tasks) is told to the host
// under the gateway's task ids. It waits for those listens' acknowledgements (up to
// taskListenWait), to say which tasks are followed.
func (g *Gateway) taskListen(ctx context.Context, ids []string, notify func(json.RawMessage)) ([]string, func()) {
	principal := mcp.TaskPrincipal(ctx)
	owned := map[*upstream][]string{}
	for _, id := range ids {
		if u, own, err := g.taskOwner(principal, id); err == nil && !slices.Contains(owned[u], own) {
			owned[u] = append(owned[u], own)
		}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		followed []string // guarded by mu, as told
		told     bool     // the host's acknowledgement named followed: no more join
		acks     []chan struct{}
	)
	caps := json.RawMessage(`{"extensions":{"` + mcp.ExtensionTasks + `":{}}}`)
	for u, owns := range owned {
		c, err := u.ready()
		if err != nil || !c.Modern() {
			continue // down, or a server of the initialize generation: no listen follows tasks
		}
		acked := make(chan struct{})
		acks = append(acks, acked)
		var once sync.Once
		wg.Go(func() { // ends with ctx: the host's listen
			defer once.Do(func() { close(acked) })
			c.Listen(ctx, mcp.SubscriptionFilter{TaskIDs: owns}, func(method string, params json.RawMessage) {
				switch method {
				case "notifications/subscriptions/acknowledged":
					var p struct {
						Notifications mcp.SubscriptionFilter `json:"notifications"`
					}
					json.Unmarshal(params, &p)
					mu.Lock()
					for _, own := range p.Notifications.TaskIDs {
						if !told {
							followed = append(followed, u.taskID(principal, own))
						}
					}
					mu.Unlock()
					once.Do(func() { close(acked) })
				case "notifications/tasks":
					task := passOn(u.ownTaskID(principal, params), true, false)
					id, _ := stringField(task, "taskId")
					mu.Lock()
					named := slices.Contains(followed, id)
					mu.Unlock()
					if named { // not one whose server acknowledged too late to be named
						notify(task)
					}
				}
			}, client.WithClientCapabilities(caps))
		})
	}
	wctx, stop := context.WithTimeout(ctx, taskListenWait)
	defer stop()
	for _, acked := range acks {
		select {
		case <-acked:
		case <-wctx.Done():
		}
	}
	mu.Lock()
	defer mu.Unlock()
	told = true
	return slices.Clone(followed), wg.Wait
}

// taskListenWait bounds how long a host's listen waits for the servers' acknowledgements
// of the tasks it names.
const taskListenWait = 10 * time.Second

// hostKey is the context key of the host's request a call to an upstream is made for.
type hostKey struct{}

// host is the host's request a call to an upstream is made for, and, when the host is
// asked for input with input_required, asked, which gives up the call.
type host struct {
	req   *mcp.Request
	asked context.CancelCauseFunc // nil for a host of the initialize generation
	// mu makes the questions of a call asked by retry one at a time (they write the host's
	// Request); done: the call was given up or has returned, and asks nothing more; keys
	// counts the questions of this run by what they ask (see ask).
	mu   sync.Mutex
	done bool
	keys map[string]int
}

func withHost(ctx context.Context, req *mcp.Request) context.Context {
	return context.WithValue(ctx, hostKey{}, &host{req: req})
}

// ask asks the host for input on behalf of a call to an upstream: the upstream's method
// (elicitation, sampling, roots) with params, through question, a call of the host's
// request; an input_required for the host gives up the upstream's call.
//
// Asked by retry, each question is named (mcp.InputKey) by what it asks: an upstream that
// asks several at once asks them in any order, run after run, and a name by order would
// give one question's answer to another. What an upstream draws anew on every run (an
// elicitation's id, the URL of a URL-mode one, _meta) is left out of the name, and
// questions that ask the same thing are told apart by their count. A question whose text
// changes from run to run cannot be answered this way: the host is asked again, until its
// client gives up.
func ask[T any](ctx context.Context, method string, params any, question func(req *mcp.Request, key ...mcp.AskOption) (T, error)) (T, error) {
	h, ok := ctx.Value(hostKey{}).(*host)
	if !ok {
		var zero T
		return zero, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "relay gateway can pass " + method + " on only to the host whose request the server is answering"}
	}
	if h.asked == nil { // asked as requests of the host's own: any number at once
		return question(h.req)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		var zero T
		return zero, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "relay gateway has given up this call to ask the host " + method + "; it is sent again with the host's answers"}
	}
	raw, _ := json.Marshal(params)
	for _, drawn := range []string{"elicitationId", "url", "_meta"} { // new on every run, or may be
		raw = withoutMember(raw, drawn)
	}
	sum := sha256.Sum256(append([]byte(method+"\x00"), raw...))
	what := base64.RawURLEncoding.EncodeToString(sum[:9])
	if h.keys == nil {
		h.keys = map[string]int{}
	}
	key := fmt.Sprintf("%s-%d", what, h.keys[what])
	h.keys[what]++
	res, err := question(h.req, mcp.InputKey(key))
	if errors.Is(err, mcp.ErrInputRequired) {
		h.done = true
		h.asked(mcp.ErrInputRequired)
	}
	return res, err
}

// askHost are the client handlers of every upstream: what an upstream asks of its client
// while it answers a host's request (elicitation, sampling, roots) is asked of that host,
// through its request (Request.Elicit, CreateMessage, ListRoots). A host of the initialize
// generation gets it as a server-to-client request (MCP 2025-11-25, Client Features); a
// 2026-07-28 host gets the upstream's input_required result as it is (see forward).
func askHost() []client.Option {
	elicit := func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return ask(ctx, "elicitation/create", p, func(req *mcp.Request, key ...mcp.AskOption) (*mcp.ElicitResult, error) {
			return req.Elicit(ctx, p, key...)
		})
	}
	return []client.Option{
		client.WithElicitation(elicit),
		client.WithURLElicitation(elicit),
		client.WithSampling(func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return ask(ctx, "sampling/createMessage", p, func(req *mcp.Request, key ...mcp.AskOption) (*mcp.CreateMessageResult, error) {
				return req.CreateMessage(ctx, p, key...)
			})
		}),
		client.WithRoots(func(ctx context.Context) ([]mcp.Root, error) {
			res, err := ask(ctx, "roots/list", nil, func(req *mcp.Request, key ...mcp.AskOption) (*mcp.ListRootsResult, error) {
				return req.ListRoots(ctx, key...)
			})
			if err != nil {
				return nil, err
			}
			return res.Roots, nil
		}),
	}
}

// passOn makes an upstream's result the gateway's: the upstream's serverInfo is dropped
// (the gateway's own goes in), resultType stays only when it is not "complete" (a
// 2026-07-28 input_required result), and it and _meta come first, where the gateway's
// server looks for them. A cacheable result (resources/read) keeps the ttlMs and
// cacheScope its server gave, for a 2026-07-28 host (a task's ttlMs is the task's, and
// always stays). Every other member is kept as the upstream wrote it.
func passOn(res json.RawMessage, modern, cacheable bool) json.RawMessage {
	if !jsonrpc.IsObject(res) {
		return res
	}
	var kind, meta, ttl, scope []byte
	rest := make([]byte, 0, len(res))
	jsonrpc.EachMember(res, func(key, value []byte) bool {
		switch string(key) {
		case "ttlMs", "cacheScope":
			if cacheable {
				if string(key) == "ttlMs" {
					ttl = value
				} else {
					scope = value
				}
				return true
			}
		case "resultType":
			if modern && string(value) != `"complete"` {
				kind = value
			}
			return true
		case "_meta":
			// The upstream's identity is not the gateway's (MCP 2026-07-28, Basic › _meta:
			// serverInfo names the server that answers).
			if value = withoutMember(value, mcp.MetaServerInfo); string(value) != "{}" {
				meta = value
			}
			return true
		}
		rest = appendMember(rest, key, value)
		return true
	})
	out := make([]byte, 0, len(res)+16)
	out = append(out, '{')
	if kind != nil {
		out = appendMember(out, []byte("resultType"), kind)
	}
	if meta != nil {
		out = appendMember(out, []byte("_meta"), meta)
	}
	out = append(out, rest...)
	if cacheable && modern && ttl != nil {
		// Both or neither: a ttlMs that says not for whom is taken as the user's alone.
		if scope == nil {
			scope = []byte(`"private"`)
		}
		out = appendMember(appendMember(out, []byte("ttlMs"), ttl), []byte("cacheScope"), scope)
	}
	if out[len(out)-1] == ',' {
		out = out[:len(out)-1]
	}
	return append(out, '}')
}

// appendMember appends "key":value, to an object being written.
func appendMember(out, key, value []byte) []byte {
	out = jsonrpc.AppendString(out, string(key))
	out = append(out, ':')
	out = append(out, value...)
	return append(out, ',')
}

// withoutMember returns the object obj without its member key.
func withoutMember(obj []byte, key string) []byte {
	if jsonrpc.Field(obj, key) == nil {
		return obj
	}
	out := []byte{'{'}
	jsonrpc.EachMember(obj, func(k, v []byte) bool {
		if string(k) != key {
			out = appendMember(out, k, v)
		}
		return true
	})
	if out[len(out)-1] == ',' {
		out = out[:len(out)-1]
	}
	return append(out, '}')
}

// complete serves completion/complete: a prompt's arguments at the upstream that owns the
// prompt, a template's at the upstream that listed it.
func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	rt := g.routes.Load()
	ref := req.Ref
	var u *upstream
	switch ref.Type {
	case "ref/prompt":
		r, ok := rt.prompts[ref.Name]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Unknown prompt %q; prompts/list names the prompts", ref.Name)}
		}
		u, ref.Name = r.up, r.name
	case "ref/resource":
		if u = rt.templates[ref.URI]; u == nil {
			u = rt.resourceOwner(ref.URI)
		}
		if u == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Unknown resource or template %q", ref.URI)}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Unknown completion reference type %q; want ref/prompt or ref/resource", ref.Type)}
	}
	c, err := u.ready()
	if err != nil {
		return nil, err
	}
	if jsonrpc.Field(c.Capabilities(), "completions") == nil {
		return &mcp.CompleteResult{Values: []string{}}, nil // the upstream offers none
	}
	res, err := c.Complete(ctx, ref, req.Argument.Name, req.Argument.Value, req.Context)
	if err != nil {
		return nil, u.callError(ctx, "completion/complete", err)
	}
	return res, nil
}

func stringField(obj json.RawMessage, name string) (string, bool) {
	return jsonrpc.Unquote(jsonrpc.Field(obj, name))
}

func quote(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
