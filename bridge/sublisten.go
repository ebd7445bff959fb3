package bridge

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

// legacyListener delivers what a 2026-07-28 child announces to an initialize-generation
// session pinned to it: the session's resource subscriptions (resources/subscribe,
// resources/unsubscribe, MCP 2025-11-25 Server › Resources › Subscriptions) and the list
// changes the child declared become one subscriptions/listen (MCP 2026-07-28, Basic ›
// Patterns › Subscriptions) held open on the child, re-opened with the new filter whenever
// the subscriptions change; its notifications go to the session's GET stream without the
// listen's subscription id, its acknowledgement nowhere.
type legacyListener struct {
	mu      sync.Mutex
	params  json.RawMessage // the listen's params now
	changed chan struct{}   // room for one: params changed since the listen was opened
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// startLegacyListener opens the listen on c under ctx, with the capabilities the session's
// client declared, and keeps it open until stop.
func startLegacyListener(ctx context.Context, c *childConn, peer *runtime.Peer, childCaps, clientCaps json.RawMessage) *legacyListener {
	ctx, stop := context.WithCancel(ctx)
	l := &legacyListener{params: listenParams(childCaps, clientCaps, nil), changed: make(chan struct{}, 1), stop: stop}
	l.changed <- struct{}{}
	notify := func(method string, params json.RawMessage) {
		if method == "notifications/subscriptions/acknowledged" {
			return
		}
		if meta := jsonrpc.Field(params, "_meta"); meta != nil {
			meta = withoutMembers(meta, mcp.MetaSubscriptionID)
			if string(meta) == "{}" {
				params = withoutMembers(params, "_meta")
			} else {
				params = jsonrpc.SetMember(params, "_meta", meta)
			}
		}
		peer.Notify(method, params) // fails only once the session has ended
	}
	l.done.Go(func() {
		for {
			select {
			case <-l.changed:
			case <-ctx.Done():
				return
			}
			l.mu.Lock()
			params := l.params
			l.mu.Unlock()
			if string(jsonrpc.Field(params, "notifications")) == "{}" {
				continue // nothing to listen for (yet)
			}
			streamCtx, cancel := context.WithCancel(ctx)
			ended := make(chan struct{})
			l.done.Go(func() {
				defer close(ended)
				c.call(streamCtx, nil, "subscriptions/listen", params, notify)
			})
			select {
			case <-l.changed: // the subscriptions changed: the same listen, a new filter
				select {
				case l.changed <- struct{}{}: // for the loop's next turn
				default: // update has said so again already
				}
			case <-ctx.Done():
			case <-ended: // the child is gone for good: wait for the next change, or the end
			}
			cancel()
			<-ended
		}
	})
	return l
}

// update re-opens the listen with the session's subscriptions now; it never blocks.
func (l *legacyListener) update(childCaps, clientCaps json.RawMessage, uris []string) {
	p := listenParams(childCaps, clientCaps, uris)
	l.mu.Lock()
	l.params = p
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default: // a change not yet taken: it will read these params
	}
}

// close ends the listen and waits for it.
func (l *legacyListener) close() {
	l.stop()
	l.done.Wait()
}

// listenParams asks for the list changes the child declared and the resources the session
// subscribed to (when the child declared subscriptions).
func listenParams(childCaps, clientCaps json.RawMessage, uris []string) json.RawMessage {
	filter := map[string]any{}
	for _, l := range [...]string{"tools", "prompts", "resources"} {
		if string(jsonrpc.Field(jsonrpc.Field(childCaps, l), "listChanged")) == "true" {
			filter[l+"ListChanged"] = true
		}
	}
	if string(jsonrpc.Field(jsonrpc.Field(childCaps, "resources"), "subscribe")) == "true" && len(uris) > 0 {
		filter["resourceSubscriptions"] = slices.Clip(append([]string{}, uris...))
	}
	if clientCaps == nil {
		clientCaps = json.RawMessage(`{}`)
	}
	return mustJSON(map[string]any{"notifications": filter, "_meta": map[string]json.RawMessage{
		mcp.MetaProtocolVersion: mustJSON(mcp.Version20260728), mcp.MetaClientCapabilities: clientCaps}})
}
