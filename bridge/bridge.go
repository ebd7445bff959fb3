// Package bridge serves a stdio MCP server over Streamable HTTP through a pool of supervised
// children. It is httpx's MCP handler over a profile that forwards instead of serving: every
// Origin check, auth hook, limit and metric of httpx applies unchanged.
//
// Routing: a 2026-07-28 request goes to the least-loaded child of the pool that is up.
//
// An initialize-generation session, when the children speak only that generation, gets a
// child process of its own (MCP 2025-11-25, Transports › Session Management: a session's
// state and notifications are its own): a warm spare, spawned ahead and initialized only now,
// with the client's own initialize, so that the child sees the client's capabilities and
// answers the handshake itself. Everything the child says reaches that session alone: its
// log messages, resource updates and list changes on the client's streams, its sampling,
// elicitation and roots requests on the stream of a request in flight. The session's end
// (DELETE, idle timeout, eviction) stops its child with the supervisor's stop sequence;
// Options.MaxSessions bounds them.
//
// An initialize-generation session on 2026-07-28 children is pinned, at its initialize, to
// the least-loaded child of the pool (the children are stateless: the session's log level
// and capabilities go in each request's _meta), and its initialize is answered by the
// bridge from what the children declared.
//
// Eras, and what each combination does:
//
//   - modern client, modern child: forwarded as is;
//   - legacy client, modern child: the bridge adds the 2026-07-28 _meta (the version, the
//     client capabilities from its initialize, its log level) to every request, and turns an
//     input_required answer into server-to-client requests on the client's stream, retrying
//     with the answers — so sampling and elicitation work;
//   - modern client, legacy child: the bridge initializes every child itself once (replayed
//     on restart by the supervisor's proxy), declaring sampling and elicitation, answers
//     server/discover from that, strips _meta on the way in and adds resultType and
//     serverInfo on the way out;
//   - legacy client, legacy child: the session's own child, initialized by the client.
//
// A modern client's subscriptions/listen is held open on a child of the pool (the proxy and
// this package put the client's listen id back on every notification); on legacy children,
// it gets a child of its own, subscribed by the bridge (listenlegacy.go). A legacy client's
// subscriptions on modern children become a listen the bridge holds on the session's child
// (sublisten.go). A legacy child's questions to a modern client become input_required
// (mrtr.go). Each generation sees its own shapes (shapes.go). A task
// (io.modelcontextprotocol/tasks) is reached through an id that names the child running it
// and is bound to the caller (tasks.go).
//
// Instances of a fleet (httpx.MCPOptions.SessionStore) share an initialize-generation
// session on 2026-07-28 children: its state is kept in the store, and each instance that
// gets a request of it pins it to a child of its own pool (kept.go). A session on children
// of the initialize generation lives in its child, in one process
// (Bridge.SessionsLiveInChildren).
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/fleet"
	"github.com/relayrt/relay/internal/statekey"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/supervise"
	"github.com/relayrt/relay/telemetry"
)

// Options configures a Bridge.
type Options struct {
	// Pool is the number of children shared by every 2026-07-28 request (default 1).
	Pool int
	// MaxSessions bounds the initialize-generation sessions that have a child of their own
	// (children that speak only that generation; default 100): one more is refused with an
	// error that says so. An embedding program bounds its HTTP sessions (httpx's MaxSessions)
	// the same, so that a session evicted to make room hands its child back.
	MaxSessions int
	// Spares is how many such children are kept spawned and waiting, so that a new session
	// does not wait for a spawn (0: none; each session spawns its own).
	Spares int
	// Spec is the children's supervision; its Command is the server to run.
	Spec supervise.Spec
	// Proxy tunes each child's proxy (replay policy, probes, timeouts). Its Observer, if set,
	// is shared by every child's proxy, so it must be safe for concurrent use; left nil, each
	// child gets Telemetry's (spans for its restarts and upgrades).
	Proxy supervise.ProxyOptions
	// Logger logs the pool's life.
	Logger *zap.Logger
	// Telemetry, when not nil, gives each request passed on to a child a client span, a
	// child of the request's own span, whose trace context the child gets in
	// _meta.traceparent, and records mcp.client.operation.duration (see package telemetry).
	Telemetry *telemetry.Telemetry
	// Redis is the URL of the Redis that the bridges of a fleet share (relay bridge
	// --redis). The children get it in $RELAY_REDIS_URL, under a key prefix of their own
	// (fleet.ChildEnv), where Relay's servers keep their tasks and tell their changes to the
	// children of the other instances. Give it only over children that keep their tasks in
	// a store the fleet shares: with StateKey, every instance follows the task ids the others
	// hand out to a child of its own pool. "": none.
	Redis string
	// StateKey is the key the instances of a fleet share (relay bridge --state-key-file):
	// with Redis, the task ids the bridge hands out are signed with a key drawn from it. At
	// least 32 bytes; otherwise, or without Redis, a key of this process's own, and a task is
	// followed only through the instance that started it.
	StateKey []byte
	// Record, when not nil, gives each child, by its name, a recorder of the frames between
	// the bridge and the child (relay bridge --record: a file per child, so a file per
	// session for a server of the initialize generation). A nil recorder records nothing.
	Record func(child string) FrameRecorder
}

func (o *Options) recorder(child string) FrameRecorder {
	if o.Record == nil {
		return nil
	}
	return o.Record(child)
}

// Bridge is a pool of supervised children behind one MCP profile.
type Bridge struct {
	clients []*childConn
	pins    []atomic.Int64 // legacy sessions pinned to each child
	log     *zap.Logger
	tel     *telemetry.Telemetry
	legacy  bool                   // the children speak only the initialize generation
	own     *sessionChildren       // the children of legacy sessions, when legacy
	served  atomic.Pointer[served] // what the children serve, learnt at New and after each Upgrade
	ctx     context.Context        // the bridge's: done once Close has stopped every child
	stop    context.CancelFunc
	once    sync.Once

	health   health
	watchers sync.WaitGroup // one per child of the pool, until its client ends
	parking  parking        // 2026-07-28 calls on legacy children waiting for the client's retry
	taskKey  []byte         // signs the task ids the bridge hands out (tasks.go)
}

// served is what the children serve, as the bridge tells its clients: read by every request,
// replaced whole.
type served struct {
	caps, info json.RawMessage              // capabilities and serverInfo
	headers    map[string][]mcp.HeaderParam // tool → arguments mirrored in headers
}

// now returns what the children serve now.
func (b *Bridge) now() *served { return b.served.Load() }

// learn reads what a modern pool's children serve (server/discover and their tools'
// mirrored arguments) through the first child, and keeps it.
func (b *Bridge) learn(ctx context.Context) error {
	res, rpcErr, err := b.clients[0].call(ctx, nil, "server/discover", json.RawMessage(`{"_meta":`+modernMeta+`}`), nil)
	if err == nil && rpcErr != nil {
		err = rpcErr
	}
	if err != nil {
		return err
	}
	b.served.Store(&served{caps: jsonrpc.Field(res, "capabilities"),
		info:    jsonrpc.Field(jsonrpc.Field(res, "_meta"), mcp.MetaServerInfo),
		headers: b.learnHeaders(ctx, b.clients[0], json.RawMessage(`{"_meta":`+modernMeta+`}`))})
	return nil
}

const modernMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// New starts the pool and learns the children's era: a child that answers server/discover is
// modern; one that does not is initialized (2025-11-25) by the bridge.
func New(ctx context.Context, opts Options) (*Bridge, error) {
	if opts.Pool <= 0 {
		opts.Pool = 1
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 100
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	b := &Bridge{log: opts.Logger, tel: opts.Telemetry, ctx: ctx, stop: stop, pins: make([]atomic.Int64, opts.Pool),
		taskKey: newTaskKey()}
	if opts.Redis != "" {
		env, err := fleet.ChildEnv(opts.Spec.Command.Env, opts.Redis, "bridge")
		if err != nil {
			stop()
			return nil, err
		}
		opts.Spec.Command.Env = env
		if len(opts.StateKey) >= statekey.MinLen {
			b.taskKey = statekey.Derive(opts.StateKey, "relay bridge: task ids")
		}
	}
	for i := range opts.Pool {
		name := fmt.Sprintf("%s#%d", nameOf(opts.Spec.Command), i)
		b.clients = append(b.clients, startChild(ctx, name, opts.Spec, opts.Proxy, opts.Logger, opts.recorder(name), opts.Telemetry))
	}
	b.watch()
	probe, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if b.learn(probe) == nil {
		b.learnTools(probe, json.RawMessage(`{"_meta":`+modernMeta+`}`))
		return b, nil
	}
	b.legacy = true
	// The capabilities the bridge can serve for 2026-07-28 clients, through input_required
	// (mrtr.go); a request that did not declare one its child asks for gets -32021.
	params := json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"relay-bridge","version":"1.0.0"}}`)
	var init json.RawMessage // the children's initialize result
	for _, c := range b.clients {
		res, rpcErr, err := c.call(probe, nil, "initialize", params, nil)
		if err != nil || rpcErr != nil {
			b.Close()
			why := error(rpcErr)
			if err != nil {
				why = err
			}
			return nil, fmt.Errorf("bridge: the child answered neither server/discover nor initialize: %w", why)
		}
		c.notify("notifications/initialized", nil)
		init = res
	}
	b.served.Store(&served{caps: jsonrpc.Field(init, "capabilities"), info: jsonrpc.Field(init, "serverInfo")})
	b.learnTools(probe, json.RawMessage(`{}`))
	b.own = newSessionChildren(ctx, opts)
	return b, nil
}

// learnTools lists the tools through every child's proxy, so that each proxy knows which
// calls its child annotated as safe to repeat before a client ever asks.
func (b *Bridge) learnTools(ctx context.Context, params json.RawMessage) {
	for _, c := range b.clients {
		c.call(ctx, nil, "tools/list", params, nil)
	}
}

func nameOf(c supervise.Command) string {
	if c.Name != "" {
		return c.Name
	}
	return c.Path
}

// Upgrade replaces every child with a new one started from Spec.Command (a new version of
// the server), without dropping a client: a rolling upgrade, one child at a time, the pool's
// first, then each session's own. Each child is upgraded as supervise.Supervisor.Upgrade
// does: the new child is brought to the old one's state (a session's initialize replayed),
// then takes every new request, and the old one answers what it has in flight, within
// Proxy.Drain, before it is stopped. A session thus moves to the new version at once, never
// ends for it, and loses nothing. Spares, which no session has claimed, are replaced. A child
// whose upgrade fails keeps serving; Upgrade tries every child and returns the failures.
func (b *Bridge) Upgrade(ctx context.Context, reason string) error {
	var errs []error
	for _, c := range b.clients {
		if err := c.upgrade(ctx, reason); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	if !b.legacy { // the new version's capabilities, serverInfo and mirrored arguments
		if err := b.learn(ctx); err != nil {
			errs = append(errs, fmt.Errorf("server/discover after the upgrade: %w", err))
		}
	}
	if b.own != nil {
		errs = append(errs, b.own.upgrade(ctx, reason)...)
	}
	return errors.Join(errs...)
}

// Close stops every child with the full stop sequence: the pool, the spares and every
// session's own, and waits until all have stopped.
func (b *Bridge) Close() error {
	var errs []error
	b.once.Do(func() {
		close(b.health.closing)
		b.parking.close()
		if b.own != nil {
			b.own.close()
		}
		results := make(chan error, len(b.clients))
		for _, c := range b.clients { // all at once: each stop may wait out its child
			go func() { results <- c.close() }()
		}
		for range b.clients {
			if err := <-results; err != nil {
				errs = append(errs, err)
			}
		}
		b.watchers.Wait()
		b.parking.wait() // the children are closed: no call waits on one now
		b.stop()
	})
	return errors.Join(errs...)
}

// pin and unpin route a 2026-07-28 retry to the child that issued its requestState: each
// child signs with its own key, so a state is prefixed with the child's index on the way
// out, and the prefix chooses the child on the way back in.
func pin(state json.RawMessage, child int) json.RawMessage {
	var s string
	if json.Unmarshal(state, &s) != nil {
		return state
	}
	out, _ := json.Marshal(fmt.Sprintf("relay%d.%s", child, s))
	return out
}

func (b *Bridge) unpin(state json.RawMessage) (json.RawMessage, *childConn) {
	var s string
	if json.Unmarshal(state, &s) != nil {
		return state, nil
	}
	var i int
	var rest string
	if n, _ := fmt.Sscanf(s, "relay%d.", &i); n != 1 || i < 0 || i >= len(b.clients) {
		return state, nil
	}
	rest = s[len(fmt.Sprintf("relay%d.", i)):]
	out, _ := json.Marshal(rest)
	return out, b.clients[i]
}

func (b *Bridge) index(c *childConn) int {
	for i, x := range b.clients {
		if x == c {
			return i
		}
	}
	return -1
}

// pick returns the least-loaded child that is up.
func (b *Bridge) pick() *childConn {
	var best *childConn
	for _, c := range b.clients {
		select {
		case <-c.Done():
			continue
		default:
		}
		if best == nil || c.Load() < best.Load() {
			best = c
		}
	}
	return best
}

// pin chooses the child for a new legacy session: the one with the fewest sessions pinned to
// it (then the least loaded), so that sessions spread over the pool.
func (b *Bridge) pin() (*childConn, int) {
	best := -1
	for i, c := range b.clients {
		select {
		case <-c.Done():
			continue
		default:
		}
		if best < 0 || b.pins[i].Load() < b.pins[best].Load() ||
			(b.pins[i].Load() == b.pins[best].Load() && c.Load() < b.clients[best].Load()) {
			best = i
		}
	}
	if best < 0 {
		return nil, -1
	}
	b.pins[best].Add(1)
	return b.clients[best], best
}

// Profile returns the forwarding MCP profile, for httpx.NewMCPProfileHandler.
func (b *Bridge) Profile() runtime.Profile {
	p := mcp.NewServer(mcp.Implementation{Name: "relay-bridge"}, nil).Profile() // MCP's rules
	p.NewSession = func(peer *runtime.Peer) runtime.Session {
		s := &session{b: b, peer: peer, kept: peer.SessionState()}
		if s.kept != nil && s.kept.Restore != nil {
			s.TakeState(s.kept.Restore) // a session begun on another instance of a fleet (kept.go)
		}
		return s
	}
	return p
}

// SessionsLiveInChildren reports whether each initialize-generation session lives in a
// child process of its own (the children speak only that generation): such a session can
// be served only by the process that runs its child, so instances behind a load balancer
// need affinity (on Mcp-Session-Id), and cannot share it through a fleet's store.
func (b *Bridge) SessionsLiveInChildren() bool { return b.legacy }
