package bridge_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/bridge"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/record"
	"github.com/relayrt/relay/supervise"
)

// closeCounter is a recorder that notes it was closed.
type closeCounter struct {
	*record.Recorder
	mu     *sync.Mutex
	closed map[string]bool
	name   string
}

func (c closeCounter) Close() error {
	c.mu.Lock()
	c.closed[c.name] = true
	c.mu.Unlock()
	return c.Recorder.Close()
}

// With Options.Record each child of the pool gets a recorder of its own, which sees the
// requests the bridge sends it and the child's answers, and is closed once the child has
// stopped; Close leaves no goroutine of the tap behind (goleak, in TestMain).
func TestRecordGivesEachChildItsRecorderAndClosesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts child processes")
	}
	dir := t.TempDir()
	var mu sync.Mutex
	closed := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bridge.New(ctx, bridge.Options{Pool: 2, Spec: supervise.Spec{
		Command: whoamiCommand(t),
	}, Record: func(child string) bridge.FrameRecorder {
		r, err := record.Create(filepath.Join(dir, filepath.Base(child)+".ndjson"), nil)
		if err != nil {
			t.Error(err)
			return nil
		}
		mu.Lock()
		closed[child] = false
		mu.Unlock()
		return closeCounter{r, &mu, closed, child}
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := httpx.NewMCPProfileHandler(b.Profile(), nil, nil)
	srv := httptest.NewServer(h)
	relay := &relayProc{url: srv.URL + "/mcp", client: srv.Client()}
	for i := range 4 {
		if rep, err := relay.call(ctx, i+1, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}); err != nil || rep.Error != nil {
			t.Fatalf("call %d: %v %v", i, rep, err)
		}
	}
	srv.Close()
	h.Close()
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(closed) != 2 {
		t.Fatalf("recorders made for %v, want the pool's 2 children", closed)
	}
	calls := 0
	for child, c := range closed {
		if !c {
			t.Errorf("%s's recorder was not closed", child)
		}
		f, err := os.Open(filepath.Join(dir, filepath.Base(child)+".ndjson"))
		if err != nil {
			t.Fatal(err)
		}
		frames, err := record.ReadFile(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ins, outs := 0, 0
		for _, fr := range frames {
			m := fr.Parse()
			if fr.Dir == record.In && m.Method == "tools/call" {
				calls++
			}
			if fr.Dir == record.In {
				ins++
			} else {
				outs++
			}
		}
		if ins == 0 || outs == 0 {
			t.Errorf("%s: %d frames in, %d out; want both (the bridge's own discover at least)", child, ins, outs)
		}
	}
	if calls != 4 {
		t.Errorf("%d tools/call recorded across the children, want 4", calls)
	}
}
