package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

// session is one HTTP connection's (or legacy session's) view of the bridge.
type session struct {
	b          *Bridge
	peer       *runtime.Peer
	legacy     bool                  // the client opened with initialize
	version    string                // that initialize negotiated
	kept       *runtime.SessionState // where the transport keeps its state (kept.go); nil: nowhere
	rev        uint64                // of the state kept: the last saved or taken
	clientCaps json.RawMessage
	logLevel   string
	pinned     *childConn // a legacy session's child of the pool, chosen at initialize, for its life
	pinIndex   int
	own        *childSlot      // a legacy session's own child, when the children are legacy too
	listener   *legacyListener // a legacy session's listen on its pinned 2026-07-28 child
	subs       []string        // and the resources it subscribed to
}

// Close releases the session's pin, or stops its own child; the runtime calls it when the
// session ends.
func (s *session) Close() {
	if s.listener != nil {
		s.listener.close()
	}
	if s.pinned != nil {
		s.b.pins[s.pinIndex].Add(-1)
	}
	if s.own != nil {
		if c := s.own.close(); c != nil {
			s.b.own.release(c)
		}
	}
}

// Notification passes the client's notifications (initialized, roots list changed, …) on to
// the session's own child; the others concern nobody.
func (s *session) Notification(method string, params json.RawMessage) {
	if s.own == nil {
		return
	}
	if c := s.own.get(); c != nil {
		c.notify(method, params)
	}
}

func (s *session) Route(req *runtime.Request) runtime.Route {
	meta := jsonrpc.Field(req.Params, "_meta")
	modern := jsonrpc.Field(meta, mcp.MetaProtocolVersion) != nil
	if s.legacy && s.pinned == nil && !s.b.legacy {
		s.attach() // no child of the pool was up when the session began here
	}
	switch {
	case modern && req.Method == "server/discover" && s.b.legacy:
		return runtime.Route{Result: s.b.discoverFromInit()}
	case modern && req.Method == "subscriptions/listen" && !s.b.legacy:
		// A stream for the connection's life; it counts against the budget as any request does.
		forward := s.forward(false, false)
		return runtime.Route{Handler: func(ctx context.Context, rt *runtime.Request) (any, error) {
			return s.listen(ctx, rt, forward)
		}}
	case modern && req.Method == "subscriptions/listen":
		return runtime.Route{Handler: s.listenLegacy}
	case modern && s.b.legacy && mrtrMethods[req.Method]:
		return runtime.Route{Handler: s.mrtr}
	case modern:
		return runtime.Route{Handler: s.forward(s.b.legacy, false)}
	case req.Method == "initialize" && s.b.own != nil && s.own == nil:
		return s.claim(req)
	case s.own != nil:
		return runtime.Route{Handler: s.forwardOwn(s.own)}
	case req.Method == "initialize":
		return s.initialize(req)
	case !s.legacy && req.Method != "ping":
		return runtime.Route{Err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "Invalid params: params._meta lacks io.modelcontextprotocol/protocolVersion; send it, or initialize first"}}
	case req.Method == "ping":
		return runtime.Route{Result: json.RawMessage(`{}`)}
	case req.Method == "logging/setLevel" && !s.b.legacy:
		var level string
		json.Unmarshal(jsonrpc.Field(req.Params, "level"), &level)
		was := s.logLevel
		s.logLevel = level // sent with every request as _meta logLevel
		return s.keep(func() { s.logLevel = was })
	case (req.Method == "resources/subscribe" || req.Method == "resources/unsubscribe") && !s.b.legacy:
		// Delivered by the session's listen on its child, re-opened with the new set.
		var uri string
		json.Unmarshal(jsonrpc.Field(req.Params, "uri"), &uri)
		i, had := slices.BinarySearch(s.subs, uri)
		if had == (req.Method == "resources/subscribe") {
			return runtime.Route{Result: json.RawMessage(`{}`)} // nothing changes
		}
		was := s.subs
		if had {
			s.subs = slices.Delete(slices.Clone(s.subs), i, i+1)
		} else {
			s.subs = slices.Insert(slices.Clone(s.subs), i, uri)
		}
		r := s.keep(func() { s.subs = was })
		if r.Err == nil {
			s.subscribed()
		}
		return r
	}
	return runtime.Route{Handler: s.forward(false, !s.b.legacy)}
}

// claim gives a legacy session on legacy children its own child and initializes it with the
// client's initialize: the child answers the handshake, from what the client declared.
func (s *session) claim(req *runtime.Request) runtime.Route {
	s.legacy = true
	slot := newChildSlot()
	s.own = slot
	peer := s.peer
	return runtime.Route{Handler: func(ctx context.Context, rt *runtime.Request) (any, error) {
		c, err := s.b.own.claim(ctx)
		if err == nil {
			err = c.attach(toPeer(peer))
		}
		if err != nil {
			if c != nil {
				s.b.own.release(c)
			}
			slot.fill(nil, err)
			return nil, err
		}
		if !slot.fill(c, nil) { // the session ended meanwhile
			s.b.own.release(c)
			return nil, errChildGone
		}
		return s.forwardOwn(slot)(ctx, rt)
	}}
}

// forwardOwn returns the handler that sends a request of a legacy session to the child in
// its slot, as it is: only the progress token is the child's own, and put back.
func (s *session) forwardOwn(slot *childSlot) runtime.Handler {
	return func(ctx context.Context, rt *runtime.Request) (any, error) {
		c, err := slot.wait(ctx)
		if err != nil {
			return nil, err
		}
		params := rt.Params
		if params == nil {
			params = json.RawMessage(`{}`)
		}
		token := jsonrpc.Field(jsonrpc.Field(params, "_meta"), "progressToken")
		notify := func(method string, p json.RawMessage) {
			if token != nil && method == "notifications/progress" {
				p = jsonrpc.SetMember(p, "progressToken", token) // the client's own token
			}
			rt.Notify(method, p)
		}
		callCtx, callParams, end := s.b.tel.StartCall(ctx, rt.Method, params)
		res, rpcErr, err := c.call(callCtx, askOn(rt), rt.Method, callParams, notify)
		switch {
		case err != nil:
			end(err)
			return nil, err
		case rpcErr != nil:
			end(rpcErr)
			return nil, rpcErr
		}
		end(nil)
		return res, nil
	}
}

// initialize answers a legacy client from what the children declared.
func (s *session) initialize(req *runtime.Request) runtime.Route {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
	}
	if s.legacy {
		return runtime.Route{Err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "Invalid request: this session is already initialized; start a new one to initialize again"}}
	}
	json.Unmarshal(req.Params, &p)
	version := p.ProtocolVersion
	if !slices.Contains(mcp.LegacyVersions, version) {
		version = mcp.LegacyVersions[0]
	}
	s.begin(version, p.Capabilities)
	if err := s.save(); err != nil { // a session no instance can find is not begun here either
		s.Close()
		s.legacy, s.pinned, s.listener = false, nil, nil
		return runtime.Route{Err: err}
	}
	caps := s.b.now().caps
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	caps = withoutMembers(caps, "extensions") // 2026-07-28's; 2025-11-25 has none
	return runtime.Route{Result: map[string]json.RawMessage{
		"protocolVersion": mustJSON(version), "capabilities": caps, "serverInfo": s.b.now().info,
	}}
}

// begin starts the legacy session an initialize negotiated, here or on another instance
// of a fleet (TakeState).
func (s *session) begin(version string, clientCaps json.RawMessage) {
	s.legacy, s.version, s.clientCaps = true, version, clientCaps
	if s.clientCaps == nil {
		s.clientCaps = json.RawMessage(`{}`)
	}
	s.attach()
}

// attach pins the session to a child of this pool, on which it holds a listen for its
// subscriptions: every request of the session goes there (restarted in place).
func (s *session) attach() {
	if s.pinned == nil {
		s.pinned, s.pinIndex = s.b.pin()
	}
	if s.pinned != nil && s.listener == nil && !s.b.legacy {
		s.listener = startLegacyListener(s.b.ctx, s.pinned, s.peer, s.b.now().caps, s.clientCaps)
		s.subscribed()
	}
}

// subscribed re-opens the session's listen with its subscriptions now.
func (s *session) subscribed() {
	if s.listener != nil {
		s.listener.update(s.b.now().caps, s.clientCaps, s.subs)
	}
}

func (b *Bridge) discoverFromInit() json.RawMessage {
	srv := b.now()
	out, _ := json.Marshal(map[string]any{
		"resultType": "complete", "supportedVersions": mcp.ModernVersions,
		"capabilities": modernCaps(srv.caps), "ttlMs": 0, "cacheScope": "public",
		"_meta": map[string]json.RawMessage{mcp.MetaServerInfo: srv.info},
	})
	return out
}

// forward returns the handler that sends a request to a child. stripMeta: the client is
// modern, the child legacy; addMeta: the client is legacy, the child modern.
func (s *session) forward(stripMeta, addMeta bool) runtime.Handler {
	// Read on the dispatcher's goroutine, where the session lives.
	pinned, clientCaps, logLevel := s.pinned, s.clientCaps, s.logLevel
	return func(ctx context.Context, rt *runtime.Request) (any, error) {
		c := pinned
		if c == nil {
			c = s.b.pick()
		}
		if c == nil {
			return nil, s.b.unavailable()
		}
		params := rt.Params
		if params == nil {
			params = json.RawMessage(`{}`)
		}
		if state := jsonrpc.Field(params, "requestState"); state != nil {
			if inner, owner := s.b.unpin(state); owner != nil {
				params, c = jsonrpc.SetMember(params, "requestState", inner), owner // back to the child that signed it
			}
		}
		var clientTaskID json.RawMessage // the client's name for the task, put back in the answer
		if taskMethods[rt.Method] && !stripMeta {
			inner, owner := s.b.unpinTask(ctx, jsonrpc.Field(params, "taskId"))
			switch {
			case owner != nil:
				clientTaskID = jsonrpc.Field(params, "taskId")
				params, c = jsonrpc.SetMember(params, "taskId", inner), owner // back to the child running it
			case declaresTasks(params):
				// Not an id the bridge issued to this caller: never passed on, since the
				// child's own ids, which it sees through, name tasks of every caller.
				return nil, errNoTask(jsonrpc.Field(params, "taskId"))
			}
			// Without the extension the child refuses the method (-32021) before any id.
		}
		var taskNames map[string]string // a listen's tasks: the child's ids, to the client's
		if rt.Method == "subscriptions/listen" && !stripMeta {
			params, c, taskNames = s.b.unpinListen(ctx, params, c)
		}
		token := jsonrpc.Field(jsonrpc.Field(params, "_meta"), "progressToken")
		switch {
		case stripMeta:
			params = jsonrpc.SetMember(params, "_meta", keepOnly(jsonrpc.Field(params, "_meta"), "progressToken"))
		case addMeta:
			meta := map[string]json.RawMessage{
				mcp.MetaProtocolVersion:    mustJSON(mcp.Version20260728),
				mcp.MetaClientCapabilities: clientCaps,
			}
			if token != nil {
				meta["progressToken"] = token
			}
			if logLevel != "" {
				meta[mcp.MetaLogLevel] = mustJSON(logLevel)
			}
			params = jsonrpc.SetMember(params, "_meta", mustJSON(meta))
		}
		notify := func(method string, p json.RawMessage) {
			if token != nil && method == "notifications/progress" {
				p = jsonrpc.SetMember(p, "progressToken", token) // the client's own token
			}
			if meta := jsonrpc.Field(p, "_meta"); jsonrpc.Field(meta, mcp.MetaSubscriptionID) != nil {
				p = jsonrpc.SetMember(p, "_meta", jsonrpc.SetMember(meta, mcp.MetaSubscriptionID, json.RawMessage(rt.ID))) // the client's listen id
			}
			if taskNames != nil {
				p = renameTasks(method, p, taskNames)
			}
			if stripMeta && method == "notifications/message" && !wantsLog(rt.Params, p) {
				return // a legacy child logs as it likes; a 2026-07-28 client only at its request
			}
			rt.Notify(method, p)
		}
		for round := 0; ; round++ {
			callCtx, callParams, end := s.b.tel.StartCall(ctx, rt.Method, params)
			res, rpcErr, err := c.call(callCtx, nil, rt.Method, callParams, notify)
			if err != nil {
				end(err)
				return nil, s.b.callError(err)
			}
			if rpcErr != nil {
				end(rpcErr)
				if stripMeta || addMeta { // the generations differ: the client's own code
					rpcErr = resourceNotFound(rt.Method, rpcErr, stripMeta)
				}
				return nil, rpcErr
			}
			end(nil)
			if stripMeta {
				res = modernize(res, s.b.now().info)
			}
			switch {
			case clientTaskID != nil && jsonrpc.Field(res, "taskId") != nil:
				res = jsonrpc.SetMember(res, "taskId", clientTaskID)
			case !stripMeta && string(jsonrpc.Field(res, "resultType")) == `"task"`:
				res = s.b.pinTask(ctx, res, s.b.index(c))
			}
			inputRequired := string(jsonrpc.Field(res, "resultType")) == `"input_required"`
			if !addMeta && inputRequired {
				if state := jsonrpc.Field(res, "requestState"); state != nil {
					res = jsonrpc.SetMember(res, "requestState", pin(state, s.b.index(c)))
				}
			}
			if !addMeta {
				return res, nil
			}
			if !inputRequired || round > 8 {
				return legacyResult(res), nil
			}
			// A legacy client cannot answer input_required: ask it directly, then retry.
			answers, err := askClient(ctx, rt, jsonrpc.Field(res, "inputRequests"))
			if err != nil {
				return nil, err
			}
			params = jsonrpc.SetMember(params, "inputResponses", answers)
			if state := jsonrpc.Field(res, "requestState"); state != nil {
				params = jsonrpc.SetMember(params, "requestState", state)
			}
		}
	}
}

// listen forwards a subscriptions/listen to a child for as long as the client keeps it. When
// the bridge shuts down, the child's stream is cancelled and the client's is ended as DIGEST
// A9 asks of a graceful end: a complete result naming the subscription.
func (s *session) listen(ctx context.Context, rt *runtime.Request, forward runtime.Handler) (any, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // ends with the request: cancel above runs when listen returns
		select {
		case <-rt.Draining():
			cancel()
		case <-ctx.Done():
		}
	}()
	res, err := forward(ctx, rt)
	select {
	case <-rt.Draining():
		return mustJSON(map[string]any{"resultType": "complete",
			"_meta": map[string]json.RawMessage{mcp.MetaSubscriptionID: json.RawMessage(rt.ID)}}), nil
	default:
		return res, err
	}
}

// askClient sends each input request to the legacy client as a server-to-client request.
func askClient(ctx context.Context, rt *runtime.Request, requests json.RawMessage) (json.RawMessage, error) {
	var asks map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(requests, &asks); err != nil {
		return nil, fmt.Errorf("bridge: malformed inputRequests: %w", err)
	}
	answers := map[string]json.RawMessage{}
	for key, a := range asks {
		res, err := rt.Call(ctx, a.Method, a.Params)
		if err != nil {
			return nil, err
		}
		answers[key] = res
	}
	return mustJSON(answers), nil
}

// modernize adds resultType and serverInfo to a legacy child's result.
func modernize(res json.RawMessage, info json.RawMessage) json.RawMessage {
	if jsonrpc.Field(res, "resultType") == nil {
		res = jsonrpc.SetMember(res, "resultType", json.RawMessage(`"complete"`))
	}
	return jsonrpc.SetMember(res, "_meta", jsonrpc.SetMember(jsonrpc.Field(res, "_meta"), mcp.MetaServerInfo, info))
}

func keepOnly(meta json.RawMessage, key string) json.RawMessage {
	if v := jsonrpc.Field(meta, key); v != nil {
		return mustJSON(map[string]json.RawMessage{key: v})
	}
	return json.RawMessage(`{}`)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// childSlot is a legacy session's own child: set by the handler of its initialize, once
// claimed; read by the session's other requests and its notifications.
type childSlot struct {
	ready  chan struct{} // closed once filled
	mu     sync.Mutex
	c      *childConn
	err    error
	filled bool
	closed bool
}

func newChildSlot() *childSlot { return &childSlot{ready: make(chan struct{})} }

// fill sets the child, or why there is none; false when the session has ended meanwhile (the
// caller hands the child back).
func (s *childSlot) fill(c *childConn, err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filled {
		return false
	}
	s.filled = true
	if s.closed {
		close(s.ready)
		return false
	}
	s.c, s.err = c, err
	close(s.ready)
	return true
}

// get returns the child if it is there now.
func (s *childSlot) get() *childConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// wait returns the child once the session's initialize has claimed it.
func (s *childSlot) wait(ctx context.Context) (*childConn, error) {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.c != nil:
		return s.c, nil
	case s.err != nil:
		return nil, s.err
	}
	return nil, errChildGone
}

// close empties the slot at the session's end and returns the child to hand back, if any.
func (s *childSlot) close() *childConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	c := s.c
	s.c = nil
	return c
}
