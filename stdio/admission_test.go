package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/stdio"
)

// answer is what the test reads of each frame the server writes.
type answer struct {
	ID     json.RawMessage
	Result *struct{ Content []struct{ Text string } }
	Error  *struct {
		Code    int
		Message string
	}
}

func toolCall(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}` + "\n"
}

// TestParkedRequests_NewOneAnsweredWhileAllStayParked parks parkedCount tools/call requests
// (100,000 without the race detector) in a handler that blocks until released, over a real
// pipe with the default budget, then sends an echo: it is answered while every parked request
// is still parked, and nothing else is answered before the release. Then all are released and
// every one of them gets its result. Parked requests are normal load, not overload: none is
// refused, and none holds up a request that arrives after it.
func TestParkedRequests_NewOneAnsweredWhileAllStayParked(t *testing.T) {
	var parked atomic.Int64
	release := make(chan struct{})
	s := mcp.NewServer(mcp.Implementation{Name: "parked", Version: "1"}, nil)
	type text struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "park"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
		parked.Add(1)
		defer parked.Add(-1)
		select {
		case <-release:
			return mcp.TextResult("released"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in text) (*mcp.CallToolResult, error) {
		return mcp.TextResult(in.Text), nil
	})

	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	served := make(chan error, 1)
	go func() {
		served <- stdio.Serve(context.Background(), s.Runtime(runtime.WithLogger(zap.NewNop())), inR, outW,
			stdio.WithLogger(zap.NewNop()))
		outW.Close()
	}()
	answers := make(chan answer, 1024)
	go func() {
		defer close(answers)
		br := bufio.NewReaderSize(outR, 64<<10)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			var a answer
			if err := json.Unmarshal(line, &a); err != nil {
				a.Error = &struct {
					Code    int
					Message string
				}{Message: "not JSON: " + string(line)}
			}
			answers <- a
		}
	}()
	// Whatever happens, end the server and the reader so that no goroutine outlives the test.
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
		inW.Close()
		for range answers {
		}
		<-served
	}()

	w := bufio.NewWriterSize(inW, 64<<10)
	sent := make(chan error, 1)
	go func() {
		for i := range parkedCount {
			if _, err := w.WriteString(toolCall(strconv.Itoa(i), "park", "{}")); err != nil {
				sent <- err
				return
			}
		}
		sent <- w.Flush()
	}()

	// Every request parks, and none is answered: no refusal, no error. (Answers are watched
	// while the requests are still being written: a server that answers some of them would
	// otherwise fill the output pipe, stop reading, and leave the writer blocked.)
	deadline := time.Now().Add(5 * time.Minute)
	for parked.Load() < parkedCount || sent != nil {
		select {
		case a := <-answers:
			t.Fatalf("%d of %d parked, and a request was answered before any was released: id %s, error %+v",
				parked.Load(), parkedCount, a.ID, a.Error)
		case err := <-sent:
			if err != nil {
				t.Fatal(err)
			}
			sent = nil
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d requests parked after 5 minutes", parked.Load(), parkedCount)
		}
	}

	// A new request is answered, while all of them stay parked.
	if _, err := inW.WriteString(toolCall(`"fresh"`, "echo", `{"text":"still here"}`)); err != nil {
		t.Fatal(err)
	}
	a := <-answers
	if string(a.ID) != `"fresh"` || a.Result == nil || len(a.Result.Content) != 1 || a.Result.Content[0].Text != "still here" {
		t.Fatalf("want the fresh echo answered, got id %s, result %+v, error %+v", a.ID, a.Result, a.Error)
	}
	if n := parked.Load(); n != parkedCount {
		t.Fatalf("%d requests parked when the fresh one was answered, want all %d", n, parkedCount)
	}

	// Released, every one is answered with its result.
	close(release)
	seen := make([]bool, parkedCount)
	for range parkedCount {
		a, ok := <-answers
		if !ok {
			t.Fatal("the server's output ended before every parked request was answered")
		}
		i, err := strconv.Atoi(string(a.ID))
		if err != nil || i < 0 || i >= parkedCount || seen[i] {
			t.Fatalf("unexpected or repeated answer id %s", a.ID)
		}
		seen[i] = true
		if a.Result == nil || len(a.Result.Content) != 1 || a.Result.Content[0].Text != "released" {
			t.Fatalf("request %d: want its result, got error %+v", i, a.Error)
		}
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	served <- nil // for the deferred clean-up
}
