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
	// The tasks of a server whose tasks are another's (a gateway's servers') are followed
	// there and told here, by the loop below (after the acknowledgement): notify only
	// keeps each task's newest word, and never waits.
	var told taskNews
	var meta []byte // subMeta, encoded once for the tasks' notifications
	if ids := p.Notifications.TaskIDs; len(ids) > 0 && s.opts.TaskHandler != nil && s.opts.TaskListen != nil {
		tctx, stop := context.WithCancel(ctx)
		var wait func()
		told.wake = make(chan struct{}, 1)
		meta, _ = json.Marshal(subMeta)
		honoured.TaskIDs, wait = s.opts.TaskListen(tctx, ids[:min(len(ids), maxListenTasks)], told.put)
		defer wait()
		defer stop() // before wait: the listen ends, even when ctx does not (a drain)
	}

	changes := s.hub.subscribe()
	defer s.hub.unsubscribe(changes)
	s.awaitBus(ctx) // the fleet's other instances' changes too are heard from the ack on
	if err := rt.Notify("notifications/subscriptions/acknowledged", struct {
		Notifications SubscriptionFilter         `json:"notifications"`
		Meta          map[string]json.RawMessage `json:"_meta"`
	}{honoured, subMeta}); err != nil {
		return nil, err
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-told.wake:
			for _, task := range told.take() {
				if err := rt.Notify("notifications/tasks", json.RawMessage(jsonrpc.SetMember(task, "_meta", meta))); err != nil {
					return nil, err
				}
			}
		case <-rt.Draining():
			raw, _ := json.Marshal(struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}{subMeta})
			return s.modernResult(raw), nil
		case c := <-changes:
			if c.kind == busResumed { // changes of other instances may have been missed
				if err := s.tellAgain(ctx, rt, honoured, principal, subMeta); err != nil {
					return nil, err
				}
				continue
			}
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
				if err := s.tellTask(ctx, rt, principal, c.uri, subMeta); err != nil {
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

// tellTask sends a listen the task id as it is now: the whole DetailedTask, as tasks/get
// would answer. A task that has expired is not told: nothing more will be said of it.
func (s *Server) tellTask(ctx context.Context, rt *runtime.Request, principal, id string, subMeta map[string]json.RawMessage) error {
	rec, err := s.taskStore().Get(ctx, principal, id)
	if err != nil {
		return nil
	}
	return rt.Notify("notifications/tasks", struct {
		taskView
		Meta map[string]json.RawMessage `json:"_meta"`
	}{detailedView(rec), subMeta})
}

// tellAgain tells a listen that everything it follows may have changed: the Server's Bus
// subscription was lost or failed and is in force again, and other instances' changes made
// meanwhile were not heard. Each notification says only that something changed, so one too
// many is harmless and one missing is not: every list the listen follows changed, every
// resource it subscribed to was updated, and each of its tasks is as the store has it now.
// It tells only what the listen opted into (MCP 2026-07-28, Basic › Subscriptions).
func (s *Server) tellAgain(ctx context.Context, rt *runtime.Request, f SubscriptionFilter, principal string, subMeta map[string]json.RawMessage) error {
	params := map[string]any{"_meta": subMeta}
	for _, list := range []struct {
		on     bool
		method string
	}{
		{f.ToolsListChanged, "notifications/tools/list_changed"},
		{f.PromptsListChanged, "notifications/prompts/list_changed"},
		{f.ResourcesListChanged, "notifications/resources/list_changed"},
	} {
		if list.on {
			if err := rt.Notify(list.method, params); err != nil {
				return err
			}
		}
	}
	for _, uri := range f.ResourceSubscriptions {
		if err := rt.Notify("notifications/resources/updated", map[string]any{"_meta": subMeta, "uri": uri}); err != nil {
			return err
		}
	}
	if s.opts.TaskHandler != nil { // followed by TaskListen, not through the hub
		return nil
	}
	for _, id := range f.TaskIDs {
		if err := s.tellTask(ctx, rt, principal, id, subMeta); err != nil {
			return err
		}
	}
	return nil
}

// taskNews is what a TaskListen told of the tasks it follows and the listen has not passed
// on yet: each task's newest word (notifications/tasks carries the whole task), at most
// one per task followed.
type taskNews struct {
	wake chan struct{} // a word is waiting
	mu   sync.Mutex
	news map[string]json.RawMessage
}

// put keeps task, the newest word of its task, and wakes the listen; it never waits.
func (t *taskNews) put(task json.RawMessage) {
	id, ok := jsonrpc.Field(task, "taskId"), jsonrpc.IsObject(task)
	if !ok || id == nil {
		return
	}
	t.mu.Lock()
	if t.news == nil {
		t.news = map[string]json.RawMessage{}
	}
	if _, known := t.news[string(id)]; known || len(t.news) < maxListenTasks {
		t.news[string(id)] = task
	}
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// take returns the words waiting, and forgets them.
func (t *taskNews) take() map[string]json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	news := t.news
	t.news = nil
	return news
}
