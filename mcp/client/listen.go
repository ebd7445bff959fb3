package client

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// A listener is one Listen in progress under the initialize generation, where the changes
// come as notifications that belong to no call.
type listener struct {
	filter mcp.SubscriptionFilter
	fn     func(method string, params json.RawMessage)
	// mu keeps fn's calls one at a time and in order: Listen's acknowledgement before
	// any change the reading goroutine hands over.
	mu sync.Mutex
}

// wants reports whether the filter asks for the notification.
func (l *listener) wants(method string, params json.RawMessage) bool {
	switch method {
	case "notifications/tools/list_changed":
		return l.filter.ToolsListChanged
	case "notifications/prompts/list_changed":
		return l.filter.PromptsListChanged
	case "notifications/resources/list_changed":
		return l.filter.ResourcesListChanged
	case "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		json.Unmarshal(params, &p)
		return slices.Contains(l.filter.ResourceSubscriptions, p.URI)
	}
	return false
}

// unasked reports whether method is a notification of a change, which under the
// initialize generation belongs to no call.
func unasked(method string) bool {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed",
		"notifications/resources/list_changed", "notifications/resources/updated":
		return true
	}
	return false
}

// subscriptionOf returns the subscription id a 2026-07-28 notification carries in its
// _meta: the id of the subscriptions/listen request it belongs to.
func subscriptionOf(params json.RawMessage) []byte {
	return jsonrpc.Field(jsonrpc.Field(params, "_meta"), mcp.MetaSubscriptionID)
}

// notified gives a change notification to every listener that asked for it, in order, on
// the transport's reading goroutine.
func (in *inbox) notified(method string, params json.RawMessage) {
	in.mu.Lock()
	ls := make([]*listener, 0, len(in.listeners))
	for l := range in.listeners {
		ls = append(ls, l)
	}
	in.mu.Unlock()
	for _, l := range ls {
		if l.wants(method, params) {
			l.mu.Lock()
			l.fn(method, params)
			l.mu.Unlock()
		}
	}
}

// elicitationComplete gives the id of notifications/elicitation/complete to the client's
// handler, if it has one, on the transport's reading goroutine; it reports whether method
// is that notification, which belongs to no call.
func (in *inbox) elicitationComplete(method string, params json.RawMessage) bool {
	if method != "notifications/elicitation/complete" {
		return false
	}
	var p struct {
		ElicitationID string `json:"elicitationId"`
	}
	if json.Unmarshal(params, &p) == nil && p.ElicitationID != "" && in.o.elicitDone != nil {
		in.o.elicitDone(p.ElicitationID)
	}
	return true
}

func (in *inbox) add(l *listener) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.listeners == nil {
		in.listeners = map[*listener]struct{}{}
	}
	in.listeners[l] = struct{}{}
}

func (in *inbox) remove(l *listener) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.listeners, l)
}

// Listen asks the server to tell of the changes filter names and gives each notification
// of one to fn (notifications/tools/list_changed, …/prompts/list_changed,
// …/resources/list_changed, …/resources/updated with its uri), in order, on the
// connection's reading goroutine: fn must return quickly, and must not call the client
// (hand the work to another goroutine). It returns when ctx ends (nil),
// when the server ends the subscription (nil), or when it cannot subscribe.
//
// fn's first call is notifications/subscriptions/acknowledged, once the subscription is in
// force: every change after it is heard, so a list read after it misses nothing. Its
// params' "notifications" are what the server honours: under the initialize generation,
// whose servers do not acknowledge, the lists whose changes the server declared it tells
// (listChanged) and the resources subscribed to, never tasks.
//
// Under 2026-07-28 it is one subscriptions/listen request that lasts until ctx ends (MCP
// 2026-07-28, Basic › Subscriptions). Under the initialize generation it sends
// resources/subscribe for each of filter.ResourceSubscriptions, and
// resources/unsubscribe when it ends (Server Features › Resources › Subscriptions); the
// list_changed notifications the server sends unasked are filtered here. Tasks
// (filter.TaskIDs) are followed under 2026-07-28 only, by a client that declares the tasks
// extension (WithClientCapabilities, for one).
func (c *Client) Listen(ctx context.Context, filter mcp.SubscriptionFilter, fn func(method string, params json.RawMessage), opts ...CallOption) error {
	if c.modern {
		_, err := c.call(ctx, request{method: "subscriptions/listen", params: map[string]any{"notifications": filter}},
			append(opts[:len(opts):len(opts)], WithNotifications(fn))...)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	l := &listener{filter: filter, fn: fn}
	var subscribed []string
	defer func() {
		// Bounded: a server that stopped answering must not hold the caller.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, uri := range subscribed {
			c.call(uctx, request{method: "resources/unsubscribe", params: map[string]any{"uri": uri}})
		}
	}()
	for _, uri := range filter.ResourceSubscriptions {
		if _, err := c.call(ctx, request{method: "resources/subscribe", params: map[string]any{"uri": uri}}); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		subscribed = append(subscribed, uri)
	}
	// Heard from here on; the acknowledgement goes first, the changes wait for it.
	l.mu.Lock()
	c.in.add(l)
	defer c.in.remove(l)
	caps := c.Capabilities()
	tells := func(list string) bool {
		return string(jsonrpc.Field(jsonrpc.Field(caps, list), "listChanged")) == "true"
	}
	honoured := mcp.SubscriptionFilter{
		ToolsListChanged:      filter.ToolsListChanged && tells("tools"),
		PromptsListChanged:    filter.PromptsListChanged && tells("prompts"),
		ResourcesListChanged:  filter.ResourcesListChanged && tells("resources"),
		ResourceSubscriptions: subscribed,
	}
	ack, _ := json.Marshal(struct {
		Notifications mcp.SubscriptionFilter `json:"notifications"`
	}{honoured})
	fn("notifications/subscriptions/acknowledged", ack)
	l.mu.Unlock()
	<-ctx.Done()
	return nil
}
