package mcp_test

// A fleet in one test: two or more mcp.Servers sharing a Bus (and a TaskStore), each served
// by its own httpx handler on its own socket on 127.0.0.1, reached with the project's own
// client. What one instance changes, a client listening on another hears (issue 26).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
	mcpclient "github.com/relayrt/relay/mcp/client"
)

// fleetTopic is the topic the fleet's Servers use by default: "relay/mcp/" and their name.
const fleetTopic = "relay/mcp/fleet"

// instance is one Server of a test fleet, served over HTTP.
type instance struct {
	srv     *mcp.Server
	url     string
	release chan struct{} // closed: the wait tool's tasks finish
	stopped chan struct{} // closed when the block tool's task has stopped
}

type instanceOpts struct {
	store mcp.TaskStore
	log   *zap.Logger
}

// newInstance starts an instance on bus; the test's cleanup stops it (the HTTP server, the
// handler, then the Server, which stops its bus goroutines).
func newInstance(t *testing.T, bus mcp.Bus, o instanceOpts) *instance {
	t.Helper()
	if o.log == nil {
		o.log = zap.NewNop()
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "fleet", Version: "1"}, &mcp.ServerOptions{
		Bus: bus, TaskStore: o.store, Logger: o.log, TaskPollInterval: 20 * time.Millisecond})
	in := &instance{srv: srv, release: make(chan struct{}), stopped: make(chan struct{})}
	srv.AddResource(&mcp.Resource{URI: "test://doc", Name: "doc"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, Text: "doc"}}}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "touch", Description: "Say that test://doc changed."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			srv.ResourceUpdated("test://doc")
			return mcp.TextResult("touched"), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "grow", Description: "Add a tool named name."},
		func(ctx context.Context, req *mcp.CallToolRequest, args struct {
			Name string `json:"name"`
		}) (*mcp.CallToolResult, error) {
			mcp.AddTool(srv, &mcp.Tool{Name: args.Name}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
				return mcp.TextResult(args.Name), nil
			})
			return mcp.TextResult("grown"), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Finish when the test says."},
		func(ctx context.Context, req *mcp.CallToolRequest, args struct{}) (*mcp.CallToolResult, error) {
			select {
			case <-in.release:
				return mcp.TextResult("waited"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}, mcp.AsTask(mcp.TaskOptional))
	mcp.AddTool(srv, &mcp.Tool{Name: "ask", Description: "Ask the user's name, as a task."},
		func(ctx context.Context, req *mcp.CallToolRequest, args struct{}) (*mcp.CallToolResult, error) {
			who, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			return mcp.TextResult(fmt.Sprint("hello ", who.Content["name"])), nil
		}, mcp.AsTask(mcp.TaskOptional))
	mcp.AddTool(srv, &mcp.Tool{Name: "block", Description: "Run until cancelled, as a task."},
		func(ctx context.Context, req *mcp.CallToolRequest, args struct{}) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			close(in.stopped)
			return nil, ctx.Err()
		}, mcp.AsTask(mcp.TaskOptional))
	h := httpx.NewMCPHandler(srv, &httpx.MCPOptions{Logger: zap.NewNop()})
	hs := httptest.NewServer(h) // 127.0.0.1, an ephemeral port
	in.url = hs.URL + "/mcp"
	t.Cleanup(func() { hs.Close(); h.Close(); srv.Close() })
	return in
}

// dial connects a client of the 2026-07-28 generation, or of the one named by opts.
func dial(t *testing.T, in *instance, opts ...mcpclient.Option) *mcpclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mcpclient.Connect(ctx, mcpclient.HTTP(in.url), opts...)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(t *testing.T, c *mcpclient.Client, tool string, args any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CallTool(ctx, tool, args); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
}

// note is a notification a Listen heard.
type note struct {
	method string
	params json.RawMessage
}

func (n note) field(name string) string {
	var m map[string]any
	json.Unmarshal(n.params, &m)
	s, _ := m[name].(string)
	return s
}

// listening is a Listen in progress; stop ends it and waits for it.
type listening struct {
	heard chan note
	stop  func()
}

// listen starts c.Listen(filter) and returns once it has been acknowledged, with the
// acknowledgement's honoured filter.
func listen(t *testing.T, c *mcpclient.Client, filter mcp.SubscriptionFilter) (*listening, mcp.SubscriptionFilter) {
	t.Helper()
	l, acked := startListen(t, c, filter)
	select {
	case n := <-acked:
		var p struct {
			Notifications mcp.SubscriptionFilter `json:"notifications"`
		}
		json.Unmarshal(n.params, &p)
		return l, p.Notifications
	case <-time.After(10 * time.Second):
		t.Fatal("the listen was not acknowledged")
	}
	return nil, filter
}

// startListen starts c.Listen(filter) without waiting: the acknowledgement comes on acked,
// what follows on the listening's heard.
func startListen(t *testing.T, c *mcpclient.Client, filter mcp.SubscriptionFilter) (*listening, <-chan note) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &listening{heard: make(chan note, 64)}
	acked := make(chan note, 1)
	done := make(chan error, 1)
	go func() {
		done <- c.Listen(ctx, filter, func(method string, params json.RawMessage) {
			n := note{method, append(json.RawMessage(nil), params...)}
			if method == "notifications/subscriptions/acknowledged" {
				acked <- n
				return
			}
			select {
			case l.heard <- n:
			default:
				t.Errorf("more notifications than the test reads; dropped %s", method)
			}
		})
	}()
	var once sync.Once
	l.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Listen: %v", err)
			}
		})
	}
	t.Cleanup(l.stop)
	return l, acked
}

// next returns the next notification heard, failing the test if none comes in time.
func (l *listening) next(t *testing.T, want string) note {
	t.Helper()
	select {
	case n := <-l.heard:
		return n
	case <-time.After(10 * time.Second):
		t.Fatalf("heard nothing; want %s", want)
	}
	return note{}
}

// quiet fails the test if a notification is heard within a moment.
func (l *listening) quiet(t *testing.T, after string) {
	t.Helper()
	select {
	case n := <-l.heard:
		t.Fatalf("after %s, heard %s %s too: each change is told once", after, n.method, n.params)
	case <-time.After(150 * time.Millisecond):
	}
}

// MCP 2026-07-28, Basic › Subscriptions (subscriptions/listen): a client listening on
// instance A hears of a resource updated through a tool call on instance B, and of a tools
// list changed on B, once each; B's own listener hears them once too, not once more when the
// bus brings them back, and A's own changes reach its listener once.
func TestBus_ListenOnOneInstanceHearsChangesMadeOnAnother(t *testing.T) {
	bus := mcp.NewMemoryBus()
	a, b := newInstance(t, bus, instanceOpts{}), newInstance(t, bus, instanceOpts{})
	ca, cb := dial(t, a), dial(t, b)
	filter := mcp.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://doc"}}
	onA, honoured := listen(t, ca, filter)
	if !honoured.ToolsListChanged || len(honoured.ResourceSubscriptions) != 1 {
		t.Fatalf("acknowledged %+v, want the whole filter", honoured)
	}
	onB, _ := listen(t, cb, filter)

	call(t, cb, "touch", nil)
	for name, l := range map[string]*listening{"A": onA, "B": onB} {
		n := l.next(t, "resources/updated")
		// The instances' own tools, added before the listens, are told on the bus too: on a
		// loaded machine the other instance may relay that after its listen began. The bus
		// keeps order, so it comes before the update.
		for n.method == "notifications/tools/list_changed" {
			n = l.next(t, "resources/updated")
		}
		if n.method != "notifications/resources/updated" || n.field("uri") != "test://doc" {
			t.Fatalf("%s heard %s %s, want notifications/resources/updated of test://doc", name, n.method, n.params)
		}
		l.quiet(t, "a resource updated on B")
	}

	call(t, cb, "grow", map[string]any{"name": "new"})
	for name, l := range map[string]*listening{"A": onA, "B": onB} {
		if n := l.next(t, "tools/list_changed"); n.method != "notifications/tools/list_changed" {
			t.Fatalf("%s heard %s %s, want notifications/tools/list_changed", name, n.method, n.params)
		}
		l.quiet(t, "a tool added on B")
	}

	call(t, ca, "touch", nil)
	for name, l := range map[string]*listening{"A": onA, "B": onB} {
		if n := l.next(t, "resources/updated"); n.method != "notifications/resources/updated" {
			t.Fatalf("%s heard %s %s, want notifications/resources/updated", name, n.method, n.params)
		}
		l.quiet(t, "a resource updated on A")
	}
}

// MCP 2025-11-25, Server Features › Resources › Subscriptions: a session of the initialize
// generation on A that subscribed to a resource (resources/subscribe) is sent
// notifications/resources/updated when it changes through B; and the list changes B makes,
// which that generation's servers tell unasked, reach it too.
func TestBus_LegacySessionHearsAnUpdateMadeOnAnotherInstance(t *testing.T) {
	bus := mcp.NewMemoryBus()
	a, b := newInstance(t, bus, instanceOpts{}), newInstance(t, bus, instanceOpts{})
	legacy := dial(t, a, mcpclient.WithVersion(mcp.Version20251125))
	if legacy.Modern() {
		t.Fatal("the client speaks 2026-07-28; want the initialize generation")
	}
	onA, _ := listen(t, legacy, mcp.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://doc"}})
	cb := dial(t, b)

	call(t, cb, "touch", nil)
	if n := onA.next(t, "resources/updated"); n.method != "notifications/resources/updated" || n.field("uri") != "test://doc" {
		t.Fatalf("heard %s %s, want notifications/resources/updated of test://doc", n.method, n.params)
	}
	onA.quiet(t, "a resource updated on B")
	call(t, cb, "grow", map[string]any{"name": "new"})
	if n := onA.next(t, "tools/list_changed"); n.method != "notifications/tools/list_changed" {
		t.Fatalf("heard %s %s, want notifications/tools/list_changed", n.method, n.params)
	}
}

// Tasks (io.modelcontextprotocol/tasks) over a fleet: with one TaskStore shared, a listen on A
// that names a task made on B (notifications.taskIds) hears its notifications/tasks when it
// finishes on B, the whole task as tasks/get gives it.
func TestBus_ListenOnOneInstanceHearsATaskFinishOnAnother(t *testing.T) {
	bus, store := mcp.NewMemoryBus(), mcp.NewMemoryTaskStore(nil)
	a, b := newInstance(t, bus, instanceOpts{store: store}), newInstance(t, bus, instanceOpts{store: store})
	ca, cb := dial(t, a), dial(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	task, err := cb.StartTool(ctx, "wait", nil)
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != "working" {
		t.Fatalf("task %+v, want one working", task)
	}
	onA, honoured := listen(t, ca, mcp.SubscriptionFilter{TaskIDs: []string{task.ID}})
	if len(honoured.TaskIDs) != 1 || honoured.TaskIDs[0] != task.ID {
		t.Fatalf("acknowledged tasks %v, want %s: A finds it in the shared store", honoured.TaskIDs, task.ID)
	}
	close(b.release)
	n := onA.next(t, "notifications/tasks")
	if n.method != "notifications/tasks" || n.field("taskId") != task.ID || n.field("status") != "completed" {
		t.Fatalf("heard %s %s, want notifications/tasks of %s completed", n.method, n.params, task.ID)
	}
	var p struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if json.Unmarshal(n.params, &p); len(p.Result.Content) != 1 || p.Result.Content[0].Text != "waited" {
		t.Fatalf("the task told without its result: %s", n.params)
	}
}

// Tasks over a fleet, behind a load balancer: the task runs on B, and the client's
// tasks/update (its answer to the task's question) and tasks/cancel reach A. A writes them to
// the shared store, and B, told through the bus, runs the tool again with the answer, or stops
// it (io.modelcontextprotocol/tasks: tasks/update, tasks/cancel).
func TestBus_ATaskRunningOnOneInstanceIsAnsweredAndCancelledThroughAnother(t *testing.T) {
	bus, store := mcp.NewMemoryBus(), mcp.NewMemoryTaskStore(nil)
	a, b := newInstance(t, bus, instanceOpts{store: store}), newInstance(t, bus, instanceOpts{store: store})
	// One client's two connections, as a load balancer would spread its requests.
	answer := mcpclient.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	})
	ca, cb := dial(t, a, answer), dial(t, b, answer)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	asked, err := cb.StartTool(ctx, "ask", nil)
	if err != nil {
		t.Fatal(err)
	}
	onA, err := ca.GetTask(ctx, asked.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := onA.Wait(ctx) // answers through A, and polls A
	if err != nil {
		t.Fatalf("waiting on A for the task B runs: %v", err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hello Ada" {
		t.Fatalf("result %+v, want hello Ada", res.Content)
	}

	blocked, err := cb.StartTool(ctx, "block", nil)
	if err != nil {
		t.Fatal(err)
	}
	onA, err = ca.GetTask(ctx, blocked.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := onA.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.stopped:
	case <-ctx.Done():
		t.Fatal("the task cancelled through A still runs on B")
	}
}

// flakyBus is a MemoryBus that a test can fail: drop ends every subscription (the bus lost
// them, as a connection to a server that went away), down makes Publish and Subscribe fail
// (or Publish hang, as a bus that stopped answering), and hold makes Subscribe wait until
// the test lets it go.
type flakyBus struct {
	*mcp.MemoryBus
	mu         sync.Mutex
	cancels    []context.CancelFunc
	down       bool
	hang       bool          // with down: Publish waits for its ctx
	hold       chan struct{} // non-nil: Subscribe waits for it to close
	subscribes int           // Subscribe calls that succeeded
}

func newFlakyBus() *flakyBus { return &flakyBus{MemoryBus: mcp.NewMemoryBus()} }

var errBusDown = errors.New("test bus: down")

func (f *flakyBus) Publish(ctx context.Context, topic string, msg []byte) error {
	f.mu.Lock()
	down, hang := f.down, f.hang
	f.mu.Unlock()
	if down && hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if down {
		return errBusDown
	}
	return f.MemoryBus.Publish(ctx, topic, msg)
}

func (f *flakyBus) Subscribe(ctx context.Context, topic string) (<-chan []byte, error) {
	f.mu.Lock()
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, errBusDown
	}
	sctx, cancel := context.WithCancel(ctx)
	f.cancels = append(f.cancels, cancel)
	f.subscribes++
	return f.MemoryBus.Subscribe(sctx, topic)
}

// drop ends every subscription; down says whether the bus is down from now on.
func (f *flakyBus) drop(down, hang bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.cancels {
		c()
	}
	f.cancels, f.down, f.hang = nil, down, hang
}

func (f *flakyBus) up() {
	f.mu.Lock()
	f.down, f.hang = false, false
	f.mu.Unlock()
}

func (f *flakyBus) subscribed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.subscribes
}

// A bus that loses the subscription (closes its channel) is subscribed to again, with
// backoff while it is down; since other instances' changes may have been missed meanwhile,
// the listeners are then told that what they follow changed (each list, each subscribed
// resource: notifications they may always be sent again), and hear other instances'
// changes again.
func TestBus_ALostSubscriptionIsMadeAgainAndListenersAreToldTheListsChanged(t *testing.T) {
	bus := newFlakyBus()
	a, b := newInstance(t, bus, instanceOpts{}), newInstance(t, bus, instanceOpts{})
	ca, cb := dial(t, a), dial(t, b)
	onA, _ := listen(t, ca, mcp.SubscriptionFilter{ToolsListChanged: true, ResourcesListChanged: true,
		ResourceSubscriptions: []string{"test://doc"}})
	legacy := dial(t, a, mcpclient.WithVersion(mcp.Version20251125))
	onLegacy, _ := listen(t, legacy, mcp.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://doc"}})
	listen(t, cb, mcp.SubscriptionFilter{ToolsListChanged: true}) // B subscribes too
	before := bus.subscribed()

	bus.drop(true, false) // lost, and down: the first attempts fail
	time.Sleep(200 * time.Millisecond)
	onA.quiet(t, "the subscription was lost")
	bus.up()

	want := map[string]bool{"notifications/tools/list_changed": true, "notifications/resources/list_changed": true,
		"notifications/resources/updated test://doc": true}
	for range len(want) {
		n := onA.next(t, "the lists changed")
		key := n.method
		if u := n.field("uri"); u != "" {
			key += " " + u
		}
		if !want[key] {
			t.Fatalf("heard %s %s; want only %v", n.method, n.params, want)
		}
		delete(want, key)
	}
	onA.quiet(t, "the subscription was made again")
	// The legacy session hears what its client asked for: tools' changes (the client keeps
	// those of the lists it listens for) and its resource.
	got := map[string]bool{}
	for range 2 {
		n := onLegacy.next(t, "the lists changed")
		got[n.method] = true
	}
	if !got["notifications/tools/list_changed"] || !got["notifications/resources/updated"] {
		t.Fatalf("the legacy session heard %v", got)
	}
	// A has subscribed again (it told its listeners); B does so on its own backoff.
	for deadline := time.Now().Add(10 * time.Second); bus.subscribed() < before+2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions after, %d before: want both instances subscribed again", bus.subscribed(), before)
		}
	}

	call(t, cb, "grow", map[string]any{"name": "after"})
	if n := onA.next(t, "tools/list_changed"); n.method != "notifications/tools/list_changed" {
		t.Fatalf("heard %s, want B's change through the new subscription", n.method)
	}
}

// While the bus is down, and even when Publish hangs, an instance's listeners still hear
// that instance's own changes, and making them does not wait for the bus.
func TestBus_DownStillDeliversLocalChanges(t *testing.T) {
	bus := newFlakyBus()
	a := newInstance(t, bus, instanceOpts{})
	ca := dial(t, a)
	onA, _ := listen(t, ca, mcp.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://doc"}})
	bus.drop(true, true)

	start := time.Now()
	call(t, ca, "touch", nil)
	call(t, ca, "grow", map[string]any{"name": "new"})
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the calls took %v: they waited for the bus", d)
	}
	for _, want := range []string{"notifications/resources/updated", "notifications/tools/list_changed"} {
		if n := onA.next(t, want); n.method != want {
			t.Fatalf("heard %s, want %s", n.method, want)
		}
	}
	// A listen that starts while the bus is down is acknowledged at once, and hears the
	// instance's own changes.
	late, _ := listen(t, ca, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"test://doc"}})
	call(t, ca, "touch", nil)
	if n := late.next(t, "resources/updated"); n.method != "notifications/resources/updated" {
		t.Fatalf("heard %s, want the update", n.method)
	}
}

// MCP 2026-07-28, Basic › Subscriptions: the acknowledgement says that the subscription is in
// force. On an instance of a fleet it is sent only once the instance's bus subscription is,
// so that what another instance changes after the acknowledgement is heard.
func TestBus_ListenIsAcknowledgedOnlyOnceTheBusSubscriptionIsInForce(t *testing.T) {
	bus := newFlakyBus()
	hold := make(chan struct{})
	bus.hold = hold
	a, b := newInstance(t, bus, instanceOpts{}), newInstance(t, bus, instanceOpts{})
	ca, cb := dial(t, a), dial(t, b)
	onA, acked := startListen(t, ca, mcp.SubscriptionFilter{ToolsListChanged: true})
	select {
	case n := <-acked:
		t.Fatalf("acknowledged (%s) while the bus had not subscribed", n.params)
	case <-time.After(200 * time.Millisecond):
	}
	bus.mu.Lock()
	bus.hold = nil
	bus.mu.Unlock()
	close(hold)
	select {
	case <-acked:
	case <-time.After(10 * time.Second):
		t.Fatal("not acknowledged once the bus subscribed")
	}
	call(t, cb, "grow", map[string]any{"name": "new"}) // at once after the ack
	if n := onA.next(t, "tools/list_changed"); n.method != "notifications/tools/list_changed" {
		t.Fatalf("heard %s, want B's change", n.method)
	}
}

// MCP 2025-11-25, Server Features › Resources › Subscriptions: an instance answers a legacy
// session's resources/subscribe, as it acknowledges a listen, only once its bus
// subscription is in force, so that an update another instance makes after the answer is
// heard.
func TestBus_LegacySubscribeIsAnsweredOnlyOnceTheBusSubscriptionIsInForce(t *testing.T) {
	bus := newFlakyBus()
	hold := make(chan struct{})
	bus.hold = hold
	a, b := newInstance(t, bus, instanceOpts{}), newInstance(t, bus, instanceOpts{})
	legacy, cb := dial(t, a, mcpclient.WithVersion(mcp.Version20251125)), dial(t, b)
	onA, acked := startListen(t, legacy, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"test://doc"}})
	select {
	case <-acked:
		t.Fatal("resources/subscribe answered while the bus had not subscribed")
	case <-time.After(200 * time.Millisecond):
	}
	bus.mu.Lock()
	bus.hold = nil
	bus.mu.Unlock()
	close(hold)
	select {
	case <-acked:
	case <-time.After(10 * time.Second):
		t.Fatal("resources/subscribe not answered once the bus subscribed")
	}
	call(t, cb, "touch", nil)
	if n := onA.next(t, "resources/updated"); n.method != "notifications/resources/updated" {
		t.Fatalf("heard %s, want B's update", n.method)
	}
}

// A message on the bus that is not a change of the wire format (too short, another version,
// an unknown kind, a subject missing, misplaced or not UTF-8) is logged, at a bounded rate,
// and dropped; the well-formed one after them is delivered.
func TestBus_AMalformedMessageIsLoggedAndDropped(t *testing.T) {
	bus := mcp.NewMemoryBus()
	core, logs := observer.New(zapcore.WarnLevel)
	a := newInstance(t, bus, instanceOpts{log: zap.New(core)})
	ca := dial(t, a)
	onA, _ := listen(t, ca, mcp.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://doc"}})

	other := make([]byte, 16) // another instance's id
	other[0] = 7
	wire := func(version, kind byte, subject string) []byte {
		return append(append([]byte{version, kind}, other...), subject...)
	}
	bad := [][]byte{
		nil,
		{1, 1},
		wire(2, 1, ""),                   // a version to come
		wire(1, 99, ""),                  // an unknown kind
		wire(1, 4, ""),                   // a resource update without its URI
		wire(1, 1, "test://doc"),         // a list with a subject
		wire(1, 4, "test://\xff\xfedoc"), // not UTF-8
	}
	for _, msg := range bad {
		if err := bus.Publish(context.Background(), fleetTopic, msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := bus.Publish(context.Background(), fleetTopic, wire(1, 4, "test://doc")); err != nil {
		t.Fatal(err)
	}
	if n := onA.next(t, "resources/updated"); n.method != "notifications/resources/updated" || n.field("uri") != "test://doc" {
		t.Fatalf("heard %s %s, want only the well-formed update", n.method, n.params)
	}
	onA.quiet(t, "the well-formed message")
	dropped := logs.FilterMessageSnippet("dropped a malformed message from the bus").Len()
	if dropped != len(bad) {
		t.Fatalf("%d malformed messages logged, want %d: %v", dropped, len(bad), logs.All())
	}

	// A flood of them is logged at a bounded rate (10 of a kind a second), not once each.
	const flood = 100
	for range flood {
		bus.Publish(context.Background(), fleetTopic, []byte{1})
	}
	bus.Publish(context.Background(), fleetTopic, wire(1, 4, "test://doc"))
	onA.next(t, "resources/updated") // the flood has been read
	if n := logs.FilterMessageSnippet("shorter than the header").Len(); n >= flood {
		t.Fatalf("%d of %d malformed messages logged: not rate-limited", n, flood)
	}
}

// Close stops the Server's bus goroutines and waits for them, even while a subscription is
// still being made and a change is still queued for a bus that does not answer.
func TestBus_CloseStopsTheBusGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent()
	bus := newFlakyBus()
	bus.hold = make(chan struct{})  // Subscribe waits until its ctx ends
	bus.down, bus.hang = true, true // Publish too
	srv := mcp.NewServer(mcp.Implementation{Name: "fleet", Version: "1"}, &mcp.ServerOptions{Bus: bus, Logger: zap.NewNop()})
	srv.ResourceUpdated("test://doc") // the publisher starts, and waits on the bus
	h := httpx.NewMCPHandler(srv, &httpx.MCPOptions{Logger: zap.NewNop()})
	hs := httptest.NewServer(h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Its initialize starts the subscriber, which waits on the bus.
	c, err := mcpclient.Connect(ctx, mcpclient.HTTP(hs.URL+"/mcp"), mcpclient.WithVersion(mcp.Version20251125))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	hs.Close()
	h.Close()
	start := time.Now()
	srv.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}
	goleak.VerifyNone(t, before)
}
