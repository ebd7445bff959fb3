package bridge

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// Tasks (io.modelcontextprotocol/tasks) through the pool: a task lives in the child that made
// it, so the bridge hands the client a task id that names that child, and tasks/get,
// tasks/update and tasks/cancel follow it back there, as a requestState does. The children
// serve the bridge over stdio, where every caller is the one peer: the bridge binds each id
// to the caller's principal itself (mcp.TaskPrincipal), with a MAC, so that another caller
// holding the id reaches no task.
//
// The id the client sees is relay<child>.<mac>.<the child's id>; the MAC, over the
// principal, the child and its id, is under a key each bridge process draws at start (the
// children's tasks do not outlive it either), or drawn from the fleet's key
// (Options.StateKey), so that every instance of the fleet takes it, when the children keep
// their tasks in the fleet's store.

// taskMethods are the methods that name a task in params.taskId.
var taskMethods = map[string]bool{"tasks/get": true, "tasks/update": true, "tasks/cancel": true}

// taskMACLen is the length of an id's MAC, in bytes: 96 bits.
const taskMACLen = 12

func newTaskKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("bridge: no randomness for the task id key: " + err.Error())
	}
	return k
}

func (b *Bridge) taskMAC(principal string, child int, id string) string {
	mac := hmac.New(sha256.New, b.taskKey)
	fmt.Fprintf(mac, "%d\x00%s\x00%s", child, principal, id)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:taskMACLen])
}

// pinTask rewrites the taskId of a child's CreateTaskResult into the id the client gets.
func (b *Bridge) pinTask(ctx context.Context, res json.RawMessage, child int) json.RawMessage {
	var id string
	if child < 0 || json.Unmarshal(jsonrpc.Field(res, "taskId"), &id) != nil {
		return res
	}
	out := fmt.Sprintf("relay%d.%s.%s", child, b.taskMAC(mcp.TaskPrincipal(ctx), child, id), id)
	return jsonrpc.SetMember(res, "taskId", mustJSON(out))
}

// errNoTask answers a task id the bridge did not issue to this caller as the server answers
// an id that never existed: another caller's task is not told apart from none.
func errNoTask(raw json.RawMessage) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("Invalid params: no task %s for this caller: it never existed, has expired, or was made by another; call the tool again", raw)}
}

// declaresTasks reports whether a 2026-07-28 request declares the tasks extension in its
// _meta's client capabilities.
func declaresTasks(params json.RawMessage) bool {
	return mcp.HasExtension(jsonrpc.Field(jsonrpc.Field(params, "_meta"), mcp.MetaClientCapabilities), mcp.ExtensionTasks)
}

// unpinTask reads a client's task id: the child's own id and the child, when the bridge
// issued it to this caller; otherwise nil, and the request is refused (errNoTask).
func (b *Bridge) unpinTask(ctx context.Context, raw json.RawMessage) (json.RawMessage, *childConn) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return raw, nil
	}
	var child int
	if n, _ := fmt.Sscanf(s, "relay%d.", &child); n != 1 || child < 0 {
		return raw, nil
	}
	rest := s[len(fmt.Sprintf("relay%d.", child)):]
	mac, id, ok := strings.Cut(rest, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(b.taskMAC(mcp.TaskPrincipal(ctx), child, id))) {
		return raw, nil
	}
	// An id of another instance of the fleet, whose pool may be larger, goes to a child of
	// this one's: they all find the fleet's tasks.
	return mustJSON(id), b.clients[child%len(b.clients)]
}

// unpinListen prepares a subscriptions/listen that follows tasks (notifications.taskIds):
// a listen is held on one child, so it goes to the child that runs most of the tasks it names
// (or c, when it names none of the bridge's), with that child's ids; the others are left out,
// and the child's acknowledgement, which names what it agreed to, does not name them. names
// maps that child's ids back to the client's, for what comes back.
func (b *Bridge) unpinListen(ctx context.Context, params json.RawMessage, c *childConn) (json.RawMessage, *childConn, map[string]string) {
	notifications := jsonrpc.Field(params, "notifications")
	var ids []json.RawMessage
	if json.Unmarshal(jsonrpc.Field(notifications, "taskIds"), &ids) != nil || len(ids) == 0 {
		return params, c, nil
	}
	byChild := map[*childConn]map[string]string{}
	var best *childConn
	for _, raw := range ids {
		inner, owner := b.unpinTask(ctx, raw)
		if owner == nil {
			continue
		}
		var innerID, clientID string
		json.Unmarshal(inner, &innerID)
		json.Unmarshal(raw, &clientID)
		if byChild[owner] == nil {
			byChild[owner] = map[string]string{}
		}
		byChild[owner][innerID] = clientID
		if best == nil || len(byChild[owner]) > len(byChild[best]) {
			best = owner
		}
	}
	if best == nil {
		// None of them is the bridge's for this caller: the listen follows no task, rather
		// than passing ids on that a child would take for its own.
		notifications = jsonrpc.SetMember(notifications, "taskIds", json.RawMessage("[]"))
		return jsonrpc.SetMember(params, "notifications", notifications), c, nil
	}
	names := byChild[best]
	inner := make([]string, 0, len(names))
	for id := range names {
		inner = append(inner, id)
	}
	notifications = jsonrpc.SetMember(notifications, "taskIds", mustJSON(inner))
	return jsonrpc.SetMember(params, "notifications", notifications), best, names
}

// renameTasks puts the client's task ids back into what a child's listen says of its tasks:
// the acknowledgement's notifications.taskIds and notifications/tasks' taskId.
func renameTasks(method string, p json.RawMessage, names map[string]string) json.RawMessage {
	switch method {
	case "notifications/subscriptions/acknowledged":
		notifications := jsonrpc.Field(p, "notifications")
		var ids []string
		if json.Unmarshal(jsonrpc.Field(notifications, "taskIds"), &ids) != nil || ids == nil {
			return p
		}
		out := make([]string, 0, len(ids))
		for _, id := range ids {
			if name, ok := names[id]; ok {
				out = append(out, name)
			}
		}
		return jsonrpc.SetMember(p, "notifications", jsonrpc.SetMember(notifications, "taskIds", mustJSON(out)))
	case "notifications/tasks":
		var id string
		if json.Unmarshal(jsonrpc.Field(p, "taskId"), &id) == nil {
			if name, ok := names[id]; ok {
				return jsonrpc.SetMember(p, "taskId", mustJSON(name))
			}
		}
	}
	return p
}
