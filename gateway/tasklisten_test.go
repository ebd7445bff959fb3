package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// Two 2026-07-28 upstreams that take a task listen and never acknowledge it: the host's
// listen is still acknowledged once taskListenWait (10 s) has passed, the deadline being
// one for all of them.
func TestGateway_TaskListenWaitsForNoServerPastItsDeadline(t *testing.T) {
	var urls []string
	for _, name := range []string{"a", "b"} {
		srv := mcp.NewServer(mcp.Implementation{Name: name, Version: "1"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "note"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
			return mcp.TextResult(in.Text), nil
		})
		addr := freeAddr(t)
		serveAt(t, addr, srv, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if bytes.Contains(body, []byte(`"taskIds"`)) {
					<-r.Context().Done() // in force, never acknowledged (a hung server)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				h.ServeHTTP(w, r)
			})
		})
		urls = append(urls, fmt.Sprintf(`%q: {"url": "http://%s/mcp", "type": "http"}`, name, addr))
	}
	f := startGateway(t, config(urls...))
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	waitForTools(t, c, "both upstreams", func(names []string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "a") }) &&
			slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "b") })
	})
	id := func(up, own string) string { return f.g.TaskIDFor("", up, own) } // a host without a principal
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	acked := make(chan time.Duration, 1)
	start := time.Now()
	listened := make(chan error, 1)
	go func() {
		listened <- c.Listen(ctx, mcp.SubscriptionFilter{TaskIDs: []string{id("a", "x"), id("b", "y")}}, func(method string, _ json.RawMessage) {
			if method == "notifications/subscriptions/acknowledged" {
				acked <- time.Since(start)
			}
		}, client.WithClientCapabilities(json.RawMessage(`{"extensions":{"`+mcp.ExtensionTasks+`":{}}}`)))
	}()
	select {
	case <-acked:
	case <-ctx.Done():
		t.Errorf("no acknowledgement in %v: taskListen waits past its 10 s deadline for the second upstream", time.Since(start))
	}
	cancel()
	<-listened
}

// While a host's listen waits for a slow upstream's acknowledgement, a notifications/tasks
// from another upstream does not stop that upstream's connection: other calls to it go on.
func TestGateway_TaskNewsDoNotStallTheUpstream(t *testing.T) {
	hung := mcp.NewServer(mcp.Implementation{Name: "b", Version: "1"}, nil)
	mcp.AddTool(hung, &mcp.Tool{Name: "note"}, func(ctx context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult(in.Text), nil
	})
	addr := freeAddr(t)
	serveAt(t, addr, hung, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"taskIds"`)) {
				<-r.Context().Done()
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
		})
	})
	f := startGateway(t, config(entry("everything", everythingBin(t), `"relay": {"prefix": "ev"}`),
		fmt.Sprintf(`"b": {"url": "http://%s/mcp", "type": "http"}`, addr)))
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	waitForTools(t, c, "both", func(n []string) bool {
		return slices.Contains(n, "ev__test_simple_text") && slices.Contains(n, "b__note")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	task, err := c.StartTool(ctx, "ev__slow_compute", map[string]float64{"seconds": 1})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{task.ID, f.g.TaskIDFor("", "b", "y")}
	lctx, stop := context.WithCancel(ctx)
	listened := make(chan error, 1)
	go func() {
		listened <- c.Listen(lctx, mcp.SubscriptionFilter{TaskIDs: ids},
			func(string, json.RawMessage) {}, client.WithClientCapabilities(json.RawMessage(`{"extensions":{"`+mcp.ExtensionTasks+`":{}}}`)))
	}()
	defer func() { stop(); <-listened }()
	wctx, wcancel := context.WithTimeout(ctx, 8*time.Second) // less than taskListenWait
	defer wcancel()
	if _, err := task.Wait(wctx); err != nil { // done: everything has told the gateway's listen
		t.Fatalf("the task through the gateway: %v", err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	defer ccancel()
	start := time.Now()
	if _, err := c.CallTool(cctx, "ev__test_simple_text", nil); err != nil {
		t.Errorf("a call to everything while the host's listen waits on b: %v after %v", err, time.Since(start))
	}
}

// An upstream that lists the same resources in another order each time (a map-backed
// server) is not listened to again for that: its change stream is opened again only when
// the resources differ.
func TestGateway_ResourcesListedInAnotherOrderAreNotListenedToAgain(t *testing.T) {
	srv := mcp.NewServer(mcp.Implementation{Name: "r", Version: "1"}, nil)
	for _, u := range []string{"test://a", "test://b", "test://c"} {
		srv.AddResource(&mcp.Resource{URI: u, Name: u}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, Text: "x"}}}, nil
		})
	}
	var lists, listens atomic.Int64
	addr := freeAddr(t)
	serveAt(t, addr, srv, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			switch {
			case bytes.Contains(body, []byte(`"subscriptions/listen"`)):
				listens.Add(1)
			case bytes.Contains(body, []byte(`"resources/list"`)) && lists.Add(1)%2 == 0:
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				var m map[string]json.RawMessage
				var res map[string]json.RawMessage
				var items []json.RawMessage
				if json.Unmarshal(rec.Body.Bytes(), &m) == nil && json.Unmarshal(m["result"], &res) == nil &&
					json.Unmarshal(res["resources"], &items) == nil {
					slices.Reverse(items)
					res["resources"], _ = json.Marshal(items)
					m["result"], _ = json.Marshal(res)
					out, _ := json.Marshal(m)
					for k, v := range rec.Header() {
						w.Header()[k] = v
					}
					w.Header().Del("Content-Length")
					w.WriteHeader(rec.Code)
					w.Write(out)
					return
				}
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	startGateway(t, config(fmt.Sprintf(`"r": {"url": "http://%s/mcp", "type": "http"}`, addr)))
	time.Sleep(time.Second)
	listens.Store(0)
	srv.AddResource(&mcp.Resource{URI: "test://d", Name: "d"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, Text: "x"}}}, nil
	})
	time.Sleep(3 * time.Second)
	if n := listens.Load(); n > 3 {
		t.Errorf("%d subscriptions/listen and %d resources/list in 3 s: a refresh loop", n, lists.Load())
	}
}
