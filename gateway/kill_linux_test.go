//go:build linux

package gateway_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/gateway"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp/client"
)

// childOf returns the pid of a child of this process that runs the program at exe (0:
// none), read from /proc.
func childOf(t *testing.T, exe string) int {
	t.Helper()
	if pids := childrenOf(t, exe); len(pids) > 0 {
		return pids[0]
	}
	return 0
}

// childrenOf returns the pids of this process's children that run the program at exe.
func childrenOf(t *testing.T, exe string) []int {
	t.Helper()
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state, then ppid.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if path, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); path == exe {
			pids = append(pids, pid)
		}
	}
	return pids
}

// An upstream killed under load: the calls to the other upstream are unaffected, and the
// killed one's calls in flight (its tools are annotated read-only and idempotent) are
// replayed to the child its supervisor starts in its place, so that every call succeeds.
func TestGateway_UpstreamKilledUnderLoad(t *testing.T) {
	f := twoServers(t, "")
	c := connect(t, client.HTTP(serveHTTP(t, f.g.Server())))
	echoPid := childOf(t, echoBin(t))
	if echoPid == 0 {
		t.Fatal("the echo upstream's child is not a child of this process")
	}
	ctx, stop := context.WithCancel(context.Background())
	var echoOK, everythingOK atomic.Int64
	progressed := make(chan struct{}, 1) // a call succeeded; never blocks its sender
	var mu sync.Mutex
	var failures []string
	fail := func(what string, err error) {
		mu.Lock()
		failures = append(failures, what+": "+err.Error())
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if i%2 == 0 {
					r, err := c.CallTool(context.Background(), "echo__sleep", map[string]int{"ms": 20})
					switch {
					case err != nil:
						fail("echo__sleep", err)
					case text(r) != "slept 20 ms":
						fail("echo__sleep", errors.New(text(r)))
					default:
						echoOK.Add(1)
						select {
						case progressed <- struct{}{}:
						default:
						}
					}
					continue
				}
				r, err := c.CallTool(context.Background(), "ev__test_simple_text", nil)
				if err != nil || r.IsError {
					fail("ev__test_simple_text", errors.Join(err, errors.New(text(r))))
					continue
				}
				everythingOK.Add(1)
			}
		})
	}
	// Load first, then the kill, then load again until the new child has answered 50 calls.
	waitCount(t, progressed, &echoOK, 20)
	if err := syscall.Kill(echoPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	before := echoOK.Load()
	waitCount(t, progressed, &echoOK, before+50)
	stop()
	wg.Wait()
	if len(failures) > 0 {
		t.Errorf("%d calls failed, first: %v", len(failures), failures[0])
	}
	if after := childOf(t, echoBin(t)); after == 0 || after == echoPid {
		t.Errorf("the echo child was not replaced: before %d, now %d", echoPid, after)
	}
	if st := f.g.Status(); st[0].Restarts < 1 {
		t.Errorf("status after the kill: %+v", st[0])
	}
	t.Logf("calls answered: echo %d, everything %d", echoOK.Load(), everythingOK.Load())
}

// waitCount waits until n reaches want, checking each time a call succeeds, for a minute
// at most.
func waitCount(t *testing.T, progressed <-chan struct{}, n *atomic.Int64, want int64) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for n.Load() < want {
		select {
		case <-progressed:
		case <-deadline.C:
			t.Fatalf("only %d of %d echo calls succeeded in a minute", n.Load(), want)
		}
	}
}

// An upstream whose supervisor gives up ("restart": {"policy": "never"}) leaves the lists,
// the host hears list_changed, and a call to one of its tools gets an error that names it;
// the other upstream goes on serving.
func TestGateway_UpstreamDownLeavesTheListsAndItsCallsNameIt(t *testing.T) {
	g := startGateway(t, config(
		entry("echo", echoBin(t), `"relay": {"restart": {"policy": "never"}}`),
		entry("everything", everythingBin(t), `"relay": {"prefix": "ev"}`),
	))
	c := connect(t, client.HTTP(serveHTTP(t, g.g.Server())), client.WithVersion("2025-11-25"))
	if names := toolNames(t, c); !slices.Contains(names, "echo__echo") {
		t.Fatalf("before: %v", names)
	}
	pid := childOf(t, echoBin(t))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitForTools(t, c, "the echo tools leave the list", func(names []string) bool {
		return !slices.Contains(names, "echo__echo") && slices.Contains(names, "ev__test_simple_text")
	})
	_, err := c.CallTool(context.Background(), "echo__echo", map[string]string{"text": "x"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || !strings.Contains(je.Message, `"echo"`) || !strings.Contains(je.Message, "unavailable") {
		t.Errorf("a call to the down upstream: %v, want an error naming it", err)
	}
	if r, err := c.CallTool(context.Background(), "ev__test_simple_text", nil); err != nil || r.IsError {
		t.Errorf("the other upstream: %v", err)
	}
	if st := g.g.Status(); st[0].State != "down" || st[0].LastError == "" {
		t.Errorf("status: %+v", st[0])
	}
}

// "restart": {"watch": PATH}: when the file changes, the upstream's child is upgraded
// without downtime (supervise's upgrade): a new child serves, and a call made across the
// upgrade is answered.
func TestGateway_WatchedFileUpgradesTheChild(t *testing.T) {
	watch := filepath.Join(t.TempDir(), "version")
	if err := os.WriteFile(watch, []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	f := startGatewayWith(t, config(entry("echo", echoBin(t), `"relay": {"restart": {"watch": `+quoteJSON(watch)+`}}`)),
		func(o *gateway.Options) {
			o.StateChanged = func() {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		})
	c := connect(t, &client.MemoryTransport{Server: f.g.Server().Runtime()})
	before := childOf(t, echoBin(t))
	if before == 0 {
		t.Fatal("no echo child")
	}
	slow := make(chan error, 1)
	go func() { // in flight on the old child while it is replaced
		r, err := c.CallTool(context.Background(), "echo__sleep", map[string]int{"ms": 1500})
		if err == nil && text(r) != "slept 1500 ms" {
			err = errors.New(text(r))
		}
		slow <- err
	}()
	if err := os.WriteFile(watch, []byte("2, a new version"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-slow; err != nil {
		t.Errorf("a call in flight across the upgrade: %v", err)
	}
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for !slices.ContainsFunc(childrenOf(t, echoBin(t)), func(pid int) bool { return pid != before }) {
		select {
		case <-changed: // the upgrade's end reads the lists again
		case <-deadline.C:
			t.Fatalf("the echo child was not replaced within a minute (children %v, before %d); log: %v",
				childrenOf(t, echoBin(t)), before, f.logs.FilterMessageSnippet("upgrad").All())
		}
	}
	if r, err := c.CallTool(context.Background(), "echo__echo", map[string]string{"text": "new"}); err != nil || text(r) != "new" {
		t.Errorf("after the upgrade: %q %v", text(r), err)
	}
}
