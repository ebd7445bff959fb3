package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

// tasksMeta is the _meta of a 2026-07-28 request that declares the tasks extension.
const tasksMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` +
	`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// taskServer serves tools that run as tasks; started is told each time "wait" starts, and it
// returns once release is closed (or with its context's end, reported on stopped).
func taskServer(t *testing.T, opts *mcp.ServerOptions) (s *mcp.Server, started chan struct{}, release chan struct{}, stopped chan error) {
	s = mcp.NewServer(mcp.Implementation{Name: "tasks", Version: "1"}, opts)
	t.Cleanup(s.Close)
	started, release, stopped = make(chan struct{}, 16), make(chan struct{}), make(chan error, 16)
	mcp.AddTool(s, &mcp.Tool{Name: "wait"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-release:
			id, _ := req.InTask()
			return mcp.TextResult("released " + id), nil
		case <-ctx.Done():
			stopped <- context.Cause(ctx)
			return nil, ctx.Err()
		}
	}, mcp.AsTask(mcp.TaskOptional))
	mcp.AddTool(s, &mcp.Tool{Name: "required"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return mcp.ErrorResult("a tool error"), nil
	}, mcp.AsTask(mcp.TaskRequired))
	mcp.AddTool(s, &mcp.Tool{Name: "panics"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		panic("boom")
	}, mcp.AsTask(mcp.TaskOptional))
	mcp.AddTool(s, &mcp.Tool{Name: "asks"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		a, errA := req.Elicit(ctx, &mcp.ElicitParams{Message: "a?"}, mcp.InputKey("a"))
		b, errB := req.Elicit(ctx, &mcp.ElicitParams{Message: "b?"}, mcp.InputKey("b"))
		if errA != nil {
			return nil, errA
		}
		if errB != nil {
			return nil, errB
		}
		return mcp.TextResult(fmt.Sprint(a.Content["v"], "+", b.Content["v"])), nil
	}, mcp.AsTask(mcp.TaskOptional))
	mcp.AddTool(s, &mcp.Tool{Name: "sync"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return mcp.TextResult("at once"), nil
	})
	return s, started, release, stopped
}

// connectAs connects to s as principal (none when empty).
func connectAs(t *testing.T, s *mcp.Server, principal string) *client {
	ctx := context.Background()
	if principal != "" {
		ctx = runtime.WithPrincipal(ctx, &runtime.Principal{ID: principal})
	}
	conn := s.Runtime(runtime.WithLogger(zap.NewNop())).Connect(ctx)
	t.Cleanup(func() { conn.Close() })
	return &client{t: t, conn: conn}
}

var nextID = 100

// callTask calls tool with the tasks extension and returns the task id it made.
func (c *client) callTask(tool string) string {
	c.t.Helper()
	nextID++
	r := result(c.t, c.call(nextID, "tools/call", `{"name":"`+tool+`",`+tasksMeta+`}`))
	if r["resultType"] != "task" || r["status"] != "working" || r["result"] != nil || r["requestState"] != nil {
		c.t.Fatalf("CreateTaskResult: %v", r)
	}
	for _, k := range []string{"createdAt", "lastUpdatedAt"} {
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(r[k])); err != nil {
			c.t.Errorf("%s: %v", k, err)
		}
	}
	if r["ttlMs"] != float64(time.Hour.Milliseconds()) || r["pollIntervalMs"] != float64(1000) {
		c.t.Errorf("ttlMs %v, pollIntervalMs %v", r["ttlMs"], r["pollIntervalMs"])
	}
	return r["taskId"].(string)
}

func (c *client) tasks(method, id, extra string) map[string]json.RawMessage {
	c.t.Helper()
	nextID++
	return c.call(nextID, method, `{"taskId":"`+id+`"`+extra+`,`+tasksMeta+`}`)
}

// await polls tasks/get until the task's status is want.
func (c *client) await(id string, want mcp.TaskStatus) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := result(c.t, c.tasks("tasks/get", id, ""))
		if r["status"] == string(want) {
			return r
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s is %v, not %s", id, r["status"], want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTasks_ToolRunsAsATaskAndTasksGetInlinesItsResult(t *testing.T) {
	s, started, release, _ := taskServer(t, nil)
	c := connect(t, s)
	id := c.callTask("wait")
	<-started
	r := c.await(id, mcp.TaskWorking)
	if r["resultType"] != "complete" || r["taskId"] != id || r["result"] != nil || r["error"] != nil {
		t.Errorf("working task: %v", r)
	}
	close(release)
	r = c.await(id, mcp.TaskCompleted)
	res, _ := json.Marshal(r["result"])
	if want := `{"content":[{"text":"released ` + id + `","type":"text"}]}`; string(res) != want { // re-encoded: keys sorted
		t.Errorf("result %s, want %s", res, want)
	}
	// Cancelling a task that has ended is acknowledged, and changes nothing.
	if ack := result(t, c.tasks("tasks/cancel", id, "")); ack["resultType"] != "complete" || ack["taskId"] != nil || ack["status"] != nil {
		t.Errorf("cancel of a completed task: %v", ack)
	}
	c.await(id, mcp.TaskCompleted)
}

func TestTasks_WithoutTheExtensionOptionalRunsInTheRequestAndRequiredIsRefused(t *testing.T) {
	s, _, release, _ := taskServer(t, nil)
	close(release)
	c := connect(t, s)
	r := result(t, c.call(1, "tools/call", `{"name":"wait",`+modernMeta+`}`))
	if r["resultType"] != "complete" || r["taskId"] != nil || !strings.Contains(fmt.Sprint(r["content"]), "released") {
		t.Errorf("optional tool without the extension: %v", r)
	}
	m := c.call(2, "tools/call", `{"name":"required",`+modernMeta+`}`)
	if code(m) != mcp.CodeMissingRequiredClientCapability ||
		!strings.Contains(string(m["error"]), `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
		t.Errorf("required tool without the extension: %s", m["error"])
	}
	// A tool error is a completed task whose result says so; failed is for protocol errors.
	id := c.callTask("required")
	if r := c.await(id, mcp.TaskCompleted); !strings.Contains(fmt.Sprint(r["result"]), "isError:true") {
		t.Errorf("tool error: %v", r)
	}
	id = c.callTask("panics")
	r = c.await(id, mcp.TaskFailed)
	e, _ := r["error"].(map[string]any)
	if e["code"] != float64(-32603) || !strings.Contains(fmt.Sprint(e["message"]), "boom") || r["result"] != nil {
		t.Errorf("panicking tool: %v", r)
	}
	// A tool that does not support tasks is never one.
	if r := result(t, c.call(3, "tools/call", `{"name":"sync",`+tasksMeta+`}`)); r["resultType"] != "complete" {
		t.Errorf("sync tool: %v", r)
	}
}

func TestTasks_QuestionsBecomeInputRequestsAnsweredWithTasksUpdate(t *testing.T) {
	s, _, _, _ := taskServer(t, nil)
	c := connect(t, s)
	id := c.callTask("asks")
	r := c.await(id, mcp.TaskInputRequired)
	asked, _ := r["inputRequests"].(map[string]any)
	if len(asked) != 2 || asked["a"] == nil || asked["b"] == nil ||
		asked["a"].(map[string]any)["method"] != "elicitation/create" {
		t.Fatalf("inputRequests: %v", r["inputRequests"])
	}
	// A partial answer (and one to a question never asked) is acknowledged; b stays open.
	ack := result(t, c.tasks("tasks/update", id, `,"inputResponses":{"a":{"action":"accept","content":{"v":1}},"zz":{}}`))
	if ack["resultType"] != "complete" || len(ack) != 2 { // resultType and _meta
		t.Errorf("update ack: %v", ack)
	}
	r = c.await(id, mcp.TaskInputRequired)
	if asked, _ := r["inputRequests"].(map[string]any); len(asked) != 1 || asked["b"] == nil {
		t.Errorf("after answering a: %v", r["inputRequests"])
	}
	result(t, c.tasks("tasks/update", id, `,"inputResponses":{"b":{"action":"accept","content":{"v":2}}}`))
	r = c.await(id, mcp.TaskCompleted)
	if got := fmt.Sprint(r["result"]); !strings.Contains(got, "1+2") {
		t.Errorf("result %s, want both answers", got)
	}
	if m := c.tasks("tasks/update", id, `,"inputResponses":[]`); code(m) != -32602 {
		t.Errorf("inputResponses that is not an object: %s", m["error"])
	}
}

func TestTasks_CancelStopsTheTool(t *testing.T) {
	s, started, _, stopped := taskServer(t, nil)
	c := connect(t, s)
	id := c.callTask("wait")
	<-started
	ack := result(t, c.tasks("tasks/cancel", id, ""))
	if ack["resultType"] != "complete" || ack["status"] != nil {
		t.Errorf("cancel ack: %v", ack)
	}
	if err := <-stopped; err == nil || !strings.Contains(err.Error(), "tasks/cancel") {
		t.Errorf("the tool's context ended with %v", err)
	}
	if r := c.await(id, mcp.TaskCancelled); r["result"] != nil || r["error"] != nil {
		t.Errorf("cancelled task: %v", r)
	}
}

func TestTasks_OnlyThePrincipalThatMadeATaskSeesIt(t *testing.T) {
	s, started, release, _ := taskServer(t, nil)
	alice, bob, anon := connectAs(t, s, "alice"), connectAs(t, s, "bob"), connectAs(t, s, "")
	id := alice.callTask("wait")
	<-started
	for _, other := range []*client{bob, anon} {
		for _, method := range []string{"tasks/get", "tasks/cancel"} {
			if m := other.tasks(method, id, ""); code(m) != -32602 {
				t.Errorf("%s of alice's task by another: %s %s", method, m["result"], m["error"])
			}
		}
		if m := other.tasks("tasks/update", id, `,"inputResponses":{}`); code(m) != -32602 {
			t.Errorf("tasks/update of alice's task by another: %s", m["error"])
		}
	}
	close(release)
	alice.await(id, mcp.TaskCompleted)
	if m := alice.tasks("tasks/get", "no-such-task", ""); code(m) != -32602 || !strings.Contains(string(m["error"]), "no task") {
		t.Errorf("unknown task: %s", m["error"])
	}
}

func TestTasks_MethodsNeedTheExtensionAndV1MethodsAreGone(t *testing.T) {
	s, _, _, _ := taskServer(t, nil)
	c := connect(t, s)
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if m := c.call(1, method, `{"taskId":"x","inputResponses":{},`+modernMeta+`}`); code(m) != mcp.CodeMissingRequiredClientCapability {
			t.Errorf("%s without the extension: %s", method, m["error"])
		}
	}
	for _, method := range []string{"tasks/result", "tasks/list"} {
		if m := c.call(2, method, `{"taskId":"x",`+tasksMeta+`}`); code(m) != -32601 {
			t.Errorf("%s: %s, want -32601 (not in the extension)", method, m["error"])
		}
	}
	if m := c.call(3, "tasks/get", `{`+tasksMeta+`}`); code(m) != -32602 {
		t.Errorf("tasks/get without taskId: %s", m["error"])
	}
	disc := result(t, c.call(4, "server/discover", `{`+modernMeta+`}`))
	caps, _ := disc["capabilities"].(map[string]any)
	if ext, _ := caps["extensions"].(map[string]any); ext["io.modelcontextprotocol/tasks"] == nil || caps["tasks"] != nil {
		t.Errorf("discover capabilities: %v", caps)
	}
	// A server without task tools neither advertises the extension nor serves its methods.
	plain := connect(t, newServer(t))
	if m := plain.call(5, "tasks/get", `{"taskId":"x",`+tasksMeta+`}`); code(m) != -32601 {
		t.Errorf("tasks/get on a server without tasks: %s", m["error"])
	}
	if caps := result(t, plain.call(6, "server/discover", `{`+modernMeta+`}`))["capabilities"].(map[string]any); caps["extensions"] != nil {
		t.Errorf("a server without tasks advertises %v", caps["extensions"])
	}
}

func TestTasks_FullStoreRefusesRequiredAndRunsOptionalInTheRequest(t *testing.T) {
	s, started, release, _ := taskServer(t, &mcp.ServerOptions{
		TaskStore: mcp.NewMemoryTaskStore(&mcp.MemoryTaskStoreOptions{MaxTasks: 1})})
	c := connect(t, s)
	c.callTask("wait")
	<-started
	if m := c.call(1, "tools/call", `{"name":"required",`+tasksMeta+`}`); code(m) != mcp.CodeServerBusy {
		t.Errorf("a required task with the store full: %s", m["error"])
	}
	close(release)
	if r := result(t, c.call(2, "tools/call", `{"name":"wait",`+tasksMeta+`}`)); r["resultType"] != "complete" {
		t.Errorf("an optional task with the store full: %v", r)
	}
}

func TestTasks_CloseStopsTheTasksAndRefusesNewOnes(t *testing.T) {
	s, started, _, stopped := taskServer(t, nil)
	c := connect(t, s)
	id := c.callTask("wait")
	<-started
	s.Close()
	if err := <-stopped; err == nil || !strings.Contains(err.Error(), "server closed") {
		t.Errorf("the tool's context ended with %v", err)
	}
	r := c.await(id, mcp.TaskFailed)
	if e, _ := r["error"].(map[string]any); e["code"] != float64(mcp.CodeServerBusy) {
		t.Errorf("a task the server's Close stopped: %v", r)
	}
	if m := c.call(1, "tools/call", `{"name":"wait",`+tasksMeta+`}`); code(m) != mcp.CodeServerBusy {
		t.Errorf("a task after Close: %s", m["error"])
	}
}

func TestTasks_TTLStopsATaskThatRunsPastIt(t *testing.T) {
	s, started, _, stopped := taskServer(t, &mcp.ServerOptions{TaskTTL: 50 * time.Millisecond})
	c := connect(t, s)
	nextID++
	r := result(t, c.call(nextID, "tools/call", `{"name":"wait",`+tasksMeta+`}`))
	if r["ttlMs"] != float64(50) {
		t.Errorf("ttlMs %v", r["ttlMs"])
	}
	<-started
	if err := <-stopped; err == nil || !strings.Contains(err.Error(), "TTL") {
		t.Errorf("the tool's context ended with %v", err)
	}
	// Then the task is forgotten.
	deadline := time.Now().Add(5 * time.Second)
	for code(c.tasks("tasks/get", r["taskId"].(string), "")) != -32602 {
		if time.Now().After(deadline) {
			t.Fatal("the task outlived its TTL")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// MRTR in the request, then a task: the answers gathered before StartTask reach the task.
func TestTasks_StartTaskAfterInputRequiredRounds(t *testing.T) {
	s := mcp.NewServer(mcp.Implementation{Name: "compose", Version: "1"}, nil)
	t.Cleanup(s.Close)
	mcp.AddTool(s, &mcp.Tool{Name: "hello"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "name?"}, mcp.InputKey("name"))
		if err != nil {
			return nil, err
		}
		return req.StartTask(ctx, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.TextResult(fmt.Sprint("Hello, ", res.Content["name"])), nil
		})
	}, mcp.StartsTask(mcp.TaskRequired))
	c := connect(t, s)
	r := result(t, c.call(1, "tools/call", `{"name":"hello",`+tasksMeta+`}`))
	if r["resultType"] != "input_required" || r["taskId"] != nil {
		t.Fatalf("round 1: %v", r)
	}
	r = result(t, c.call(2, "tools/call", `{"name":"hello","inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},`+
		`"requestState":`+mustQuote(r["requestState"])+`,`+tasksMeta+`}`))
	if r["resultType"] != "task" || r["requestState"] != nil || r["inputRequests"] != nil {
		t.Fatalf("round 2: %v", r)
	}
	if got := fmt.Sprint(c.await(r["taskId"].(string), mcp.TaskCompleted)["result"]); !strings.Contains(got, "Hello, Ada") {
		t.Errorf("result %s", got)
	}
}

func mustQuote(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestTasks_ListenSendsTheWholeTaskWhenItChanges(t *testing.T) {
	s, started, release, _ := taskServer(t, nil)
	c := connect(t, s)
	id := c.callTask("wait")
	<-started
	if m := c.call(1, "subscriptions/listen", `{"notifications":{"taskIds":["`+id+`"]},`+modernMeta+`}`); code(m) != mcp.CodeMissingRequiredClientCapability {
		t.Errorf("a listen for tasks without the extension: %s", m["error"])
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + id + `","not-a-task"]},` + tasksMeta + `}}`)
	ack := c.recv()
	if string(ack["method"]) != `"notifications/subscriptions/acknowledged"` || !strings.Contains(string(ack["params"]), `"taskIds":["`+id+`"]`) {
		t.Fatalf("acknowledgement: %s %s", ack["method"], ack["params"])
	}
	close(release)
	n := c.recv()
	var p map[string]any
	json.Unmarshal(n["params"], &p)
	meta, _ := p["_meta"].(map[string]any)
	if string(n["method"]) != `"notifications/tasks"` || p["taskId"] != id || p["status"] != "completed" || p["result"] == nil ||
		meta[mcp.MetaSubscriptionID] != float64(2) {
		t.Errorf("notification: %s %s", n["method"], n["params"])
	}
}

func TestTasks_AResultTooLargeForTheStoreFailsTheTask(t *testing.T) {
	s := mcp.NewServer(mcp.Implementation{Name: "big", Version: "1"}, &mcp.ServerOptions{
		TaskStore: mcp.NewMemoryTaskStore(&mcp.MemoryTaskStoreOptions{MaxBytes: 1 << 10})})
	t.Cleanup(s.Close)
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return mcp.TextResult(strings.Repeat("x", 4<<10)), nil
	}, mcp.AsTask(mcp.TaskRequired))
	c := connect(t, s)
	r := c.await(c.callTask("big"), mcp.TaskFailed)
	if e, _ := r["error"].(map[string]any); e["code"] != float64(mcp.CodeServerBusy) || !strings.Contains(fmt.Sprint(e["message"]), "larger") {
		t.Errorf("a result past the store's bytes: %v", r)
	}
}

func TestTasks_ARequiredTaskToolIsAToolErrorForTheInitializeGeneration(t *testing.T) {
	s, _, _, _ := taskServer(t, nil)
	c := connect(t, s)
	result(t, c.call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"clientInfo":{"name":"h","version":"1"}}`))
	r := result(t, c.call(2, "tools/call", `{"name":"required"}`))
	if r["isError"] != true || !strings.Contains(fmt.Sprint(r["content"]), "runs only as a task") {
		t.Errorf("a required task tool for a 2025-11-25 client: %v", r)
	}
	if r := result(t, c.call(3, "tools/call", `{"name":"sync"}`)); r["isError"] == true {
		t.Errorf("sync tool: %v", r)
	}
	if m := c.call(4, "tasks/get", `{"taskId":"x"}`); code(m) != -32601 {
		t.Errorf("tasks/get of the initialize generation: %s", m["error"])
	}
}

func TestTaskPrincipal_AuthenticatedThenSessionThenNobody(t *testing.T) {
	ctx := context.Background()
	session := runtime.WithSessionID(ctx, "s1")
	for _, c := range []struct {
		ctx  context.Context
		want string
	}{
		{ctx, ""},
		{session, "session:s1"},
		{runtime.WithPrincipal(session, &runtime.Principal{ID: "alice"}), "principal:alice"},
		{runtime.WithPrincipal(ctx, &runtime.Principal{ID: "session:s1"}), "principal:session:s1"}, // no clash with a session
	} {
		if got := mcp.TaskPrincipal(c.ctx); got != c.want {
			t.Errorf("TaskPrincipal = %q, want %q", got, c.want)
		}
	}
}

// downStore is a TaskStore whose Update fails, as a shared store does while it cannot be
// reached, the next fail times.
type downStore struct {
	mcp.TaskStore
	fail atomic.Int32
}

func (d *downStore) Update(ctx context.Context, principal, id string, fn func(t *mcp.TaskRecord) bool) (*mcp.TaskRecord, error) {
	if d.fail.Add(-1) >= 0 {
		return nil, errors.New("the store is unavailable; retry")
	}
	return d.TaskStore.Update(ctx, principal, id, fn)
}

// A task that ends while its store cannot be reached is settled once the store is back: it
// stayed working until its TTL.
func TestTasks_AnEndKeptOnceTheStoreIsBack(t *testing.T) {
	store := &downStore{TaskStore: mcp.NewMemoryTaskStore(nil)}
	s, started, release, _ := taskServer(t, &mcp.ServerOptions{TaskStore: store})
	c := connect(t, s)
	id := c.callTask("wait")
	<-started
	store.fail.Store(3)
	close(release)
	c.await(id, mcp.TaskCompleted)
}
