package httpx_test

// A fleet of instances behind a round-robin balancer with no affinity (MCPOptions.SessionStore
// and Bus): an initialize-generation session's requests each land on another instance, and
// the session behaves as one (MCP 2025-11-25, Transports › Streamable HTTP › Session
// Management; Base Protocol › Cancellation; Client Features › Elicitation; Server Utilities ›
// Logging).

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/storetest"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// fleetInstance is one instance: its own mcp.Server and handler on its own socket.
type fleetInstance struct {
	name      string
	mcp       *mcp.Server
	url       string
	h         *httpx.MCPHandler
	srv       *http.Server
	started   chan string // the instance whose "wait" call is running
	cancelled chan string // the instance whose "wait" call saw its context end
	down      atomic.Bool // the balancer sends it nothing
	stop      func()      // closes the instance, once
}

// startFleet starts n instances sharing one session store, one event store and one bus.
// pollAfter, when set, closes the stream of a POST that waits that long (the client resumes it).
func startFleet(t *testing.T, n int, pollAfter ...time.Duration) []*fleetInstance {
	t.Helper()
	store, events, bus := httpx.NewMemorySessionStore(), httpx.NewMemoryEventStore(0, 0, 0), mcp.NewMemoryBus()
	var fleet []*fleetInstance
	for i := range n {
		in := &fleetInstance{name: fmt.Sprintf("i%d", i), started: make(chan string, 16), cancelled: make(chan string, 16)}
		s := mcp.NewServer(mcp.Implementation{Name: "fleet-test", Version: "1.0.0"}, &mcp.ServerOptions{Bus: bus, Logger: zap.NewNop()})
		mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Name the instance."},
			func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
				return mcp.TextResult(in.name), nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Ask the user a question; name the instance that asked."},
			func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
				res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
				if err != nil {
					return nil, err
				}
				return mcp.TextResult(fmt.Sprintf("%s asked, %s answered %v", in.name, res.Action, res.Content["name"])), nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "Wait until cancelled."},
			func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
				in.started <- in.name
				<-ctx.Done()
				in.cancelled <- in.name
				return nil, ctx.Err()
			})
		mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "Log at info and at error."},
			func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
				req.Log(mcp.LevelInfo, "fleet", "info from "+in.name)
				req.Log(mcp.LevelError, "fleet", "error from "+in.name)
				return mcp.TextResult(in.name), nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "steps", Description: "Log five steps, a while apart, then answer."},
			func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
				for i := range 5 {
					time.Sleep(60 * time.Millisecond)
					req.Log(mcp.LevelInfo, "fleet", fmt.Sprintf("step %d", i+1))
				}
				return mcp.TextResult(in.name), nil
			})
		s.AddResource(&mcp.Resource{URI: "res://a", Name: "a"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "res://a", Text: in.name}}}, nil
		})
		in.mcp = s
		o := &httpx.MCPOptions{SessionStore: store, EventStore: events, Bus: bus, Instance: in.name, Logger: zap.NewNop()}
		if len(pollAfter) > 0 {
			o.PollAfter = pollAfter[0]
		}
		in.h = httpx.NewMCPHandler(s, o)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		in.url = "http://" + ln.Addr().String() + "/mcp"
		in.srv = &http.Server{Handler: in.h}
		served := make(chan struct{})
		go func() { defer close(served); in.srv.Serve(ln) }()
		in.stop = sync.OnceFunc(func() {
			in.down.Store(true)
			in.srv.Close()
			in.h.Close()
			in.mcp.Close()
			<-served
		})
		t.Cleanup(in.stop)
		fleet = append(fleet, in)
	}
	return fleet
}

// roundRobin is a balancer with no affinity: each HTTP request goes to the next instance.
type roundRobin struct {
	fleet []*fleetInstance
	next  atomic.Int64
	inner http.RoundTripper
}

func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	in := rr.fleet[int(rr.next.Add(1)-1)%len(rr.fleet)]
	for in.down.Load() {
		in = rr.fleet[int(rr.next.Add(1)-1)%len(rr.fleet)]
	}
	r = r.Clone(r.Context())
	r.URL.Host = strings.TrimPrefix(strings.TrimSuffix(in.url, "/mcp"), "http://")
	r.Host = r.URL.Host
	return rr.inner.RoundTrip(r)
}

// connectThrough connects a 2025-11-25 client to the fleet through a round-robin balancer.
func connectThrough(t *testing.T, fleet []*fleetInstance, opts ...client.Option) *client.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: &roundRobin{fleet: fleet, inner: tr}}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c, err := client.Connect(ctx, &client.HTTPTransport{URL: fleet[0].url, Client: hc}, append(opts, client.WithVersion(legacyVersion))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("result: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result: %+v", res)
	}
	return tc.Text
}

func TestFleet_ASessionIsServedByEveryInstance(t *testing.T) {
	fleet := startFleet(t, 3)
	c := connectThrough(t, fleet)
	seen := map[string]int{}
	for range 9 {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		res, err := c.CallTool(ctx, "whoami", nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		seen[text(t, res)]++
	}
	if len(seen) != 3 {
		t.Fatalf("the session's calls were served by %v, want all three instances", seen)
	}
}

func TestFleet_AnAnswerReachesTheInstanceThatAsked(t *testing.T) {
	fleet := startFleet(t, 2)
	c := connectThrough(t, fleet, client.WithElicitation(func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}))
	for range 4 { // the question comes on the call's stream; its answer is POSTed to the other instance
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		res, err := c.CallTool(ctx, "ask", nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if got := text(t, res); !strings.HasSuffix(got, "asked, accept answered Ada") {
			t.Fatalf("ask: %q", got)
		}
	}
}

func TestFleet_ACancelReachesTheInstanceRunningTheRequest(t *testing.T) {
	fleet := startFleet(t, 2)
	c := connectThrough(t, fleet)
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := c.CallTool(ctx, "wait", nil)
			done <- err
		}()
		select { // the call is running on one instance; its cancel is POSTed to the other
		case <-fleet[0].started:
		case <-fleet[1].started:
		case <-time.After(waitLong):
			t.Fatal("the call never started")
		}
		cancel()
		<-done
		select {
		case <-fleet[0].cancelled:
		case <-fleet[1].cancelled:
		case <-time.After(waitLong):
			t.Fatal("the cancel never reached the instance running the call")
		}
	}
}

func TestFleet_ALogLevelSetThroughOneInstanceHoldsOnEvery(t *testing.T) {
	fleet := startFleet(t, 3)
	var mu sync.Mutex
	var logs []string
	c := connectThrough(t, fleet)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := c.SetLogLevel(ctx, mcp.LevelError); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		_, err := c.CallTool(ctx, "log", nil, client.WithNotifications(func(method string, params json.RawMessage) {
			if method == "notifications/message" {
				mu.Lock()
				logs = append(logs, string(params))
				mu.Unlock()
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 6 {
		t.Fatalf("got %d log messages, want the 6 at error: %q", len(logs), logs)
	}
	for _, l := range logs {
		if !strings.Contains(l, `"error"`) {
			t.Fatalf("a message below the level set: %s", l)
		}
	}
}

func TestFleet_ADeletedSessionEndsOnEveryInstance(t *testing.T) {
	fleet := startFleet(t, 2)
	c := connectThrough(t, fleet)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for range 2 { // a replica on each
		if _, err := c.CallTool(ctx, "whoami", nil); err != nil {
			t.Fatal(err)
		}
	}
	if fleet[0].h.Sessions() != 1 || fleet[1].h.Sessions() != 1 {
		t.Fatalf("sessions: %d and %d, want one on each", fleet[0].h.Sessions(), fleet[1].h.Sessions())
	}
	c.Close() // DELETE, through one of them
	deadline := time.Now().Add(waitLong)
	for fleet[0].h.Sessions()+fleet[1].h.Sessions() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sessions after DELETE: %d and %d, want none", fleet[0].h.Sessions(), fleet[1].h.Sessions())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFleet_AnInstanceStopsAndItsSessionsGoOn(t *testing.T) {
	fleet := startFleet(t, 2)
	c := connectThrough(t, fleet)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := c.SetLogLevel(ctx, mcp.LevelError); err != nil {
		t.Fatal(err)
	}
	fleet[0].stop() // the instance that opened the session, gone with everything it held
	var logs atomic.Int32
	for range 3 {
		res, err := c.CallTool(ctx, "log", nil, client.WithNotifications(func(method string, params json.RawMessage) {
			if method == "notifications/message" {
				logs.Add(1)
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		if got := text(t, res); got != "i1" {
			t.Fatalf("served by %s", got)
		}
	}
	if logs.Load() != 3 {
		t.Fatalf("%d log messages, want 3: the level set before the instance stopped holds", logs.Load())
	}
}

func TestFleet_AStreamResumedOnAnotherInstanceLosesNothing(t *testing.T) {
	fleet := startFleet(t, 2, 100*time.Millisecond)
	c := connectThrough(t, fleet)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := c.SetLogLevel(ctx, mcp.LevelInfo); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var steps []string
		res, err := c.CallTool(ctx, "steps", nil, client.WithNotifications(func(method string, params json.RawMessage) {
			if method == "notifications/message" {
				var m struct{ Data string }
				json.Unmarshal(params, &m)
				steps = append(steps, m.Data)
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		text(t, res)
		// The POST's stream closed after 100 ms; the client resumed it with Last-Event-ID,
		// and the balancer sent that GET to the other instance.
		if got := strings.Join(steps, ", "); got != "step 1, step 2, step 3, step 4, step 5" {
			t.Fatalf("steps heard: %s", got)
		}
	}
}

func TestFleet_AnUpdateReachesTheGETStreamWhereverTheSubscriptionWasMade(t *testing.T) {
	fleet := startFleet(t, 3)
	c := connectThrough(t, fleet)
	for round := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		heard := make(chan string, 16)
		done := make(chan error, 1)
		go func() {
			done <- c.Listen(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"res://a"}}, func(method string, params json.RawMessage) {
				heard <- method
			})
		}()
		select {
		case m := <-heard:
			if m != "notifications/subscriptions/acknowledged" {
				t.Fatalf("first heard %s", m)
			}
		case <-time.After(waitLong):
			t.Fatal("no acknowledgement")
		}
		// The update is made on one instance; the servers share their changes
		// (mcp.ServerOptions.Bus). The subscription reaches the instance holding the GET
		// stream on the bus, a moment after it was made: the update is made again until it
		// is heard.
		deadline := time.Now().Add(waitLong)
	updating:
		for {
			fleet[round%len(fleet)].mcp.ResourceUpdated("res://a")
			select {
			case m := <-heard:
				if m != "notifications/resources/updated" {
					t.Fatalf("round %d: heard %s", round, m)
				}
				break updating
			case <-time.After(250 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatalf("round %d: the update never reached the GET stream", round)
				}
			}
		}
		select {
		case m := <-heard:
			t.Fatalf("round %d: heard %s again: only the instance holding the GET stream sends it", round, m)
		case <-time.After(200 * time.Millisecond):
		}
		cancel()
		<-done
	}
}

// TestMemorySessionStore: the memory store passes the suite every SessionStore passes
// (package fleet's Redis store runs it too).
func TestMemorySessionStore(t *testing.T) {
	storetest.SessionStore(t, func(*testing.T) httpx.SessionStore { return httpx.NewMemorySessionStore() })
}
