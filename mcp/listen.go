package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// SubscriptionFilter is what a subscriptions/listen request asks to hear about.
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// TaskIDs asks for notifications/tasks about these tasks (io.modelcontextprotocol/tasks);
	// the acknowledgement names those the caller may see.
	TaskIDs []string `json:"taskIds,omitempty"`
}

// maxListenTasks bounds the tasks one listen follows.
const maxListenTasks = 256

// listen serves subscriptions/listen (2026-07-28): a long-lived request whose notifications
// all carry its id as the subscription id. It acknowledges first, with the part of the filter
// the server honours; it ends with a complete result when the connection drains, and with no
// answer at all when the client cancels it.
func (s *Server) listen(ctx context.Context, rt *runtime.Request) (any, error) {
	var p struct {
		Notifications SubscriptionFilter `json:"notifications"`
	}
	if err := json.Unmarshal(rt.Params, &p); err != nil {
		return nil, errInvalidParams("notifications must be a subscription filter object")
	}
	caps := s.capabilities()
	honoured := p.Notifications
	_, tools := caps["tools"]
	_, prompts := caps["prompts"]
	_, resources := caps["resources"]
	honoured.ToolsListChanged = honoured.ToolsListChanged && tools
	honoured.PromptsListChanged = honoured.PromptsListChanged && prompts
	honoured.ResourcesListChanged = honoured.ResourcesListChanged && resources
	if !resources {
		honoured.ResourceSubscriptions = nil
	}
	principal := TaskPrincipal(ctx)
	if len(p.Notifications.TaskIDs) > 0 {
		caps := jsonrpc.Field(jsonrpc.Field(rt.Params, "_meta"), MetaClientCapabilities)
		if !HasExtension(caps, ExtensionTasks) {
			return nil, errTasksRequired("task notifications (notifications.taskIds)")
		}
		honoured.TaskIDs = nil
		if s.opts.TaskHandler == nil {
			for _, id := range p.Notifications.TaskIDs { // those the caller may see, and no more
				if _, err := s.taskStore().Get(ctx, principal, id); err == nil && len(honoured.TaskIDs) < maxListenTasks &&
					!slices.Contains(honoured.TaskIDs, id) {
					honoured.TaskIDs = append(honoured.TaskIDs, id)
				}
			}
		}
	}
	subMeta := map[string]json.RawMessage{MetaSubscriptionID: json.RawMessage(rt.ID)}
	acked := make(chan struct{}) // closed once the acknowledgement is out, which comes first
	if ids := p.Notifications.TaskIDs; len(ids) > 0 && s.opts.TaskHandler != nil && s.opts.TaskListen != nil {
		// The tasks are another's (a gateway's servers'): followed there, told here.
		meta, _ := json.Marshal(subMeta)
		var wait func()
		honoured.TaskIDs, wait = s.opts.TaskListen(ctx, ids[:min(len(ids), maxListenTasks)], func(task json.RawMessage) {
			select {
			case <-acked:
			case <-ctx.Done():
				return
			}
			if jsonrpc.IsObject(task) {
				rt.Notify("notifications/tasks", json.RawMessage(jsonrpc.SetMember(task, "_meta", meta)))
			}
		})
		defer wait()
	}
	var once sync.Once
	ack := func() { once.Do(func() { close(acked) }) }
	defer ack() // before wait, above: a notify waiting for it returns

	changes := s.hub.subscribe()
	defer s.hub.unsubscribe(changes)
	if err := rt.Notify("notifications/subscriptions/acknowledged", struct {
		Notifications SubscriptionFilter         `json:"notifications"`
		Meta          map[string]json.RawMessage `json:"_meta"`
	}{honoured, subMeta}); err != nil {
		return nil, err
	}
	ack()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-rt.Draining():
			raw, _ := json.Marshal(struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}{subMeta})
			return s.modernResult(raw), nil
		case c := <-changes:
			method, params := "", map[string]any{"_meta": subMeta}
			switch {
			case c.kind == toolsChanged && honoured.ToolsListChanged:
				method = "notifications/tools/list_changed"
			case c.kind == promptsChanged && honoured.PromptsListChanged:
				method = "notifications/prompts/list_changed"
			case c.kind == resourcesChanged && honoured.ResourcesListChanged:
				method = "notifications/resources/list_changed"
			case c.kind == resourceUpdated && slices.Contains(honoured.ResourceSubscriptions, c.uri):
				method, params["uri"] = "notifications/resources/updated", c.uri
			case c.kind == taskChanged && slices.Contains(honoured.TaskIDs, c.uri):
				rec, err := s.taskStore().Get(ctx, principal, c.uri)
				if err != nil { // expired: nothing more will be said of it
					continue
				}
				// The whole DetailedTask, as tasks/get would answer now.
				if err := rt.Notify("notifications/tasks", struct {
					taskView
					Meta map[string]json.RawMessage `json:"_meta"`
				}{detailedView(rec), subMeta}); err != nil {
					return nil, err
				}
			}
			if method != "" {
				if err := rt.Notify(method, params); err != nil {
					return nil, err
				}
			}
		}
	}
}
