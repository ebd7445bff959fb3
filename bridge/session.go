package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/supervise"
)

// session is one HTTP connection's (or legacy session's) view of the bridge.
type session struct {
	b          *Bridge
	legacy     bool // the client opened with initialize
	clientCaps json.RawMessage
	logLevel   string
	pinned     *supervise.Client // a legacy session's child, chosen at initialize, for its life
	pinIndex   int
}

// Close releases the session's pin; the runtime calls it when the session ends.
func (s *session) Close() {
	if s.pinned != nil {
		s.b.pins[s.pinIndex].Add(-1)
	}
}

func (s *session) Notification(method string, params json.RawMessage) {}

func (s *session) Route(req *runtime.Request) runtime.Route {
	meta := jsonrpc.Field(req.Params, "_meta")
	modern := jsonrpc.Field(meta, mcp.MetaProtocolVersion) != nil
	switch {
	case modern && req.Method == "server/discover" && s.b.legacy:
		return runtime.Route{Result: s.b.discoverFromInit()}
	case modern && req.Method == "subscriptions/listen" && !s.b.legacy:
		// A stream for the connection's life; it counts against the budget as any request does.
		return runtime.Route{Handler: s.listen}
	case modern:
		return runtime.Route{Handler: s.forward(s.b.legacy, false)}
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
		s.logLevel = level // sent with every request as _meta logLevel
		return runtime.Route{Result: json.RawMessage(`{}`)}
	case (req.Method == "resources/subscribe" || req.Method == "resources/unsubscribe") && !s.b.legacy:
		return runtime.Route{Result: json.RawMessage(`{}`)} // not yet delivered through the bridge
	}
	return runtime.Route{Handler: s.forward(false, !s.b.legacy)}
}

// initialize answers a legacy client from what the children declared.
func (s *session) initialize(req *runtime.Request) runtime.Route {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
	}
	json.Unmarshal(req.Params, &p)
	version := p.ProtocolVersion
	if !slices.Contains(mcp.LegacyVersions, version) {
		version = mcp.LegacyVersions[0]
	}
	s.legacy, s.clientCaps = true, p.Capabilities
	if s.pinned == nil {
		s.pinned, s.pinIndex = s.b.pin() // every request of this session goes there (restarted in place)
	}
	if s.clientCaps == nil {
		s.clientCaps = json.RawMessage(`{}`)
	}
	caps := s.b.caps
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	return runtime.Route{Result: map[string]json.RawMessage{
		"protocolVersion": mustJSON(version), "capabilities": caps, "serverInfo": s.b.info,
	}}
}

func (b *Bridge) discoverFromInit() json.RawMessage {
	out, _ := json.Marshal(map[string]any{
		"resultType": "complete", "supportedVersions": mcp.ModernVersions,
		"capabilities": b.caps, "ttlMs": 0, "cacheScope": "public",
		"_meta": map[string]json.RawMessage{mcp.MetaServerInfo: b.info},
	})
	return out
}

// forward returns the handler that sends a request to a child. stripMeta: the client is
// modern, the child legacy; addMeta: the client is legacy, the child modern.
func (s *session) forward(stripMeta, addMeta bool) runtime.Handler {
	pinned := s.pinned // read on the dispatcher's goroutine, where the session lives
	return func(ctx context.Context, rt *runtime.Request) (any, error) {
		c := pinned
		if c == nil {
			c = s.b.pick()
		}
		if c == nil {
			return nil, &jsonrpc.Error{Code: mcp.CodeServerBusy, Message: "Server busy: no child is up; retry later",
				Data: map[string]any{"retryable": true}}
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
		token := jsonrpc.Field(jsonrpc.Field(params, "_meta"), "progressToken")
		switch {
		case stripMeta:
			params = jsonrpc.SetMember(params, "_meta", keepOnly(jsonrpc.Field(params, "_meta"), "progressToken"))
		case addMeta:
			meta := map[string]json.RawMessage{
				mcp.MetaProtocolVersion:    mustJSON(mcp.Version20260728),
				mcp.MetaClientCapabilities: s.clientCaps,
			}
			if token != nil {
				meta["progressToken"] = token
			}
			if s.logLevel != "" {
				meta[mcp.MetaLogLevel] = mustJSON(s.logLevel)
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
			rt.Notify(method, p)
		}
		for round := 0; ; round++ {
			callCtx, callParams, end := s.b.tel.StartCall(ctx, rt.Method, params)
			res, rpcErr, err := c.Call(callCtx, rt.Method, callParams, notify)
			if err != nil {
				end(err)
				return nil, err
			}
			if rpcErr != nil {
				end(rpcErr)
				return nil, rpcErr
			}
			end(nil)
			if stripMeta {
				res = modernize(res, s.b.info)
			}
			inputRequired := string(jsonrpc.Field(res, "resultType")) == `"input_required"`
			if !addMeta && inputRequired {
				if state := jsonrpc.Field(res, "requestState"); state != nil {
					res = jsonrpc.SetMember(res, "requestState", pin(state, s.b.index(c)))
				}
			}
			if !addMeta || !inputRequired || round > 8 {
				return res, nil
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
func (s *session) listen(ctx context.Context, rt *runtime.Request) (any, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // ends with the request: cancel above runs when listen returns
		select {
		case <-rt.Draining():
			cancel()
		case <-ctx.Done():
		}
	}()
	res, err := s.forward(false, false)(ctx, rt)
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
