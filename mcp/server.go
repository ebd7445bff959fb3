package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// ServerOptions configures a Server. The zero value is ready to use.
type ServerOptions struct {
	// Instructions tells the model how to use the server; sent in discover and initialize.
	Instructions string
	// CacheTTL is the ttlMs given with cacheable 2026-07-28 results (server/discover, the
	// lists, resources/read). Zero, the default, says that a client must not reuse them.
	CacheTTL time.Duration
	// Cache, when set, gives the ttlMs and cacheScope ("private" when private) of a
	// cacheable result of method in place of CacheTTL and "public": a gateway's lists are
	// as cacheable as the least cacheable of its servers'. A result a handler returns as a
	// json.RawMessage with a ttlMs of its own keeps it (a gateway's resources/read).
	Cache func(method string) (ttl time.Duration, private bool)
	// PageSize is how many items a list returns before it hands out a cursor (default 100).
	PageSize int
	// RequestTimeout bounds every handler (default: none). A request that runs out of time
	// is answered with an error saying so.
	RequestTimeout time.Duration
	// InputTimeout bounds how long an initialize-generation handler waits for the client to
	// answer Elicit, CreateMessage or ListRoots (default 5 minutes).
	InputTimeout time.Duration
	// StateKey signs the requestState of 2026-07-28 input_required results (HMAC-SHA256), so
	// that any server instance holding the same key can verify a retry. Use at least 32
	// random bytes. When nil, each Server draws its own random key: retries must then reach
	// the same process.
	StateKey []byte
	// StateTTL is how long a requestState stays valid (default 10 minutes).
	StateTTL time.Duration
	// TaskStore keeps the state of tasks (see AsTask); default: a NewMemoryTaskStore with
	// its default bounds.
	TaskStore TaskStore
	// TaskTTL is how long a task is kept after it was made, done or not (default 1 hour): a
	// task still running then is stopped and marked failed, and then forgotten.
	TaskTTL time.Duration
	// TaskPollInterval is how often clients are asked to poll tasks/get (default 1 second).
	TaskPollInterval time.Duration
	// TaskHandler, when set, serves the 2026-07-28 tasks/get, tasks/update and tasks/cancel
	// requests itself, in place of the server's TaskStore, and the server declares the
	// tasks extension (io.modelcontextprotocol/tasks): a gateway passes them on to the
	// server that owns the task. A request whose client did not declare the extension is
	// refused with -32021 before it.
	TaskHandler MethodHandler
	// TaskListen, with TaskHandler, follows the tasks a subscriptions/listen names
	// (notifications.taskIds) in place of the server's TaskStore: it returns the ids it
	// follows, then gives notify each task's notifications/tasks params (the whole task, as
	// tasks/get answers it) until ctx ends with the listen, and its wait returns once it has
	// stopped. notify never waits: the listen keeps each task's newest word until it sends
	// it. Without TaskListen, a server with TaskHandler follows no task.
	TaskListen func(ctx context.Context, ids []string, notify func(task json.RawMessage)) (followed []string, wait func())
	// DeclareLists declares tools, prompts and resources (with listChanged and subscribe)
	// while they are empty too, and serves their empty lists: the entries of a server that
	// adds them at run time (a gateway's) come after hosts have asked what it offers and
	// opened their listens, which must hear of them.
	DeclareLists bool
	// Bus, when set, joins the Server to the other instances of its fleet (instances behind
	// one load balancer, serving as one server): each change made here (a list changed, a
	// resource updated, a task changed) is published on it, and the changes the others
	// publish reach this instance's listeners (legacy sessions, subscriptions/listen
	// streams), so that a client listening on one instance hears of a change made through
	// another; and a task this instance runs follows the tasks/update and tasks/cancel that
	// reach another (which needs a TaskStore the instances share). Delivery is at most once,
	// as the Bus is; while it is down, listeners still hear this instance's own changes, and
	// are told that what they follow changed once it is back. A Server with a Bus starts
	// goroutines for it: call Close when done with it.
	Bus Bus
	// BusTopic is the Bus topic the Server's changes travel on (default "relay/mcp/" and the
	// Server's name). The instances of one fleet must share it, and servers that share a bus
	// without being one fleet must not.
	BusTopic string
	// Logger logs what goes wrong with the Bus (default: runtime.DefaultLogger).
	Logger *zap.Logger
	// Middleware wraps every feature method (tools, prompts, resources, completions), outermost
	// first. Lifecycle methods (initialize, ping, discover, setLevel, subscribe) are answered
	// by the session itself and do not pass through it.
	Middleware []Middleware
}

// MethodHandler serves one feature method; req.Method() says which.
type MethodHandler func(ctx context.Context, req *Request) (result any, err error)

// Middleware wraps a MethodHandler: for logging, metrics, authorization.
type Middleware func(next MethodHandler) MethodHandler

// Server is an MCP server: what it serves and how it describes itself. It holds no protocol
// state; each connection gets its own session from Profile. Tools, prompts and resources may
// be added and removed while serving: each request sees a consistent snapshot, and clients
// that listen for list changes are told.
type Server struct {
	info       Implementation
	opts       ServerOptions
	serverInfo json.RawMessage // {"io.modelcontextprotocol/serverInfo":{...}}
	modernOpen []byte          // a complete 2026-07-28 result up to its first own member
	stateKey   []byte
	chains     []MethodHandler // each feature method in the middleware, by feature.index

	batchMu  sync.Mutex   // guards batching and batched (see Batch)
	batching int          // Batch calls under way
	batched  []changeKind // the kinds of change to tell once they end

	mu    sync.Mutex // serialises registrations; requests read the snapshot
	reg   atomic.Pointer[registry]
	hub   hub
	bus   *busLink // nil without ServerOptions.Bus
	tasks taskRunner

	elicits urlElicitations // the clients waiting on URL elicitations, for CompleteElicitation
}

// NewServer returns a server that describes itself as info. opts may be nil. It panics if an
// icon of info is not valid (see Icon), which is a programming error.
func NewServer(info Implementation, opts *ServerOptions) *Server {
	checkIcons("server "+info.Name, info.Icons)
	s := &Server{info: info}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.PageSize <= 0 {
		s.opts.PageSize = 100
	}
	if s.opts.StateTTL <= 0 {
		s.opts.StateTTL = 10 * time.Minute
	}
	if s.opts.TaskStore == nil {
		s.opts.TaskStore = NewMemoryTaskStore(nil)
	}
	if s.opts.TaskTTL <= 0 {
		s.opts.TaskTTL = time.Hour
	}
	if s.opts.TaskPollInterval <= 0 {
		s.opts.TaskPollInterval = time.Second
	}
	s.stateKey = s.opts.StateKey
	if len(s.stateKey) == 0 {
		s.stateKey = randomKey()
	}
	raw, _ := json.Marshal(map[string]Implementation{MetaServerInfo: info})
	s.serverInfo = raw
	s.modernOpen = append(append([]byte(`{"resultType":"complete","_meta":`), raw...), ',')
	s.chains = s.middlewareChains()
	if s.opts.Bus != nil {
		topic, log := s.opts.BusTopic, s.opts.Logger
		if topic == "" {
			topic = "relay/mcp/" + info.Name
		}
		if log == nil {
			log = runtime.DefaultLogger()
		}
		s.bus = newBusLink(s.opts.Bus, topic, &s.hub, log, s.taskChangedElsewhere)
	}
	empty := &registry{tasksRouted: s.opts.TaskHandler != nil, allLists: s.opts.DeclareLists}
	empty.index()
	s.reg.Store(empty)
	return s
}

func (s *Server) inputTimeout() time.Duration {
	if s.opts.InputTimeout > 0 {
		return s.opts.InputTimeout
	}
	return 5 * time.Minute
}

// Runtime returns a runtime server for this MCP server, ready for any transport.
func (s *Server) Runtime(opts ...runtime.Option) *runtime.Server {
	return runtime.NewServer(s.Profile(), opts...)
}

// Profile returns the MCP profile for Relay's runtime: the rules of both generations, with
// this server's features behind them.
func (s *Server) Profile() runtime.Profile {
	return runtime.Profile{
		CancelMethod: "notifications/cancelled",
		CancelTarget: func(params json.RawMessage) (jsonrpc.ID, bool) {
			id := jsonrpc.Field(params, "requestId")
			return jsonrpc.ID(id), jsonrpc.IsRequestID(id)
		},
		FrameTooLarge: func(limit int) *jsonrpc.Error {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "Invalid request: the message is longer than the server's limit; send a smaller one",
				Data:    map[string]any{"limitBytes": limit}}
		},
		// Overloaded: the runtime's default, -32000 with retryAfterMs, is MCP's answer too.
		Abandoned: &jsonrpc.Error{Code: CodeServerBusy,
			Message: "Server shutting down: the request did not finish before the drain deadline; retry it",
			Data:    map[string]any{"retryable": true}},
		NewSession: s.newSession,
		Proxy:      &proxyRules,
		Methods:    methods,
	}
}

// update applies a change to a copy of the registry and publishes it.
func (s *Server) update(kind changeKind, fn func(r *registry)) {
	s.mu.Lock()
	next := s.reg.Load().clone()
	fn(next)
	next.index()
	s.reg.Store(next)
	s.mu.Unlock()
	if kind == 0 {
		return
	}
	s.batchMu.Lock()
	if s.batching > 0 {
		if !slices.Contains(s.batched, kind) {
			s.batched = append(s.batched, kind)
		}
		s.batchMu.Unlock()
		return
	}
	s.batchMu.Unlock()
	s.changed(change{kind: kind})
}

// changed tells this instance's listeners of c, and the fleet's other instances when the
// Server has a Bus.
func (s *Server) changed(c change) {
	s.hub.publish(c)
	if s.bus != nil {
		s.bus.publish(c)
	}
}

// awaitBus returns once the Server's Bus subscription is in force (see busLink.await), at
// once without a Bus. A listener calls it after joining the hub and before it is
// acknowledged.
func (s *Server) awaitBus(ctx context.Context) {
	if s.bus != nil {
		s.bus.await(ctx)
	}
}

// Batch runs fn, which adds and removes tools, prompts, resources and templates: the
// clients that listen for list changes are told once for each list fn changed, after it
// returns, rather than once for each change (a server that mirrors another's lists, say).
// Changes made meanwhile by other goroutines are told then too.
func (s *Server) Batch(fn func()) {
	s.batchMu.Lock()
	s.batching++
	s.batchMu.Unlock()
	defer func() {
		s.batchMu.Lock()
		s.batching--
		var kinds []changeKind
		if s.batching == 0 {
			kinds, s.batched = s.batched, nil
		}
		s.batchMu.Unlock()
		for _, k := range kinds {
			s.changed(change{kind: k})
		}
	}()
	fn()
}

// capabilities lists what the server offers now. The map is shared: read it, never change it.
func (s *Server) capabilities() map[string]any { return s.reg.Load().caps }

// advertises reports whether a feature capability is advertised right now.
func (s *Server) advertises(capability string) bool {
	_, ok := s.reg.Load().caps[capability]
	return capability == "" || ok
}

// modernResult turns an encoded result object into a 2026-07-28 result: resultType (complete
// unless the object says otherwise) and the server's identity in _meta. A result that carries
// _meta or resultType of its own must encode it first (see encodeResult).
func (s *Server) modernResult(obj []byte) json.RawMessage {
	if k := jsonrpc.FirstKey(obj); k == "_meta" || k == "resultType" {
		return s.mergeResult(obj)
	}
	out := make([]byte, 0, len(obj)+len(s.serverInfo)+40)
	out = append(out, `{"resultType":"complete","_meta":`...)
	out = append(out, s.serverInfo...)
	if rest := bytes.TrimSpace(obj[1:]); string(rest) != "}" {
		out = append(out, ',')
	}
	return append(out, obj[1:]...)
}

// mergeResult is modernResult's slow path, for results that carry _meta of their own.
func (s *Server) mergeResult(obj []byte) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return obj
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok {
		json.Unmarshal(raw, &meta)
	}
	info, _ := json.Marshal(s.info)
	meta[MetaServerInfo] = info
	m["_meta"], _ = json.Marshal(meta)
	if _, ok := m["resultType"]; !ok {
		m["resultType"] = json.RawMessage(`"complete"`)
	}
	out, _ := json.Marshal(m)
	return out
}

// cachePolicy returns the ttlMs and cacheScope of method's cacheable results: Cache's, or
// CacheTTL and public.
func (s *Server) cachePolicy(method string) (time.Duration, bool) {
	if s.opts.Cache != nil {
		return s.opts.Cache(method)
	}
	return s.opts.CacheTTL, false
}

// cacheable adds ttlMs and cacheScope to an encoded result object.
func (s *Server) cacheable(obj []byte, ttl time.Duration, private bool) []byte {
	scope := `,"cacheScope":"public"`
	if private {
		scope = `,"cacheScope":"private"`
	}
	ms, _ := json.Marshal(max(ttl, 0).Milliseconds())
	out := append([]byte(`{"ttlMs":`), ms...)
	out = append(out, scope...)
	if rest := bytes.TrimSpace(obj[1:]); string(rest) != "}" {
		out = append(out, ',')
	}
	return append(out, obj[1:]...)
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
