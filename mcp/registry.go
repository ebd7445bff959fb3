package mcp

import (
	"encoding/base64"
	"strings"
	"sync"
)

// registry is an immutable snapshot of what a server offers. A change copies it.
type registry struct {
	tools     map[string]*tool
	prompts   map[string]*prompt
	resources map[string]*resource
	templates map[string]*resourceTemplate
	complete  CompletionHandler
	skills    *skillSet // the Skills extension's; nil without skills

	// derived by index: sorted keys, for deterministic lists and cursors, and the
	// capabilities the server advertises with this snapshot
	toolNames, promptNames, resourceURIs, templateKeys []string
	caps                                               map[string]any
	// modernCaps are caps with what only 2026-07-28 has (extensions), for server/discover
	modernCaps map[string]any
	tasks      bool // a tool supports tasks: the tasks/* methods are served
	// tasksRouted: ServerOptions.TaskHandler serves tasks/*, and the extension is declared
	tasksRouted bool
	// allLists: ServerOptions.DeclareLists, the list capabilities declared while empty.
	allLists bool
}

func (r *registry) clone() *registry {
	return &registry{
		tools:       cloneMap(r.tools),
		prompts:     cloneMap(r.prompts),
		resources:   cloneMap(r.resources),
		templates:   cloneMap(r.templates),
		complete:    r.complete,
		skills:      r.skills,
		tasksRouted: r.tasksRouted,
		allLists:    r.allLists,
	}
}

// index derives what a snapshot offers from its contents; every change ends with it.
func (r *registry) index() {
	r.toolNames = sortedKeys(r.tools)
	r.promptNames = sortedKeys(r.prompts)
	r.resourceURIs = sortedKeys(r.resources)
	r.templateKeys = sortedKeys(r.templates)
	r.caps = map[string]any{"logging": map[string]any{}}
	if len(r.tools) > 0 || r.allLists {
		r.caps["tools"] = map[string]any{"listChanged": true}
	}
	if len(r.prompts) > 0 || r.allLists {
		r.caps["prompts"] = map[string]any{"listChanged": true}
	}
	if len(r.resources) > 0 || len(r.templates) > 0 || r.allLists {
		r.caps["resources"] = map[string]any{"listChanged": true, "subscribe": true}
	}
	if r.complete != nil {
		r.caps["completions"] = map[string]any{}
	}
	r.skills.declare(r.caps)
	r.tasks = false
	for _, t := range r.tools {
		r.tasks = r.tasks || t.opts.tasks != TaskForbidden
	}
	r.modernCaps = r.caps
	if r.tasks || r.tasksRouted {
		r.modernCaps = cloneMap(r.caps)
		ext := map[string]any{}
		if declared, ok := r.caps["extensions"].(map[string]any); ok {
			ext = cloneMap(declared) // skills'; tasks are only the 2026-07-28 generation's
		}
		ext[ExtensionTasks] = map[string]any{}
		r.modernCaps["extensions"] = ext
	}
}

func cloneMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// changeKind says what changed in a server.
type changeKind uint8

const (
	toolsChanged changeKind = iota + 1
	promptsChanged
	resourcesChanged
	resourceUpdated
	taskChanged
	// busResumed: the Bus subscription was made again after it was lost or failed, so other
	// instances' changes may have been missed; listeners are told again of all they follow.
	// Only the hub carries it, never the bus.
	busResumed
)

type change struct {
	kind changeKind
	uri  string // resourceUpdated: the resource; taskChanged: the task's id
}

// hub fans changes out to listeners: legacy sessions and subscriptions/listen streams. A
// listener that falls more than its buffer behind misses changes rather than slowing the
// server down; list changes carry no payload, so the next one makes up for it.
type hub struct {
	mu   sync.Mutex
	subs map[chan change]struct{}
}

func (h *hub) subscribe() chan change {
	ch := make(chan change, 64)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[chan change]struct{}{}
	}
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch
}

func (h *hub) unsubscribe(ch chan change) {
	h.mu.Lock()
	delete(h.subs, ch)
	h.mu.Unlock()
}

func (h *hub) publish(c change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- c:
		default:
		}
	}
}

// Cursors are opaque to clients but not to servers: one names the last key of the page it
// ends, so any server process with the same items can continue the list.
const cursorPrefix = "after:"

func encodeCursor(key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + key))
}

func decodeCursor(c string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(raw), cursorPrefix) {
		return "", false
	}
	return string(raw[len(cursorPrefix):]), true
}

// page returns the keys of one page after cursor and the cursor of the next page, if any.
func page(keys []string, cursor string, size int) (out []string, next string, ok bool) {
	start := 0
	if cursor != "" {
		after, valid := decodeCursor(cursor)
		if !valid {
			return nil, "", false
		}
		for start < len(keys) && keys[start] <= after {
			start++
		}
	}
	end := min(start+size, len(keys))
	if end < len(keys) {
		next = encodeCursor(keys[end-1])
	}
	return keys[start:end], next, true
}
