package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/bench/load"
	"github.com/relayrt/relay/internal/hosttest"
)

// server is one echo server under benchmark.
type server struct {
	name string
	cmd  []string
	skip string // when not empty, why the server cannot run here
	fail string // when not empty, why the server did not build although it should
}

// Built servers: the first BenchmarkEcho builds them into buildDir, and
// TestMain removes that directory at the end, so a run that does not
// benchmark Echo (plain go test, or -bench Framing) builds nothing.
var (
	buildOnce sync.Once
	buildDir  string
	servers   []*server
	buildErr  error
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(cleanupRun{m})
}

// cleanupRun runs the tests and then removes the built servers.
type cleanupRun struct{ m *testing.M }

func (r cleanupRun) Run() int {
	code := r.m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if echoBinaryDir != "" {
		os.RemoveAll(echoBinaryDir)
	}
	return code
}

// echoServers builds the servers on first use and returns them in
// benchmark order.
func echoServers(b *testing.B) []*server {
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "relay-bench-")
		if buildErr == nil {
			servers = buildServers(buildDir)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return servers
}

// relayEcho returns Relay's examples/echo among echoServers, or skips b when it is not available.
func relayEcho(b *testing.B) *server {
	for _, s := range echoServers(b) {
		if s.name == "relay" && s.fail == "" && s.skip == "" {
			return s
		}
	}
	b.Skip("examples/echo is not available")
	return nil
}

// buildServers builds Relay's examples/echo and the Go peers into dir, and
// installs the TypeScript peer's packages if needed, all concurrently.
func buildServers(dir string) []*server {
	relay := &server{name: "relay", cmd: []string{hosttest.Exe(filepath.Join(dir, "relay"))}}
	gosdk := &server{name: "gosdk", cmd: []string{hosttest.Exe(filepath.Join(dir, "gosdk"))}}
	mcpgo := &server{name: "mcpgo", cmd: []string{hosttest.Exe(filepath.Join(dir, "mcpgo"))}}
	ts := &server{name: "ts"}
	limit := &server{name: "limit", cmd: []string{hosttest.Exe(filepath.Join(dir, "limit"))}}

	// go test puts its own GOROOT/bin first in PATH.
	goTool := "go"
	if p, err := exec.LookPath("go"); err == nil {
		goTool = p
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := os.Stat(filepath.Join("..", "examples", "echo")); err != nil {
			relay.skip = "../examples/echo does not exist yet"
			return
		}
		if out, err := run("..", nil, goTool, "build", "-o", relay.cmd[0], "./examples/echo"); err != nil {
			relay.fail = fmt.Sprintf("go build ./examples/echo: %v\n%s", err, out)
		}
	})
	wg.Go(func() {
		if out, err := run(".", nil, goTool, "build", "-o", limit.cmd[0], "./limit"); err != nil {
			limit.fail = fmt.Sprintf("go build ./bench/limit: %v\n%s", err, out)
		}
	})
	wg.Go(func() {
		env := append(os.Environ(), "GOWORK=off")
		if out, err := run("peers", env, goTool, "build", "-o", dir+string(filepath.Separator), "./gosdk", "./mcpgo"); err != nil {
			msg := fmt.Sprintf("go build in bench/peers: %v\n%s", err, out)
			gosdk.fail, mcpgo.fail = msg, msg
		}
	})
	wg.Go(func() {
		node, err := exec.LookPath("node")
		if err != nil {
			ts.skip = "node is not installed"
			return
		}
		tsDir, err := filepath.Abs(filepath.Join("peers", "ts"))
		if err != nil {
			ts.skip = err.Error()
			return
		}
		if _, err := os.Stat(filepath.Join(tsDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
			npm, err := exec.LookPath("npm")
			if err != nil {
				ts.skip = "npm is not installed and peers/ts/node_modules is missing"
				return
			}
			if out, err := run(tsDir, nil, npm, "ci", "--no-audit", "--no-fund"); err != nil {
				ts.skip = fmt.Sprintf("npm ci in bench/peers/ts failed: %v\n%s", err, out)
				return
			}
		}
		ts.cmd = []string{node, filepath.Join(tsDir, "server.mjs")}
	})
	wg.Wait()
	return []*server{relay, gosdk, mcpgo, ts, limit}
}

// run runs a command in dir and returns its combined output.
func run(dir string, env []string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// echoCase is one payload size and concurrency.
type echoCase struct {
	size     string
	bytes    int
	inFlight int
}

var echoCases = []echoCase{
	{"64B", 64, 256},
	{"64KiB", 64 << 10, 16},
	{"64B", 64, 1},
}

// warmUp is how long each server is driven, untimed, before the measured
// drive.
const warmUp = 100 * time.Millisecond

// text returns n bytes of printable ASCII that need no JSON escaping.
func text(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,-_"
	var sb strings.Builder
	sb.Grow(n)
	for i := range n {
		sb.WriteByte(alphabet[i%len(alphabet)])
	}
	return sb.String()
}

// BenchmarkEcho measures the round trip of the echo tool over stdio for
// each server, with requests pipelined so that inflight are outstanding at
// once. The server is started and the handshake done outside the timer;
// every iteration is one tools/call.
func BenchmarkEcho(b *testing.B) {
	for _, srv := range echoServers(b) {
		b.Run("server="+srv.name, func(b *testing.B) {
			for _, c := range echoCases {
				b.Run(fmt.Sprintf("size=%s/inflight=%d", c.size, c.inFlight), func(b *testing.B) {
					switch {
					case srv.fail != "":
						b.Fatal(srv.fail)
					case srv.skip != "":
						b.Skip(srv.skip)
					}
					// The collector's share of the server's CPU, at 64 KiB, where it is largest:
					// from the runtime's own trace, for the servers written in Go.
					benchEcho(b, srv.cmd, text(c.bytes), c.inFlight, c.bytes >= 64<<10 && srv.name != "ts")
				})
			}
		})
	}
}

// benchEcho drives one server. With traceGC (for a server written in Go) it also reports the
// collector's share of the server's CPU, as gc-%.
func benchEcho(b *testing.B, cmd []string, msg string, inFlight int, traceGC bool) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	args, err := json.Marshal(map[string]string{"text": msg})
	if err != nil {
		b.Fatal(err)
	}
	cfg := load.Config{Command: cmd, Tool: "echo", Args: args, InFlight: inFlight}
	var gc gcTrace
	if traceGC {
		cfg.Env, cfg.Stderr = withGODEBUG(os.Environ(), "gctrace=1"), &gc
	}
	s, err := load.Start(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()

	// One checked call before timing: the answer must be the text itself.
	raw, err := s.Call(ctx, "echo", args)
	if err != nil {
		b.Fatal(err)
	}
	var got struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		b.Fatalf("echo result %.200s: %v", raw, err)
	}
	if got.IsError || len(got.Content) != 1 || got.Content[0].Type != "text" || got.Content[0].Text != msg {
		b.Fatalf("echo result %.200s: want one text item equal to the %d-byte argument", raw, len(msg))
	}

	// Warm up untimed, so that JIT-compiled peers are measured at steady
	// state and every server has grown its buffers.
	warm, err := s.Drive(ctx, 0, warmUp)
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	res, err := s.Drive(ctx, b.N, 0)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if res.Errors > 0 {
		b.Fatalf("%d of %d answers were errors", res.Errors, res.Requests)
	}
	if err := s.Stop(); err != nil {
		b.Error(err)
	}
	b.ReportMetric(res.PerSecond(), "req/s")
	b.ReportMetric(float64(res.Percentile(50))/float64(time.Microsecond), "p50-µs")
	b.ReportMetric(float64(res.Percentile(99))/float64(time.Microsecond), "p99-µs")
	b.ReportMetric(float64(s.PeakRSSKiB()), "peak-RSS-KiB") // after Stop, which every OS that tells it has told
	if cpu := s.CPU(); cpu > 0 {
		// The server's CPU over every request it answered, the checked call and the warm-up
		// included (its start and handshake too, a few ms): what one request costs it,
		// whatever the machine's noise did to the throughput.
		answered := float64(warm.Requests + res.Requests + 1)
		b.ReportMetric(float64(cpu)/float64(time.Microsecond)/answered, "cpu-µs/req")
		if own := s.OwnCPU(); own > 0 { // without the processes it started: a supervisor's own
			b.ReportMetric(float64(own)/float64(time.Microsecond)/answered, "own-cpu-µs/req")
		}
		if gcCPU, cycles := gc.total(); traceGC && cycles > 0 {
			b.ReportMetric(100*float64(gcCPU)/float64(cpu), "gc-%")
		}
	}
}

// withGODEBUG returns env with setting added to its GODEBUG.
func withGODEBUG(env []string, setting string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			setting = v + "," + setting
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GODEBUG="+setting)
}
