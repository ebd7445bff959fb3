package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// Client is a connection to one MCP server. Its methods may be called from many goroutines
// at once; Close ends it.
type Client struct {
	conn    conn
	in      *inbox
	o       options
	ids     atomic.Int64
	modern  bool
	version string

	info         mcp.Implementation
	caps         json.RawMessage
	instructions string

	metaOnce sync.Once // encodes capsJSON and infoJSON, for appendMeta
	capsJSON []byte    // the client's capabilities with the tasks extension, encoded
	infoJSON []byte    // the client's info, encoded

	reinit   sync.Mutex  // held while a new session replaces one the server ended
	lost     atomic.Bool // the server ended the session and no new one could be started yet
	mu       sync.Mutex
	headers  map[string][]mcp.HeaderParam // x-mcp-header arguments of the tools listed, by tool
	logLevel string                       // 2026-07-28: the level SetLogLevel asked for
}

// ErrInputRequired is returned by a call that a 2026-07-28 server answered with an
// input_required result that the client could not answer: it asked for something no
// handler serves (give the client WithElicitation, WithSampling or WithRoots), or it kept
// asking past maxInputRounds retries.
var ErrInputRequired = errors.New("mcp/client: the server asked for input this client cannot provide")

// An Option configures Connect.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	info            mcp.Implementation
	version         string
	discoverTimeout time.Duration

	elicit     func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	elicitURL  func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	elicitDone func(elicitationID string)
	sample     func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	roots      func(ctx context.Context) ([]mcp.Root, error)
}

// WithClientInfo sets the name and version the client reports (default "relay-client").
func WithClientInfo(info mcp.Implementation) Option {
	return optionFunc(func(o *options) { o.info = info })
}

// WithVersion pins the protocol revision instead of detecting it: mcp.Version20260728 for
// the stateless generation, or a revision of the initialize generation, which initialize
// then asks for.
func WithVersion(v string) Option { return optionFunc(func(o *options) { o.version = v }) }

// WithDiscoverTimeout bounds the wait for the answer to server/discover, after which the
// server is taken for one of the initialize generation (default 5s). It applies only when
// the generation is detected: with WithVersion only Connect's context bounds the wait.
func WithDiscoverTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.discoverTimeout = d })
}

// Connect opens t, learns the server's generation (or takes the one WithVersion pins) and
// returns a Client ready for calls. ctx bounds the connection's setup only.
func Connect(ctx context.Context, t Transport, opts ...Option) (*Client, error) {
	o := options{info: mcp.Implementation{Name: "relay-client", Version: "0.1.0"}, discoverTimeout: 5 * time.Second}
	for _, opt := range opts {
		opt.apply(&o)
	}
	if o.version != "" && o.version != mcp.Version20260728 && !isLegacy(o.version) {
		return nil, fmt.Errorf("mcp/client: unknown protocol version %q", o.version)
	}
	in := &inbox{o: &o}
	cn, err := t.dial(ctx, in)
	if err != nil {
		return nil, err
	}
	c := &Client{conn: cn, o: o, in: in, headers: map[string][]mcp.HeaderParam{}}
	if err := c.start(ctx); err != nil {
		cn.close()
		return nil, err
	}
	return c, nil
}

// Close ends the connection: a child process is stopped, in-flight calls fail.
func (c *Client) Close() error { return c.conn.close() }

// Modern reports whether the server is spoken to under 2026-07-28.
func (c *Client) Modern() bool { return c.modern }

// Version returns the protocol revision in use.
func (c *Client) Version() string { return c.version }

// ServerInfo returns the server's self-reported name and version.
func (c *Client) ServerInfo() mcp.Implementation { return c.info }

// Capabilities returns the server's capabilities object, as it sent it.
func (c *Client) Capabilities() json.RawMessage { return c.caps }

// Instructions returns the server's instructions for the model, if any.
func (c *Client) Instructions() string { return c.instructions }

// A CallOption configures one call.
type CallOption interface{ applyCall(*callOptions) }

type callOptionFunc func(*callOptions)

func (f callOptionFunc) applyCall(o *callOptions) { f(o) }

type callOptions struct {
	progress    func(Progress)
	notes       func(method string, params json.RawMessage)
	logLevel    string
	returnInput bool
	returnTask  bool
	clientCaps  json.RawMessage
	trace       [2]string // traceparent, tracestate
	cache       func(ttl time.Duration, private bool)
	undecodable func(item json.RawMessage, err error)
}

// WithUndecodable makes a list skip an item that does not decode (a tool whose name is not
// a string, say), and give it to fn, instead of ending with an error: a program that
// merges many servers' lists (relay gateway) keeps a server whose list has one bad item.
func WithUndecodable(fn func(item json.RawMessage, err error)) CallOption {
	return callOptionFunc(func(o *callOptions) { o.undecodable = fn })
}

// WithCache gives fn the ttlMs and cacheScope of each page of a list a 2026-07-28 server
// answers (MCP 2026-07-28, Server › Utilities › Caching): how long it may be reused, and
// whether only by this user. A page without them (the initialize generation's) is not
// reused: fn gets 0 and false.
func WithCache(fn func(ttl time.Duration, private bool)) CallOption {
	return callOptionFunc(func(o *callOptions) { o.cache = fn })
}

// WithTraceContext carries a W3C trace context in the request's _meta (traceparent and,
// when not empty, tracestate), so that the server's span of the call joins the caller's
// trace (the MCP semantic conventions of OpenTelemetry). An empty traceparent adds nothing.
func WithTraceContext(traceparent, tracestate string) CallOption {
	return callOptionFunc(func(o *callOptions) { o.trace = [2]string{traceparent, tracestate} })
}

// ReturnTask makes Call return a tools/call that the server runs as a task as the task's
// envelope (resultType "task") instead of waiting for the task: for a program that passes
// the task on to a client of its own, which follows it with tasks/get
// (io.modelcontextprotocol/tasks).
func ReturnTask() CallOption {
	return callOptionFunc(func(o *callOptions) { o.returnTask = true })
}

// WithClientCapabilities declares caps (a ClientCapabilities object) on a 2026-07-28 call
// as they are, instead of the capabilities the client's handlers give it and the tasks
// extension: for a program that passes on a request of a client of its own, whose server
// must ask only for what that client declared (MCP 2026-07-28, Basic › _meta: the
// capabilities of the request itself). A server then runs a tool as a task only if caps
// declare the extension; use ReturnTask to get the task. Under the initialize generation,
// which declares capabilities once at initialize, it does nothing.
func WithClientCapabilities(caps json.RawMessage) CallOption {
	return callOptionFunc(func(o *callOptions) { o.clientCaps = caps })
}

// ReturnInputRequired makes a 2026-07-28 call return an input_required result as it is
// (with Call, which returns raw results), instead of answering it through the client's
// handlers: for a program that passes the questions on to a client of its own, which
// sends the request again with inputResponses and the requestState untouched (MCP
// 2026-07-28, Basic › Patterns › Multi-round-trip requests).
func ReturnInputRequired() CallOption {
	return callOptionFunc(func(o *callOptions) { o.returnInput = true })
}

// WithLogLevel asks a 2026-07-28 server for the call's log messages at level and above
// (io.modelcontextprotocol/logLevel in the request's _meta, MCP 2026-07-28, Utilities ›
// Logging); they reach WithNotifications as notifications/message. The initialize
// generation sets a level for the whole session with logging/setLevel instead
// (SetLogLevel): there the option does nothing.
func WithLogLevel(level string) CallOption {
	return callOptionFunc(func(o *callOptions) { o.logLevel = level })
}

// Progress is one notifications/progress of a call.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// WithProgress asks the server for progress (a progressToken in the request's _meta) and
// gives each notifications/progress to fn, in order, on the connection's reading goroutine:
// fn must return quickly.
func WithProgress(fn func(Progress)) CallOption {
	return callOptionFunc(func(o *callOptions) { o.progress = fn })
}

// WithNotifications gives fn the other notifications the server ties to the call
// (notifications/message, for one), in order, on the connection's reading goroutine. Over
// HTTP a call's notifications come on its own response stream; over stdio or in memory a
// notification that names no request (a log message) can only be told apart when one call
// is in flight, and is dropped otherwise.
func WithNotifications(fn func(method string, params json.RawMessage)) CallOption {
	return callOptionFunc(func(o *callOptions) { o.notes = fn })
}

// request is one call to make.
type request struct {
	method  string
	params  map[string]any  // nil: none but _meta
	raw     json.RawMessage // params as a caller of Call wrote them, sent as they are but for _meta; or nil
	name    string
	headers map[string]string
}

// call sends r and returns the raw result. A 2026-07-28 result that asks for input is
// answered through the client's handlers and the request sent again, with a new id, until
// it completes (MCP 2026-07-28, Basic › Patterns › Multi-round-trip requests).
func (c *Client) call(ctx context.Context, r request, opts ...CallOption) (json.RawMessage, error) {
	var co callOptions
	for _, opt := range opts {
		opt.applyCall(&co)
	}
	params := r.params
	if c.lost.Load() && r.method != "initialize" {
		// The session ended, and starting the new one failed (a refusal for now, say):
		// this call starts it before it goes out, rather than going out with none.
		if err := c.reinitialize(ctx, ""); err != nil {
			return nil, err
		}
	}
	for round := 0; ; round++ {
		res, err := c.send(ctx, r, params, &co)
		var ended *sessionEndedError
		if errors.As(err, &ended) && r.method != "initialize" {
			// MCP 2025-11-25, Transports › Session Management: a 404 to a request of the
			// session means the server ended it; start a new one, and send the request
			// again, once.
			if err = c.reinitialize(ctx, ended.id); err == nil {
				res, err = c.send(ctx, r, params, &co)
			}
		}
		if err != nil {
			return nil, err
		}
		switch rt, err := resultType(res); {
		case err != nil:
			return nil, err
		case rt == "task" && r.method == "tools/call":
			return res, nil // CallTool or StartTool takes it
		case rt == "task":
			return nil, fmt.Errorf("mcp/client: the server answered %s with a task, which only tools/call may get", r.method)
		case rt != "input_required", co.returnInput:
			return res, nil
		case round == maxInputRounds:
			return nil, fmt.Errorf("%w: %s was still asking after %d rounds", ErrInputRequired, r.method, round)
		}
		if r.raw != nil { // a retry is written from the members
			params, r.raw = rawParams(r.raw), nil
		}
		if params, err = c.answerInputs(ctx, res, params); err != nil {
			return nil, err
		}
	}
}

// reinitialize starts a new session when the one named ended is still the current one:
// several calls may learn of the end at once, and the first starts the new session.
func (c *Client) reinitialize(ctx context.Context, ended string) error {
	h, ok := c.conn.(*httpConn)
	if !ok {
		return nil
	}
	c.reinit.Lock()
	defer c.reinit.Unlock()
	if sid := h.currentSession(); sid != "" && sid != ended {
		return nil // another call has started the new session
	}
	c.lost.Store(true) // until the new session is in place
	r, err := c.handshake(ctx, c.version)
	if err != nil {
		return err
	}
	if r.ProtocolVersion != c.version {
		return fmt.Errorf("mcp/client: the server's new session speaks %s, not %s as the one it ended", r.ProtocolVersion, c.version)
	}
	if err := c.initialized(ctx); err != nil {
		return err
	}
	c.lost.Store(false)
	return nil
}

// send sends r once, with params, under a new id, and returns the raw result.
func (c *Client) send(ctx context.Context, r request, params map[string]any, co *callOptions) (json.RawMessage, error) {
	id := jsonrpc.IntID(c.ids.Add(1))
	level := ""
	if c.modern {
		if level = co.logLevel; level == "" {
			c.mu.Lock()
			level = c.logLevel
			c.mu.Unlock()
		}
	}
	var body []byte
	if r.raw != nil && params == nil {
		// The caller's members as they are; its _meta, if any, replaced by the client's,
		// written at once.
		body = jsonrpc.SetMember(r.raw, "_meta", c.appendMeta(nil, co, level, id))
	} else {
		var err error
		if body, err = json.Marshal(params); err != nil {
			return nil, err
		}
		if params == nil {
			body = []byte(`{}`)
		}
		if meta := c.appendMeta(nil, co, level, id); len(meta) > len(`{}`) {
			body = jsonrpc.SetMember(body, "_meta", meta)
		}
	}
	out := &outgoing{id: id, method: r.method, params: body, version: c.version, modern: c.modern,
		name: r.name, headers: r.headers}
	if co.progress != nil || co.notes != nil {
		out.note = func(method string, params json.RawMessage) {
			if method == "notifications/progress" {
				if co.progress != nil {
					var p Progress
					if json.Unmarshal(params, &p) == nil {
						co.progress(p)
					}
				}
				return
			}
			if co.notes != nil {
				co.notes(method, params)
			}
		}
	}
	return c.conn.call(ctx, out)
}

// resultType reads a result's type (MCP 2026-07-28, Basic › resultType): a missing value
// is "complete", so legacy results pass; an unknown one is invalid.
func resultType(res json.RawMessage) (string, error) {
	raw := jsonrpc.Field(res, "resultType")
	if raw == nil {
		return "complete", nil
	}
	rt, _ := jsonrpc.Unquote(raw)
	switch rt {
	case "complete", "input_required", "task":
		return rt, nil
	}
	return "", fmt.Errorf("mcp/client: the server sent a result of unknown type %s", raw)
}

// appendMeta appends the request's _meta object to dst: under 2026-07-28 the protocol
// version, the capabilities (co's, or the client's own, encoded once) and the client info,
// and the log level; a progressToken, the request's id, when co asks for progress; and the
// trace context of WithTraceContext.
func (c *Client) appendMeta(dst []byte, co *callOptions, level string, id jsonrpc.ID) []byte {
	dst = append(dst, '{')
	if c.modern {
		c.metaOnce.Do(func() {
			caps := c.o.capabilities()
			caps["extensions"] = map[string]any{mcp.ExtensionTasks: map[string]any{}}
			c.capsJSON, _ = json.Marshal(caps)
			c.infoJSON, _ = json.Marshal(c.o.info)
		})
		caps := c.capsJSON
		if co.clientCaps != nil {
			caps = co.clientCaps
		}
		dst = jsonrpc.AppendString(dst, mcp.MetaProtocolVersion)
		dst = jsonrpc.AppendString(append(dst, ':'), c.version)
		dst = jsonrpc.AppendString(append(dst, ','), mcp.MetaClientCapabilities)
		dst = append(append(dst, ':'), caps...)
		dst = jsonrpc.AppendString(append(dst, ','), mcp.MetaClientInfo)
		dst = append(append(dst, ':'), c.infoJSON...)
		if level != "" {
			dst = jsonrpc.AppendString(append(dst, ','), mcp.MetaLogLevel)
			dst = jsonrpc.AppendString(append(dst, ':'), level)
		}
	}
	if co.progress != nil {
		if len(dst) > 1 {
			dst = append(dst, ',')
		}
		dst = jsonrpc.AppendString(dst, mcp.MetaProgressToken)
		dst = append(append(dst, ':'), id...) // unique: the request's own id
	}
	for i, k := range [2]string{"traceparent", "tracestate"} {
		if co.trace[0] != "" && co.trace[i] != "" {
			if len(dst) > 1 {
				dst = append(dst, ',')
			}
			dst = jsonrpc.AppendString(append(jsonrpc.AppendString(dst, k), ':'), co.trace[i])
		}
	}
	return append(dst, '}')
}

// notify sends a notification.
func (c *Client) notify(ctx context.Context, method string, params any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.conn.notify(ctx, &outgoing{method: method, params: body, version: c.version, modern: c.modern})
}
