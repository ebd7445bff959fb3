package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	relayrt "github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/stdio"
)

// BenchmarkIdleInFlight measures what a server holds for each request parked in its
// handler: 10,000 and then 100,000 requests sent over stdio to a server process of its own,
// each blocking in its handler, divided by the count. Two servers:
//
//   - server=idle: the bench binary itself, re-run as a stdio server (stdio.Serve, default
//     budget) whose only handler blocks until released: what the runtime holds;
//   - server=relay: examples/echo with its sleep tool (sleeping 10 minutes): an MCP tool
//     call, with everything the MCP layer and the tool's own timer add.
//
// Each sub-benchmark starts a fresh server, so that no run reuses what an earlier one left.
// After the requests, one more request that is answered at once proves that the server has
// read and started every one of them (and that none was refused). It reports:
//
//   - rss-B/parked (Linux): the growth of the server's resident set (VmRSS in
//     /proc/PID/status) once it stops growing, as the OS sees it: everything below plus the
//     collector's headroom, goroutine descriptors, and what the allocator has not given back;
//   - B/parked (server=idle): the Go heap and stacks in use after a collection, over what they
//     were before; everything the runtime keeps for a request is in it: the frame the reader
//     copied, the entry in the dispatcher's table, the request, its context, its worker
//     goroutine and its stack;
//   - stack-B/parked and objects/parked (server=idle): the stack and the count of heap
//     objects in it.
func BenchmarkIdleInFlight(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("server=idle/parked="+strconv.Itoa(n), func(b *testing.B) {
			exe, err := os.Executable()
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				benchParked(b, n, []string{exe}, true, idleFrame, idleSync)
			}
		})
	}
	for _, n := range []int{10_000, 100_000} {
		b.Run("server=relay/parked="+strconv.Itoa(n), func(b *testing.B) {
			var relay *server
			for _, s := range echoServers(b) {
				if s.name == "relay" {
					relay = s
				}
			}
			switch {
			case relay.fail != "":
				b.Fatal(relay.fail)
			case relay.skip != "":
				b.Skip(relay.skip)
			}
			for b.Loop() {
				benchParked(b, n, relay.cmd, false, sleepFrame, echoSync)
			}
		})
	}
}

// The requests of each server: frame(i) parks, and sync is answered at once.
var (
	idleFrame = func(dst []byte, i int) []byte {
		return jsonrpc.AppendRequest(dst, jsonrpc.IntID(int64(i)), "idle", []byte(`{}`))
	}
	idleSync   = `{"jsonrpc":"2.0","id":"sync","method":"stats"}`
	modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	sleepFrame = func(dst []byte, i int) []byte {
		dst = append(dst, `{"jsonrpc":"2.0","id":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		return append(dst, `,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000},`+modernMeta+`}}`...)
	}
	echoSync = `{"jsonrpc":"2.0","id":"sync","method":"tools/call","params":{"name":"echo","arguments":{"text":"sync"},` + modernMeta + `}}`
)

// memStats is what server=idle answers to "stats".
type memStats struct {
	Started                            int64
	HeapInuse, StackInuse, HeapObjects int64
}

// benchParked runs one server (idle: server=idle, which tells how many handlers started and
// its memory), parks n requests on it, and reports.
func benchParked(b *testing.B, n int, command []string, idle bool, frame func([]byte, int) []byte, sync string) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	if idle {
		cmd.Env = append(os.Environ(), parkedServerEnv+"=1")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	// The answers: the sync request's on syncs, the others counted, and any error kept.
	syncs := make(chan json.RawMessage, 1)
	var answered atomic.Int64
	var refused atomic.Value
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage
				Result json.RawMessage
				Error  json.RawMessage
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				refused.Store(sc.Text())
				continue
			}
			if string(m.ID) == `"sync"` {
				syncs <- m.Result
				continue
			}
			answered.Add(1)
			if m.Error != nil {
				refused.Store(sc.Text())
			}
		}
		close(syncs)
	}()
	w := bufio.NewWriterSize(stdin, 64<<10)
	syncCall := func() json.RawMessage {
		w.WriteString(sync + "\n")
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		r, ok := <-syncs
		if !ok {
			b.Fatal("the server stopped")
		}
		return r
	}
	var before, during memStats
	if r := syncCall(); idle { // warms the server up, and is its baseline
		if err := json.Unmarshal(r, &before); err != nil {
			b.Fatalf("stats %s: %v", r, err)
		}
	}
	pid := cmd.Process.Pid
	rssBefore, rssOK := settledRSS(pid)

	buf := make([]byte, 0, 256)
	for i := range n {
		buf = append(frame(buf[:0], i), '\n')
		if _, err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	for {
		// Answered at once, after every request before it was read and started, and none
		// of them answered: all are parked.
		r := syncCall()
		if !idle {
			break
		}
		if err := json.Unmarshal(r, &during); err != nil {
			b.Fatalf("stats %s: %v", r, err)
		}
		if during.Started == int64(n) {
			break
		}
		time.Sleep(10 * time.Millisecond) // server=idle: wait for the last handlers to run
	}
	if answered.Load() > 0 {
		b.Fatalf("%d of the %d requests answered while they should be parked, such as %v", answered.Load(), n, refused.Load())
	}
	if rssOK {
		rss, _ := settledRSS(pid)
		b.ReportMetric(float64(rss-rssBefore)/float64(n), "rss-B/parked")
	}
	if idle {
		used := during.HeapInuse + during.StackInuse - before.HeapInuse - before.StackInuse
		b.ReportMetric(float64(used)/float64(n), "B/parked")
		b.ReportMetric(float64(during.StackInuse-before.StackInuse)/float64(n), "stack-B/parked")
		b.ReportMetric(float64(during.HeapObjects-before.HeapObjects)/float64(n), "objects/parked")
		// Released, every one is answered.
		w.WriteString(`{"jsonrpc":"2.0","id":"release","method":"release"}` + "\n")
		w.Flush()
		for answered.Load() < int64(n)+1 {
			if ctx.Err() != nil {
				b.Fatalf("%d of %d answered after the release", answered.Load(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if r := refused.Load(); r != nil {
			b.Fatalf("a request was refused or failed: %v", r)
		}
	}
	stdin.Close()
}

// settledRSS waits for the resident set of process pid to stop growing and returns it: the
// largest VmRSS seen, once a second has added less than 256 KiB to it (or after 30 s).
func settledRSS(pid int) (int64, bool) {
	rss, ok := vmRSS(pid)
	if !ok {
		return 0, false
	}
	mark, since, start := rss, time.Now(), time.Now()
	for time.Since(start) < 30*time.Second {
		time.Sleep(100 * time.Millisecond)
		if now, _ := vmRSS(pid); now > rss {
			rss = now
		}
		if time.Since(since) >= time.Second {
			if rss-mark < 256<<10 {
				break
			}
			mark, since = rss, time.Now()
		}
	}
	return rss, true
}

// parkedServerEnv makes the bench binary serve server=idle on its stdio instead of running
// its tests and benchmarks.
const parkedServerEnv = "RELAY_BENCH_PARKED_SERVER"

func init() {
	if os.Getenv(parkedServerEnv) != "1" {
		return
	}
	if err := serveParked(); err != nil {
		fmt.Fprintln(os.Stderr, "server=idle:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveParked is server=idle: every request with method "idle" blocks until a "release"
// request; "stats" is answered at once, after a collection, with a memStats.
func serveParked() error {
	var started atomic.Int64
	release := make(chan struct{})
	srv := relayrt.NewServer(relayrt.Profile{
		NewSession: func(*relayrt.Peer) relayrt.Session { return &idleSession{&started, release} },
	}, relayrt.WithLogger(zap.NewNop()))
	err := stdio.Serve(context.Background(), srv, os.Stdin, os.Stdout, stdio.WithLogger(zap.NewNop()))
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// idleSession routes "idle" to a handler that blocks until released.
type idleSession struct {
	started *atomic.Int64
	release chan struct{}
}

func (s *idleSession) Route(r *relayrt.Request) relayrt.Route {
	switch r.Method {
	case "stats":
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return relayrt.Route{Result: memStats{Started: s.started.Load(), HeapInuse: int64(m.HeapInuse),
			StackInuse: int64(m.StackInuse), HeapObjects: int64(m.HeapObjects)}}
	case "release":
		close(s.release)
		return relayrt.Route{Result: json.RawMessage(`{}`)}
	}
	return relayrt.Route{Handler: func(ctx context.Context, r *relayrt.Request) (any, error) {
		s.started.Add(1)
		select {
		case <-s.release:
		case <-ctx.Done():
		}
		return json.RawMessage(`{}`), nil
	}}
}

func (*idleSession) Notification(string, json.RawMessage) {}
