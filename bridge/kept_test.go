package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/bridge"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/supervise"
)

// A legacy session on 2026-07-28 children keeps its state through runtime.SessionState, as
// a fleet's store would: initialize saves it; a change whose save fails is refused with a
// retryable error and undone; a change that changes nothing saves nothing; a state saved
// by another instance is taken when newer and left when stale or unreadable; a second
// initialize is refused. Taking a state while a call runs is no data race (-race): the
// call forwards what the session had when it began.
func TestKeptSession_SavesTakesAndUndoes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a child process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bridge.New(ctx, bridge.Options{Pool: 1, Spec: supervise.Spec{
		Command: whoamiCommand(t),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	var mu sync.Mutex
	var saved []map[string]any
	var refuse error
	st := &runtime.SessionState{Save: func(state []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if refuse != nil {
			return refuse
		}
		var m map[string]any
		json.Unmarshal(state, &m)
		saved = append(saved, m)
		return nil
	}}
	last := func() (map[string]any, int) {
		mu.Lock()
		defer mu.Unlock()
		if len(saved) == 0 {
			return nil, 0
		}
		return saved[len(saved)-1], len(saved)
	}
	in, out := make(chan runtime.Inbound, 16), make(chan runtime.Outbound, 64)
	served := make(chan error, 1)
	go func() {
		served <- runtime.NewServer(b.Profile()).ServeOutbound(runtime.WithSessionState(ctx, st), in, out)
	}()
	defer func() {
		close(in)
		for range out {
		}
		<-served
	}()
	answer := func(id string) string {
		t.Helper()
		for {
			select {
			case o := <-out:
				if o.Final && string(o.Request) == id {
					return string(o.Frame)
				}
			case <-ctx.Done():
				t.Fatalf("no answer to %s", id)
			}
		}
	}
	send := func(frame string) { in <- runtime.Inbound{Frame: []byte(frame)} }

	send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	if a := answer(`"i"`); !strings.Contains(a, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %s", a)
	}
	if m, n := last(); n != 1 || m["rev"] != 1.0 || m["version"] != "2025-11-25" {
		t.Fatalf("after initialize, %d saves, the last %v; want rev 1 of 2025-11-25", n, m)
	}

	mu.Lock()
	refuse = errors.New("the store is down")
	mu.Unlock()
	send(`{"jsonrpc":"2.0","id":"l1","method":"logging/setLevel","params":{"level":"debug"}}`)
	if a := answer(`"l1"`); !strings.Contains(a, `-32000`) || !strings.Contains(a, `"retryable":true`) {
		t.Errorf("logging/setLevel with the store down: %s; want -32000, retryable", a)
	}
	mu.Lock()
	refuse = nil
	mu.Unlock()
	send(`{"jsonrpc":"2.0","id":"s1","method":"resources/subscribe","params":{"uri":"test://a"}}`)
	answer(`"s1"`)
	if m, n := last(); n != 2 || m["rev"] != 2.0 || m["logLevel"] != nil || len(m["subs"].([]any)) != 1 {
		t.Errorf("after a refused setLevel and a subscription, %d saves, the last %v; want rev 2, no level, one subscription", n, m)
	}
	send(`{"jsonrpc":"2.0","id":"s2","method":"resources/subscribe","params":{"uri":"test://a"}}`)
	answer(`"s2"`)
	if _, n := last(); n != 2 {
		t.Errorf("a subscription made twice saved again (%d saves)", n)
	}

	// Another instance's states, while a call runs here.
	send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"whoami","arguments":{"ms":300}}}`)
	// A stale state, an unreadable one, then a newer one.
	in <- runtime.Inbound{State: true, Frame: []byte(`{"v":1,"rev":1,"version":"2025-11-25","caps":{},"logLevel":"error"}`)}
	in <- runtime.Inbound{State: true, Frame: []byte(`{"v":9,"rev":7}`)}
	in <- runtime.Inbound{State: true, Frame: []byte(`{"v":1,"rev":5,"version":"2025-11-25","caps":{},"logLevel":"info","subs":["test://a","test://b"]}`)}
	send(`{"jsonrpc":"2.0","id":"l2","method":"logging/setLevel","params":{"level":"warning"}}`)
	answer(`"l2"`)
	if m, _ := last(); m["rev"] != 6.0 || m["logLevel"] != "warning" || len(m["subs"].([]any)) != 2 {
		t.Errorf("after taking rev 5 and setting a level, the last save %v; want rev 6, warning, both subscriptions", m)
	}
	if a := answer(`"c"`); !strings.Contains(a, `"result"`) {
		t.Errorf("the call that ran meanwhile: %s", a)
	}

	send(`{"jsonrpc":"2.0","id":"i2","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if a := answer(`"i2"`); !strings.Contains(a, "already initialized") {
		t.Errorf("a second initialize: %s; want it refused", a)
	}
}
