package bridge

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"sync"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

// A 2026-07-28 client on children of the initialize generation: a child that asks its client
// something while serving a tools/call, prompts/get or resources/read (sampling, elicitation,
// roots) does it with a request of its own, which 2026-07-28 has no place for. The bridge
// turns it into an input_required result (MCP 2026-07-28, Basic › Patterns › Multi
// Round-Trip Requests): the child's call is parked, still waiting for its answer; the
// client's retry, which carries the requestState the bridge gave, hands the child the
// client's answer and waits for what comes next: the result, or another question. A request
// that did not declare the capability the question needs is answered with -32021 and
// data.requiredCapabilities (Basic › _meta), and the child with an error. A parked call
// whose retry does not come within parkFor is cancelled.

// parkFor is how long a parked call waits for the client's retry.
const parkFor = 2 * time.Minute

// inputKey names the one input request of an input_required result the bridge makes.
const inputKey = "relay"

// mrtrMethods are the methods that may answer input_required.
var mrtrMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// parked is a child's call waiting on its client: events carries what the call does next
// (a question, or its end), each question with the channel its answer goes to.
type parked struct {
	events chan parkEvent
	cancel context.CancelFunc
	ask    *question // the question the client was given, awaiting its answer
	timer  *time.Timer
}

type question struct {
	method string
	params json.RawMessage
	answer chan answer // buffered
}

type answer struct {
	result json.RawMessage
	err    error
}

type parkEvent struct {
	ask    *question
	result json.RawMessage
	rpcErr *jsonrpc.Error
	err    error
}

// parking owns the parked calls, by requestState.
type parking struct {
	mu     sync.Mutex
	calls  map[string]*parked
	closed bool
	wg     sync.WaitGroup // the parked calls' goroutines
}

// mrtr serves a 2026-07-28 client's tools/call, prompts/get or resources/read on legacy
// children: a first round, or a retry that carries a requestState of the bridge's.
func (s *session) mrtr(ctx context.Context, rt *runtime.Request) (any, error) {
	clientCaps := jsonrpc.Field(jsonrpc.Field(rt.Params, "_meta"), mcp.MetaClientCapabilities)
	var state string
	json.Unmarshal(jsonrpc.Field(rt.Params, "requestState"), &state)
	if state != "" {
		p := s.b.parking.take(state)
		if p == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: "Invalid params: requestState is unknown or has expired; send the request again without it"}
		}
		ans := jsonrpc.Field(jsonrpc.Field(rt.Params, "inputResponses"), inputKey)
		if ans == nil { // not answered: ask again (MRTR: the server may ask again)
			return s.b.parking.park(p, p.ask, s.b.now().info)
		}
		p.ask.answer <- answer{result: ans}
		p.ask = nil
		return s.next(ctx, p, clientCaps)
	}

	c := s.b.pick()
	if c == nil {
		return nil, s.b.unavailable()
	}
	params := rt.Params
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	token := jsonrpc.Field(jsonrpc.Field(params, "_meta"), "progressToken")
	params = jsonrpc.SetMember(params, "_meta", keepOnly(jsonrpc.Field(params, "_meta"), "progressToken"))
	params = withoutMembers(params, "inputResponses", "requestState")

	callCtx, cancel := context.WithCancel(s.b.ctx) // the call outlives this round
	p := &parked{events: make(chan parkEvent, 1), cancel: cancel}
	ask := func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		q := &question{method: method, params: params, answer: make(chan answer, 1)}
		select {
		case p.events <- parkEvent{ask: q}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case a := <-q.answer:
			return a.result, a.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	// Notifications of the first round reach the client; later ones have no stream to go to.
	round := rt
	var roundMu sync.Mutex
	notify := func(method string, np json.RawMessage) {
		roundMu.Lock()
		r := round
		roundMu.Unlock()
		if r == nil {
			return
		}
		if token != nil && method == "notifications/progress" {
			np = jsonrpc.SetMember(np, "progressToken", token)
		}
		if method == "notifications/message" && !wantsLog(rt.Params, np) {
			return
		}
		r.Notify(method, np)
	}
	defer func() { roundMu.Lock(); round = nil; roundMu.Unlock() }()
	if !s.b.parking.start(func() {
		res, rpcErr, err := c.call(callCtx, ask, rt.Method, params, notify)
		select {
		case p.events <- parkEvent{result: res, rpcErr: rpcErr, err: err}:
		case <-callCtx.Done(): // abandoned: nobody will read it
		}
	}) {
		cancel()
		return nil, s.b.unavailable()
	}
	return s.next(ctx, p, clientCaps)
}

// next waits for what the parked call does next, within this round.
func (s *session) next(ctx context.Context, p *parked, clientCaps json.RawMessage) (any, error) {
	select {
	case <-ctx.Done(): // the client went away: the call is abandoned
		p.cancel()
		return nil, ctx.Err()
	case ev := <-p.events:
		if ev.ask == nil {
			p.cancel()
			switch {
			case ev.err != nil:
				return nil, s.b.callError(ev.err)
			case ev.rpcErr != nil:
				return nil, resourceNotFound("resources/read", ev.rpcErr, true)
			}
			return modernize(ev.result, s.b.now().info), nil
		}
		capability, ok := questionCapabilities[ev.ask.method]
		if !ok {
			ev.ask.answer <- answer{err: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
				Message: "Method not found: the bridge cannot ask a 2026-07-28 client " + ev.ask.method}}
			return s.next(ctx, p, clientCaps)
		}
		if jsonrpc.Field(clientCaps, capability) == nil {
			ev.ask.answer <- answer{err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "Internal error: the client did not declare " + capability}}
			p.cancel()
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapability,
				Message: "Missing required client capability: the server asks the client for " + capability + ", which this request did not declare",
				Data:    map[string]any{"requiredCapabilities": map[string]any{capability: map[string]any{}}}}
		}
		return s.b.parking.park(p, ev.ask, s.b.now().info)
	}
}

// questionCapabilities maps what a child may ask to the client capability it needs.
var questionCapabilities = map[string]string{
	"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots",
}

// start runs a parked call's goroutine, unless the bridge is closing.
func (k *parking) start(fn func()) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return false
	}
	k.wg.Go(fn)
	return true
}

// park keeps p until its retry, and answers this round with input_required.
func (k *parking) park(p *parked, q *question, info json.RawMessage) (any, error) {
	b := make([]byte, 18)
	rand.Read(b)
	state := "relaypark." + base64.RawURLEncoding.EncodeToString(b)
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		p.cancel()
		return nil, errBridgeClosed
	}
	if k.calls == nil {
		k.calls = map[string]*parked{}
	}
	p.ask = q
	k.calls[state] = p
	p.timer = time.AfterFunc(parkFor, func() {
		if k.take(state) != nil {
			p.cancel()
		}
	})
	k.mu.Unlock()
	return mustJSON(map[string]any{"resultType": "input_required",
		"inputRequests": map[string]any{inputKey: map[string]any{"method": q.method, "params": q.params}},
		"requestState":  state, "_meta": map[string]json.RawMessage{mcp.MetaServerInfo: info}}), nil
}

// take removes and returns the call parked under state.
func (k *parking) take(state string) *parked {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.calls[state]
	if p != nil {
		delete(k.calls, state)
		p.timer.Stop()
	}
	return p
}

// close cancels every parked call (their children are told, and need not wait for the
// drain) and refuses new ones; wait then waits for their goroutines, once the children are
// closed.
func (k *parking) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	for state, p := range k.calls {
		p.timer.Stop()
		p.cancel()
		delete(k.calls, state)
	}
}

func (k *parking) wait() { k.wg.Wait() }
