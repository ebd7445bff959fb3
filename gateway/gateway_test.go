package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/gateway"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// twoServers is a gateway over examples/echo (prefix "echo", the default: its name) and
// examples/everything (prefix "ev"), in that order.
func twoServers(t *testing.T, everythingRelay string) *fixture {
	if everythingRelay == "" {
		everythingRelay = `"relay": {"prefix": "ev"}`
	}
	return startGateway(t, config(
		entry("echo", echoBin(t), `"type": "stdio", "autoApprove": ["echo"]`),
		entry("everything", everythingBin(t), everythingRelay),
		entry("off", "/nonexistent/never-started", `"disabled": true`),
	))
}

// Merged lists: every upstream's tools and prompts under PREFIX__NAME, resources and
// templates with their own URIs, for both generations, in memory and over HTTP.
func TestGateway_MergedListsWithPrefixes(t *testing.T) {
	f := twoServers(t, "")
	eachClient(t, f, func(t *testing.T, c *client.Client) {
		tools := toolNames(t, c)
		for _, want := range []string{"echo__echo", "echo__sleep", "ev__test_simple_text", "ev__test_tool_with_progress"} {
			if !slices.Contains(tools, want) {
				t.Errorf("tools/list lacks %s: %v", want, tools)
			}
		}
		for _, name := range tools {
			if !strings.HasPrefix(name, "echo__") && !strings.HasPrefix(name, "ev__") {
				t.Errorf("tool %q has no upstream's prefix", name)
			}
		}
		if prompts := promptNames(t, c); !slices.Contains(prompts, "ev__test_simple_prompt") || slices.ContainsFunc(prompts, func(p string) bool { return !strings.HasPrefix(p, "ev__") }) {
			t.Errorf("prompts/list: %v", prompts)
		}
		var uris []string
		for r, err := range c.ListResources(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			uris = append(uris, r.URI)
		}
		if !slices.Contains(uris, "test://static-text") || !slices.Contains(uris, "test://watched-resource") {
			t.Errorf("resources/list: %v", uris)
		}
		var templates []string
		for r, err := range c.ListResourceTemplates(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			templates = append(templates, r.URITemplate)
		}
		if !slices.Contains(templates, "test://template/{id}/data") {
			t.Errorf("resources/templates/list: %v", templates)
		}
	})
	st := f.g.Status()
	if len(st) != 2 || st[0].Name != "echo" || st[0].State != "up" || st[1].State != "up" || st[0].Tools != 2 {
		t.Errorf("status: %+v", st)
	}
}

// Allow and deny globs apply to each server's own names; a tool left out is unknown to the
// gateway, not merely unlisted.
func TestGateway_AllowAndDeny(t *testing.T) {
	f := startGateway(t, config(
		entry("echo", echoBin(t), `"relay": {"tools": {"allow": ["ec*"]}}`),
		entry("everything", everythingBin(t), `"relay": {"prefix": "ev", "tools": {"allow": ["test_*"], "deny": ["test_*elicitation*", "test_sampling"]}, "prompts": {"deny": ["*"]}}`),
	))
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	tools := toolNames(t, c)
	if !slices.Contains(tools, "echo__echo") || slices.Contains(tools, "echo__sleep") {
		t.Errorf("allow ec*: %v", tools)
	}
	for _, name := range tools {
		if strings.HasPrefix(name, "ev__") && (!strings.HasPrefix(name, "ev__test_") || strings.Contains(name, "elicitation") || name == "ev__test_sampling") {
			t.Errorf("allow test_*, deny test_*elicitation* and test_sampling let %s through", name)
		}
	}
	if !slices.Contains(tools, "ev__test_simple_text") {
		t.Errorf("allowed tool missing: %v", tools)
	}
	// No prompt is left: the list is empty (the gateway declares prompts whatever its servers
	// offer now, since they come and go).
	var je *jsonrpc.Error
	for p, err := range c.ListPrompts(context.Background()) {
		t.Errorf("prompts deny *: prompts/list gave %v %v", p, err)
	}
	if _, err := c.CallTool(context.Background(), "echo__sleep", map[string]int{"ms": 1}); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("a denied tool: %v, want -32602 unknown tool", err)
	}
	if _, err := c.GetPrompt(context.Background(), "ev__test_simple_prompt", nil); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("a denied prompt: %v, want -32602 unknown prompt", err)
	}
	// The status counts what each server offers through the gateway.
	evTools := 0
	for _, name := range tools {
		if strings.HasPrefix(name, "ev__") {
			evTools++
		}
	}
	for _, s := range f.g.Status() {
		if s.Name == "echo" && s.Tools != 1 || s.Name == "everything" && (s.Tools != evTools || s.Prompts != 0) {
			t.Errorf("status of %s: %d tools, %d prompts; want what is listed (echo 1, everything %d and 0)", s.Name, s.Tools, s.Prompts, evTools)
		}
	}
}

// Every method that names something reaches the upstream that owns it, with the upstream's
// own name: tools, prompts, resources, templates and completions; progress and log
// messages come back to the call that caused them.
func TestGateway_Routing(t *testing.T) {
	f := twoServers(t, "")
	eachClient(t, f, func(t *testing.T, c *client.Client) {
		ctx := context.Background()
		r, err := c.CallTool(ctx, "echo__echo", map[string]string{"text": "through the gateway"})
		if err != nil || text(r) != "through the gateway" {
			t.Errorf("echo__echo: %v %v", text(r), err)
		}
		if r, err = c.CallTool(ctx, "ev__test_simple_text", nil); err != nil || !strings.Contains(text(r), "simple text") {
			t.Errorf("ev__test_simple_text: %q %v", text(r), err)
		}
		if r, err = c.CallTool(ctx, "ev__test_error_handling", nil); err != nil || !r.IsError {
			t.Errorf("a tool error passes as a tool error: %+v %v", r, err)
		}
		res, err := c.ReadResource(ctx, "test://static-text")
		if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "static text") {
			t.Errorf("resources/read: %+v %v", res, err)
		}
		if res, err = c.ReadResource(ctx, "test://template/123/data"); err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "123") {
			t.Errorf("resources/read of a template: %+v %v", res, err)
		}
		var je *jsonrpc.Error
		if _, err = c.ReadResource(ctx, "test://nobody-lists-this"); !errors.As(err, &je) || (je.Code != jsonrpc.CodeInvalidParams && je.Code != -32002) {
			t.Errorf("an unknown resource: %v, want resource not found", err)
		}
		p, err := c.GetPrompt(ctx, "ev__test_prompt_with_arguments", map[string]string{"arg1": "one", "arg2": "two"})
		if err != nil || len(p.Messages) == 0 {
			t.Fatalf("prompts/get: %+v %v", p, err)
		}
		if tc, _ := p.Messages[0].Content.(*mcp.TextContent); tc == nil || !strings.Contains(tc.Text, "one") || !strings.Contains(tc.Text, "two") {
			t.Errorf("prompt message: %+v", p.Messages[0].Content)
		}
		comp, err := c.Complete(ctx, mcp.CompleteReference{Type: "ref/prompt", Name: "ev__test_prompt_with_arguments"}, "arg1", "", nil)
		if err != nil || len(comp.Values) == 0 {
			t.Errorf("completion/complete: %+v %v", comp, err)
		}
		var progress []float64
		if _, err = c.CallTool(ctx, "ev__test_tool_with_progress", nil, client.WithProgress(func(p client.Progress) { progress = append(progress, p.Progress) })); err != nil {
			t.Fatal(err)
		}
		if len(progress) < 3 || !slices.IsSorted(progress) {
			t.Errorf("progress through the gateway: %v, want at least 3, increasing", progress)
		}
	})
}

// Log messages an upstream sends during a call reach the host at the level it asked for
// (MCP 2025-11-25 and 2026-07-28, Utilities › Logging).
func TestGateway_LoggingReachesTheCaller(t *testing.T) {
	f := twoServers(t, "")
	eachClient(t, f, func(t *testing.T, c *client.Client) {
		ctx := context.Background()
		if err := c.SetLogLevel(ctx, mcp.LevelDebug); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var levels []string
		_, err := c.CallTool(ctx, "ev__test_tool_with_logging", nil, client.WithNotifications(func(method string, params json.RawMessage) {
			if method == "notifications/message" {
				var m struct{ Level string }
				json.Unmarshal(params, &m)
				mu.Lock()
				levels = append(levels, m.Level)
				mu.Unlock()
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(levels) < 3 {
			t.Errorf("log messages through the gateway: %v, want at least 3", levels)
		}
	})
}

// A call the host cancels ends at once, and the gateway goes on serving.
func TestGateway_CancellationReachesTheUpstream(t *testing.T) {
	f := twoServers(t, "")
	eachClient(t, f, func(t *testing.T, c *client.Client) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := c.CallTool(ctx, "echo__sleep", map[string]int{"ms": 600_000})
			done <- err
		}()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v", err)
		}
		r, err := c.CallTool(context.Background(), "echo__echo", map[string]string{"text": "after"})
		if err != nil || text(r) != "after" {
			t.Errorf("after a cancel: %q %v", text(r), err)
		}
	})
}

// An upstream that cannot start is down, named in the status with why; the others serve.
func TestGateway_UpstreamThatCannotStartIsDownAndNamed(t *testing.T) {
	f := startGateway(t, config(
		entry("broken", "/nonexistent/relay-gateway-test-server", `"relay": {"restart": {"policy": "never"}}`),
		entry("echo", echoBin(t), ""),
	))
	st := f.g.Status()
	if st[0].State != "down" || !strings.Contains(st[0].LastError, "nonexistent") {
		t.Errorf("broken upstream's status: %+v", st[0])
	}
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	r, err := c.CallTool(context.Background(), "echo__echo", map[string]string{"text": "ok"})
	if err != nil || text(r) != "ok" {
		t.Errorf("the other upstream: %q %v", text(r), err)
	}
	if !f.g.Ready() {
		t.Error("not ready with one upstream up and every one tried")
	}
	// The same, as the gateway's own resource.
	res, err := c.ReadResource(context.Background(), gateway.StatusURI)
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("%s: %+v %v", gateway.StatusURI, res, err)
	}
	var status struct{ Servers []gateway.UpstreamStatus }
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &status); err != nil || len(status.Servers) != 2 ||
		status.Servers[0].Name != "broken" || status.Servers[0].State != "down" || status.Servers[1].State != "up" {
		t.Errorf("%s: %s (%v)", gateway.StatusURI, res.Contents[0].Text, err)
	}
}

// waitForTools waits for cond, checked after each change of the gateway's tool list that c
// hears of, until ctx ends.
func waitForTools(t *testing.T, c *client.Client, what string, cond func([]string) bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The first notification is the acknowledgement: listed after it, nothing is missed.
	changed := make(chan struct{}, 1)
	lctx, stop := context.WithCancel(ctx)
	listened := make(chan error, 1)
	go func() {
		listened <- c.Listen(lctx, mcp.SubscriptionFilter{ToolsListChanged: true}, func(string, json.RawMessage) {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
	}()
	defer func() { stop(); <-listened }()
	for {
		select {
		case <-changed:
		case err := <-listened:
			listened <- err
			t.Fatalf("%s: the listen ended: %v; tools %v", what, err, listedTools(t, c))
		case <-ctx.Done():
			t.Fatalf("%s: never happened; tools %v", what, listedTools(t, c))
		}
		if names := listedTools(t, c); cond(names) {
			return names
		}
	}
}

// Sessions stay apart over HTTP: with the upstreams shared, each initialize-generation
// session gets the log messages at the level it set, and no other's (MCP 2025-11-25,
// Utilities › Logging: logging/setLevel is the session's).
func TestGateway_SessionsKeepTheirOwnLogLevel(t *testing.T) {
	f := twoServers(t, "")
	url := serveHTTP(t, f.g.Server())
	verbose := connect(t, client.HTTP(url), client.WithVersion(mcp.Version20251125))
	quiet := connect(t, client.HTTP(url), client.WithVersion(mcp.Version20251125))
	ctx := context.Background()
	if err := verbose.SetLogLevel(ctx, mcp.LevelDebug); err != nil {
		t.Fatal(err)
	}
	if err := quiet.SetLogLevel(ctx, mcp.LevelError); err != nil {
		t.Fatal(err)
	}
	count := func(c *client.Client) int {
		n := 0
		_, err := c.CallTool(ctx, "ev__test_tool_with_logging", nil, client.WithNotifications(func(method string, _ json.RawMessage) {
			if method == "notifications/message" {
				n++ // on the call's own response stream, before its result
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(verbose); n < 3 {
		t.Errorf("the session at debug got %d log messages, want at least 3", n)
	}
	if n := count(quiet); n != 0 {
		t.Errorf("the session at error got %d info messages, want none", n)
	}
}

// Tasks (io.modelcontextprotocol/tasks) follow their id to the upstream that runs them: a
// 2026-07-28 client gets the upstream's task under an id of the gateway's, and tasks/get
// through the gateway reaches the upstream; a client of the initialize generation, which
// cannot follow a task, gets the tool's result, the gateway having waited for the task.
func TestGateway_TasksFollowTheirIDToTheUpstream(t *testing.T) {
	f := twoServers(t, "")
	ctx := context.Background()
	modern := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	task, err := modern.StartTool(ctx, "ev__slow_compute", map[string]float64{"seconds": 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(task.ID, ".") {
		t.Errorf("task id %q is not the gateway's (upstream.id)", task.ID)
	}
	r, err := task.Wait(ctx)
	if err != nil || r.IsError || text(r) == "" {
		t.Errorf("the task's result through the gateway: %+v %v", r, err)
	}
	var je *jsonrpc.Error
	if _, err := modern.GetTask(ctx, "no-such-task"); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/get of an id the gateway never gave: %v, want -32602", err)
	}
	legacy := connect(t, client.HTTP(serveHTTP(t, f.g.Server())), client.WithVersion(mcp.Version20251125))
	r, err = legacy.CallTool(ctx, "ev__failing_job", nil) // runs only as a task
	if err != nil || !r.IsError {
		t.Errorf("a task-only tool for an initialize-generation client: %+v %v, want its tool error", r, err)
	}
}

// listedTools is toolNames, where a server that does not declare tools (tools/list is
// -32601) lists none.
func listedTools(t *testing.T, c *client.Client) []string {
	t.Helper()
	var out []string
	for tool, err := range c.ListTools(context.Background()) {
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == jsonrpc.CodeMethodNotFound {
			return nil
		}
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out = append(out, tool.Name)
	}
	return out
}

// A host's listen follows a task the gateway handed out: the acknowledgement names it, and
// notifications/tasks tell of it under the gateway's id until it is done (MCP 2026-07-28,
// io.modelcontextprotocol/tasks, and Basic › Subscriptions).
func TestGateway_ListenFollowsATaskAtItsServer(t *testing.T) {
	f := twoServers(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	// Long enough for the listen to be in force before the task is done.
	task, err := c.StartTool(ctx, "ev__slow_compute", map[string]float64{"seconds": 3})
	if err != nil {
		t.Fatal(err)
	}
	type heard struct {
		method string
		params json.RawMessage
	}
	notes := make(chan heard, 64)
	lctx, stop := context.WithCancel(ctx)
	listened := make(chan error, 1)
	go func() {
		listened <- c.Listen(lctx, mcp.SubscriptionFilter{TaskIDs: []string{task.ID, "bm8tc3VjaA.x"}}, func(method string, params json.RawMessage) {
			select {
			case notes <- heard{method, params}:
			default:
			}
		})
	}()
	defer func() { stop(); <-listened }()
	next := func() heard {
		select {
		case n := <-notes:
			return n
		case <-ctx.Done():
			t.Fatal("the listen told nothing more")
			return heard{}
		}
	}
	var ack struct {
		Notifications mcp.SubscriptionFilter `json:"notifications"`
	}
	if n := next(); n.method != "notifications/subscriptions/acknowledged" || json.Unmarshal(n.params, &ack) != nil ||
		!slices.Equal(ack.Notifications.TaskIDs, []string{task.ID}) {
		t.Fatalf("first %s %s, want the acknowledgement naming %s alone", n.method, n.params, task.ID)
	}
	for {
		n := next()
		var p struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
			Meta   map[string]json.RawMessage
		}
		if n.method != "notifications/tasks" || json.Unmarshal(n.params, &p) != nil || p.TaskID != task.ID {
			t.Fatalf("heard %s %s, want notifications/tasks of %s", n.method, n.params, task.ID)
		}
		if p.Status == "completed" {
			break
		}
	}
}
