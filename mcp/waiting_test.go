package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
)

type parkIn struct {
	Panic bool `json:"panic,omitempty"`
}

// parkingServer has a tool that reports progress, says whether it runs detached from a worker
// (on the runtime's goroutine for a continuation), and waits until released or cancelled.
func parkingServer(opts *mcp.ServerOptions) (s *mcp.Server, started chan bool, release chan struct{}) {
	s = mcp.NewServer(mcp.Implementation{Name: "park", Version: "1"}, opts)
	started, release = make(chan bool, 64), make(chan struct{})
	mcp.AddTool(s, &mcp.Tool{Name: "park"}, func(ctx context.Context, req *mcp.CallToolRequest, in parkIn) (*mcp.CallToolResult, error) {
		req.Progress(1, 2, "parked")
		started <- strings.Contains(string(debug.Stack()), "created by github.com/relayrt/relay/runtime.(*dispatcher).detach")
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
		}
		if in.Panic {
			panic("the tool panicked")
		}
		return mcp.TextResult("released"), nil
	})
	return s, started, release
}

func parkCall(id int, panics bool) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"park","arguments":{"panic":%t},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":%d}}}`,
		id, panics, id)
}

// TestTools_CallsThatWaitPastTheFirstFewRunDetachedAndBehaveTheSame: once 16 calls of a tool
// wait on workers, its next calls run on goroutines of their own; they report progress, are
// cancelled, answered and recovered from a panic as the others are.
func TestTools_CallsThatWaitPastTheFirstFewRunDetachedAndBehaveTheSame(t *testing.T) {
	s, started, release := parkingServer(nil)
	c := connect(t, s)
	for id := 1; id <= 16; id++ {
		c.send(parkCall(id, false))
	}
	for range 16 {
		if <-started {
			t.Fatal("one of the first 16 calls ran detached")
		}
	}
	for id := 17; id <= 20; id++ {
		c.send(parkCall(id, id == 20))
	}
	for range 4 {
		if !<-started {
			t.Fatal("a call past the first 16 waiting ones did not run detached")
		}
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":19}}`)
	close(release)
	progress := map[string]bool{}
	answers := map[string]json.RawMessage{}
	for len(answers) < 19 { // 19 was cancelled: never answered
		m := c.recv()
		if string(m["method"]) == `"notifications/progress"` {
			var p struct{ ProgressToken json.RawMessage }
			json.Unmarshal(m["params"], &p)
			progress[string(p.ProgressToken)] = true
			continue
		}
		answers[string(m["id"])] = m["result"]
		if m["result"] == nil {
			answers[string(m["id"])] = m["error"]
		}
	}
	for id := 1; id <= 20; id++ {
		key, a := fmt.Sprint(id), string(answers[fmt.Sprint(id)])
		switch {
		case !progress[key]:
			t.Errorf("call %d: no progress", id)
		case id == 19:
			if a != "" {
				t.Errorf("the cancelled call was answered: %s", a)
			}
		case id == 20:
			if !strings.Contains(a, "-32603") {
				t.Errorf("the detached call that panicked: want an internal error, got %s", a)
			}
		case !strings.Contains(a, "released"):
			t.Errorf("call %d: %s", id, a)
		}
	}
	if m := c.call(21, "tools/call", `{"name":"park","arguments":{},`+modernMeta+`}`); m["result"] == nil {
		t.Fatalf("the server did not go on: %s", m["error"])
	}
	<-started
}

// TestTools_DetachedCallsKeepTheTimeLimit: ServerOptions.RequestTimeout ends a call that runs
// detached as it ends one on a worker.
func TestTools_DetachedCallsKeepTheTimeLimit(t *testing.T) {
	s, started, _ := parkingServer(&mcp.ServerOptions{RequestTimeout: time.Second})
	c := connect(t, s)
	for id := 1; id <= 17; id++ {
		c.send(parkCall(id, false))
		if detached := <-started; detached != (id == 17) {
			t.Fatalf("call %d ran detached: %t", id, detached)
		}
	}
	for timedOut := 0; timedOut < 17; {
		m := c.recv()
		if m["id"] == nil {
			continue // progress
		}
		if code(m) != mcp.CodeServerBusy || !strings.Contains(string(m["error"]), "timed out") {
			t.Fatalf("want the time limit's error, got %s", m["error"])
		}
		timedOut++
	}
}
