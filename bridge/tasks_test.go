package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/bridge"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/supervise"
)

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

var tasksCaps = map[string]any{"extensions": map[string]any{mcp.ExtensionTasks: map[string]any{}}}

// TestTasksFollowTheirIDToTheChildAndTheirCaller embeds the bridge over a pool of two
// children and makes tasks from both: each tasks/get reaches the child that runs the task
// (which answers with its pid, the same as the task's own answer), and a task id is no use
// to another principal, nor once its MAC no longer matches the child it names.
func TestTasksFollowTheirIDToTheChildAndTheirCaller(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts child processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bridge.New(ctx, bridge.Options{Pool: 2, Spec: supervise.Spec{
		Command: whoamiCommand(t),
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := httpx.NewMCPProfileHandler(b.Profile(), nil, &httpx.MCPOptions{
		Authenticator: httpx.BearerTokens(map[string]string{"ta": "alice", "tb": "bob"})})
	srv := httptest.NewServer(h)
	alice := &relayProc{url: srv.URL + "/mcp", client: &http.Client{Transport: bearer{"ta", srv.Client().Transport}}}
	bob := &relayProc{url: srv.URL + "/mcp", client: &http.Client{Transport: bearer{"tb", srv.Client().Transport}}}
	defer func() {
		srv.Close()
		h.Close()
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()

	const n = 16
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			rep, err := alice.callCaps(ctx, i+1, "tools/call", map[string]any{"name": "whoami_task", "arguments": map[string]any{"ms": 200}}, tasksCaps)
			var res struct{ ResultType, TaskID string }
			if err != nil || rep.Error != nil || json.Unmarshal(rep.Result, &res) != nil || res.ResultType != "task" {
				t.Errorf("call %d: %v %v", i, rep, err)
				return
			}
			ids[i] = res.TaskID
		})
	}
	wg.Wait()
	children := map[string]bool{}
	for i, id := range ids {
		if id == "" {
			continue
		}
		prefix, _, _ := strings.Cut(id, ".")
		children[prefix] = true
		var task struct {
			TaskID, Status string
			Result         json.RawMessage
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			rep, err := alice.callCaps(ctx, 100+i, "tasks/get", map[string]any{"taskId": id}, tasksCaps)
			if err != nil || rep.Error != nil {
				t.Fatalf("tasks/get of %s: %v %v", id, rep, err)
			}
			json.Unmarshal(rep.Result, &task)
			if task.Status == "completed" || time.Now().After(deadline) {
				break
			}
		}
		if task.TaskID != id || task.Status != "completed" || !strings.Contains(string(task.Result), `"text":"`) {
			t.Errorf("task %s: %+v %s", id, task, task.Result)
		}
		// Another principal holding the id reaches no task, nor with the child's own id,
		// which the bridge's id shows: the children see one caller, the bridge.
		if rep, err := bob.callCaps(ctx, 200+i, "tasks/get", map[string]any{"taskId": id}, tasksCaps); err != nil || rep.Error == nil || rep.Error.Code != -32602 {
			t.Errorf("bob's tasks/get of alice's task %s: %v %v", id, rep, err)
		}
		inner := id[strings.LastIndex(id, ".")+1:]
		for _, method := range []string{"tasks/get", "tasks/cancel"} {
			if rep, err := bob.callCaps(ctx, 250+i, method, map[string]any{"taskId": inner}, tasksCaps); err != nil || rep.Error == nil || rep.Error.Code != -32602 {
				t.Errorf("bob's %s of the child's own id %s: %v %v", method, inner, rep, err)
			}
		}
	}
	if len(children) != 2 {
		t.Errorf("the tasks ran on %v, want both children of the pool", children)
	}
	// An id moved to the other child no longer matches its MAC.
	for _, id := range ids {
		if id == "" {
			continue
		}
		forged := "relay1." + strings.SplitN(id, ".", 2)[1]
		if strings.HasPrefix(id, "relay1.") {
			forged = "relay0." + strings.SplitN(id, ".", 2)[1]
		}
		if rep, err := alice.callCaps(ctx, 300, "tasks/get", map[string]any{"taskId": forged}, tasksCaps); err != nil || rep.Error == nil || rep.Error.Code != -32602 {
			t.Errorf("tasks/get of %s, moved to another child: %v %v", forged, rep, err)
		}
		break
	}
	// Without the extension, the children refuse the methods (-32021).
	if rep, err := alice.call(ctx, 400, "tasks/get", map[string]any{"taskId": ids[0]}); err != nil || rep.Error == nil || rep.Error.Code != mcp.CodeMissingRequiredClientCapability {
		t.Errorf("tasks/get without the extension: %v %v", rep, err)
	}
	listenForTasks(ctx, t, alice)
}

// listenForTasks makes tasks on both children, then follows them all with a listen: it is
// held on one child, acknowledges that child's tasks by the client's ids, and tells of each
// as it ends.
func listenForTasks(ctx context.Context, t *testing.T, alice *relayProc) {
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() { // at once, so that both children get some
			rep, err := alice.callCaps(ctx, 500+i, "tools/call", map[string]any{"name": "whoami_task", "arguments": map[string]any{"ms": 600}}, tasksCaps)
			var res struct{ TaskID string }
			if err != nil || json.Unmarshal(rep.Result, &res) != nil || res.TaskID == "" {
				t.Errorf("call: %v %v", rep, err)
			}
			ids[i] = res.TaskID
		})
	}
	wg.Wait()
	children := map[string]bool{}
	for _, id := range ids {
		child, _, _ := strings.Cut(id, ".")
		children[child] = true
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": map[string]any{
		"notifications": map[string]any{"taskIds": ids},
		"_meta":         map[string]any{mcp.MetaProtocolVersion: mcp.Version20260728, mcp.MetaClientCapabilities: tasksCaps},
	}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, alice.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.Version20260728)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := alice.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	next := func() (method string, params map[string]any) {
		t.Helper()
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				var m struct {
					Method string
					Params map[string]any
				}
				json.Unmarshal([]byte(data), &m)
				return m.Method, m.Params
			}
		}
		t.Fatalf("the listen stream ended: %v", events.Err())
		return "", nil
	}
	method, p := next()
	acked, _ := p["notifications"].(map[string]any)["taskIds"].([]any)
	if method != "notifications/subscriptions/acknowledged" || len(acked) == 0 || (len(children) == 2) != (len(acked) < len(ids)) {
		t.Fatalf("acknowledgement %s %v: want the tasks of one child (the tasks are on %v), by the client's ids %v", method, p, children, ids)
	}
	t.Logf("tasks on %d children; the listen follows %d of %d", len(children), len(acked), len(ids))
	child, _, _ := strings.Cut(acked[0].(string), ".")
	pending := map[string]bool{}
	for _, id := range acked {
		if !slices.Contains(ids, id.(string)) || !strings.HasPrefix(id.(string), child+".") {
			t.Errorf("acknowledged %v: not one child's tasks among %v", acked, ids)
		}
		pending[id.(string)] = true
	}
	for len(pending) > 0 {
		method, p := next()
		if method != "notifications/tasks" {
			continue
		}
		id, _ := p["taskId"].(string)
		if !pending[id] {
			t.Fatalf("notifications/tasks for %q, not a task acknowledged (%v)", id, acked)
		}
		if p["status"] == "completed" {
			delete(pending, id)
		}
	}
}
