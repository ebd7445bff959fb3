package bridge_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/bridge"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/supervise"
)

// TestA3_InProcessPoolAnswersFromEveryChild embeds the bridge (bridge.New behind httpx's
// handler) over a pool of three children, the test binary re-executed as a server whose
// whoami tool answers with its pid: concurrent calls are answered by all three processes,
// and Close stops them all and leaves no goroutine behind (goleak, in TestMain).
func TestA3_InProcessPoolAnswersFromEveryChild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts child processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bridge.New(ctx, bridge.Options{Pool: 3, Spec: supervise.Spec{
		Command: whoamiCommand(t),
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := httpx.NewMCPProfileHandler(b.Profile(), nil, nil)
	srv := httptest.NewServer(h)
	relay := &relayProc{url: srv.URL + "/mcp", client: srv.Client()}
	defer func() {
		srv.Close()
		h.Close()
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()

	const n = 30
	var mu sync.Mutex
	served := map[string]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			rep, err := relay.call(ctx, i+1, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{"ms": 150}})
			if err != nil || rep.Error != nil || rep.text() == "" {
				t.Errorf("call %d: %v %v", i, rep, err)
				return
			}
			mu.Lock()
			served[rep.text()]++
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("calls answered per child pid: %v", served)
	if len(served) != 3 {
		t.Errorf("%d concurrent calls were answered by %d processes, want all 3 of the pool: %v", n, len(served), served)
	}
	if _, ok := served[fmt.Sprint(os.Getpid())]; ok {
		t.Error("a call was answered by the test process itself, not a child")
	}
}
