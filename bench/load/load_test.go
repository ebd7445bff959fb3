package load

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fakeEnv selects, in a re-executed test binary, the fake server's mode:
//
//	modern     answers server/discover; tools/call must carry the _meta
//	legacy     rejects server/discover; tools/call must follow initialized
//	           and carry no protocol _meta
//	silent     ignores server/discover, like a server that does not know it
//	exitearly  legacy, but exits on its fourth tools/call
//	stubborn   legacy, but does not exit when its stdin closes
//	deaf       legacy, but stops reading once initialized
//	oops       writes "oops" to stderr and exits at once, reading nothing
const fakeEnv = "RELAY_LOAD_FAKE_SERVER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fakeServer(mode))
	}
	goleak.VerifyTestMain(m)
}

func durationMS(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// fakeServer is a small stdio MCP server. Its tools are echo (returns
// arguments.text), fail (isError result), boom (error answer), hang (never
// answers) and pinged (says whether the client answered the server's ping).
// Each tools/call is answered on its own goroutine after a random pause, so
// answers come out of order, and each answer follows a progress
// notification.
func fakeServer(mode string) int {
	if mode == "oops" {
		os.Stderr.WriteString("oops\n")
		return 0
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	write := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		mu.Lock()
		defer mu.Unlock()
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	fail := func(id json.RawMessage, msg string) {
		write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32602, "message": msg}})
	}
	// Noise that the driver must skip.
	os.Stdout.WriteString("fake server starting\n\n")

	var initialized, pinged bool
	var pingOnce sync.Once
	var pingAnswered atomic.Bool
	calls := 0
	var wg sync.WaitGroup
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(in.Bytes(), &msg); err != nil {
			write(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "parse error"}})
			continue
		}
		switch msg.Method {
		case "":
			if string(msg.ID) == `"srv-ping"` && msg.Result != nil {
				pingAnswered.Store(true)
			}
		case "server/discover":
			switch mode {
			case "modern":
				write(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{
					"supportedVersions": []string{ModernProtocol}, "capabilities": map[string]any{"tools": map[string]any{}},
				}})
			case "silent":
			default:
				write(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			}
		case "initialize":
			write(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{
				"protocolVersion": LegacyProtocol, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "fake", "version": "1"},
			}})
		case "notifications/initialized":
			initialized = true
			if mode == "deaf" {
				// Reads nothing more, and so never sees its stdin close: not even the first
				// call, which a loaded machine may not have written whole before the test
				// gives up on it.
				time.Sleep(time.Minute)
			}
		case "tools/call":
			calls++
			if mode == "exitearly" && calls > 3 {
				return 3
			}
			var p struct {
				Name      string `json:"name"`
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
				Meta map[string]json.RawMessage `json:"_meta"`
			}
			if err := json.Unmarshal(msg.Params, &p); err != nil {
				fail(msg.ID, err.Error())
				continue
			}
			version := string(p.Meta["io.modelcontextprotocol/protocolVersion"])
			if mode == "modern" && (version != `"`+ModernProtocol+`"` || p.Meta["io.modelcontextprotocol/clientCapabilities"] == nil) {
				fail(msg.ID, "missing protocol _meta")
				continue
			}
			if mode != "modern" && (!initialized || version != "") {
				fail(msg.ID, "not initialized, or protocol _meta on a legacy session")
				continue
			}
			pingOnce.Do(func() {
				write(map[string]any{"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"})
				write(map[string]any{"jsonrpc": "2.0", "id": "srv-other", "method": "roots/list"})
			})
			if p.Name == "pinged" {
				pinged = pingAnswered.Load()
			}
			answerPinged := pinged
			wg.Go(func() {
				time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
				write(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
					"params": map[string]any{"progressToken": 1, "progress": 1}})
				text := func(s string) map[string]any {
					return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
				}
				switch p.Name {
				case "echo":
					write(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": text(p.Arguments.Text)})
				case "fail":
					r := text("failed")
					r["isError"] = true
					write(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": r})
				case "boom":
					fail(msg.ID, "boom")
				case "pinged":
					if answerPinged {
						write(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": text("yes")})
					} else {
						write(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": text("no")})
					}
				case "hang":
				default:
					fail(msg.ID, "unknown tool "+p.Name)
				}
			})
		}
	}
	wg.Wait()
	if mode == "stubborn" {
		time.Sleep(time.Minute)
	}
	return 0
}

// fakeConfig returns a Config that starts the fake server in the given mode.
func fakeConfig(t *testing.T, mode, tool string, args string) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var a json.RawMessage
	if args != "" {
		a = json.RawMessage(args)
	}
	return Config{
		Command: []string{exe},
		Env:     append(os.Environ(), fakeEnv+"="+mode),
		Tool:    tool,
		Args:    a,
	}
}

func checkResult(t *testing.T, res Result, requests, errs int) {
	t.Helper()
	if res.Requests != requests || res.Errors != errs {
		t.Errorf("Requests, Errors = %d, %d; want %d, %d", res.Requests, res.Errors, requests, errs)
	}
	if len(res.Latencies) != res.Requests {
		t.Errorf("%d latencies for %d requests", len(res.Latencies), res.Requests)
	}
	if !slices.IsSorted(res.Latencies) {
		t.Error("latencies not sorted")
	}
	if res.Requests > 0 && (res.Elapsed <= 0 || res.PerSecond() <= 0 || res.Percentile(50) <= 0) {
		t.Errorf("Elapsed %v, PerSecond %v, p50 %v: want them positive", res.Elapsed, res.PerSecond(), res.Percentile(50))
	}
	if peakKnown(false) && res.PeakRSSKiB <= 0 {
		t.Errorf("PeakRSSKiB = %d, want > 0", res.PeakRSSKiB)
	}
}

// peakKnown reports whether this OS tells a child's peak resident set size while it runs
// (Linux, Windows), or, when exited is true, by the time it has been waited for (the BSDs and
// macOS too); see Result.PeakRSSKiB.
func peakKnown(exited bool) bool {
	switch goruntime.GOOS {
	case "linux", "windows":
		return true
	case "darwin", "ios", "freebsd", "netbsd", "openbsd", "dragonfly":
		return exited
	}
	return false
}

func TestRun(t *testing.T) {
	for _, tt := range []struct {
		mode, protocol string
	}{
		{"modern", ModernProtocol},
		{"legacy", LegacyProtocol},
		{"silent", LegacyProtocol},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			cfg := fakeConfig(t, tt.mode, "echo", `{ "text" : "hello" }`)
			cfg.InFlight = 8
			cfg.Requests = 500
			res, err := Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Protocol != tt.protocol {
				t.Errorf("Protocol = %q, want %q", res.Protocol, tt.protocol)
			}
			checkResult(t, res, 500, 0)
			if peakKnown(true) && res.PeakRSSKiB <= 0 {
				t.Errorf("Run's PeakRSSKiB = %d, want > 0", res.PeakRSSKiB)
			}
		})
	}
}

func TestRunDuration(t *testing.T) {
	cfg := fakeConfig(t, "modern", "echo", `{"text":"x"}`)
	cfg.InFlight = 4
	cfg.Duration = 150 * time.Millisecond
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, res.Requests, 0)
	if res.Requests == 0 || res.Elapsed < cfg.Duration {
		t.Errorf("%d requests in %v, want some in at least %v", res.Requests, res.Elapsed, cfg.Duration)
	}
}

func TestErrorsCounted(t *testing.T) {
	for _, tool := range []string{"fail", "boom"} {
		t.Run(tool, func(t *testing.T) {
			cfg := fakeConfig(t, "legacy", tool, "")
			cfg.InFlight = 3
			cfg.Requests = 20
			res, err := Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, res, 20, 20)
		})
	}
}

func TestSessionDriveTwiceAndCall(t *testing.T) {
	for _, mode := range []string{"modern", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			big := strings.Repeat("0123456789abcdef", 80<<10) // 1.25 MiB: longer than the reader's buffer
			args, _ := json.Marshal(map[string]string{"text": big})
			cfg := fakeConfig(t, mode, "echo", string(args))
			cfg.InFlight = 2
			s, err := Start(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			for range 2 {
				res, err := s.Drive(t.Context(), 3, 0)
				if err != nil {
					t.Fatal(err)
				}
				checkResult(t, res, 3, 0)
			}
			raw, err := s.Call(t.Context(), "echo", json.RawMessage(`{"text":"a \"quoted\"\nline"}`))
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Content []struct{ Text string } `json:"content"`
			}
			if err := json.Unmarshal(raw, &r); err != nil || len(r.Content) != 1 || r.Content[0].Text != "a \"quoted\"\nline" {
				t.Errorf("Call(echo) = %s (%v)", raw, err)
			}
			raw, err = s.Call(t.Context(), "pinged", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(raw), `"yes"`) {
				t.Errorf("the server's ping was not answered: %s", raw)
			}
			if _, err := s.Call(t.Context(), "boom", nil); err == nil || !strings.Contains(err.Error(), "boom") {
				t.Errorf("Call(boom) error = %v, want one that mentions boom", err)
			}
			if s.PeakRSSKiB() < 0 {
				t.Errorf("PeakRSSKiB = %d", s.PeakRSSKiB())
			}
			if err := s.Stop(); err != nil {
				t.Errorf("Stop: %v", err)
			}
			if peakKnown(true) && s.PeakRSSKiB() <= 0 {
				t.Errorf("PeakRSSKiB after Stop = %d, want > 0", s.PeakRSSKiB())
			}
			if err := s.Stop(); err != nil {
				t.Errorf("second Stop: %v", err)
			}
			if _, err := s.Drive(t.Context(), 1, 0); err == nil {
				t.Error("Drive after Stop succeeded")
			}
		})
	}
}

func TestServerExitsEarly(t *testing.T) {
	cfg := fakeConfig(t, "exitearly", "echo", `{"text":"x"}`)
	cfg.InFlight = 1
	cfg.Requests = 10
	res, err := Run(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "closed its stdout") {
		t.Fatalf("err = %v, want a closed-stdout error", err)
	}
	if res.Requests != 3 {
		t.Errorf("Requests = %d, want 3", res.Requests)
	}
}

func TestDriveCancelled(t *testing.T) {
	s, err := Start(t.Context(), fakeConfig(t, "legacy", "hang", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	res, err := s.Drive(ctx, 3, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
	if res.Requests != 0 {
		t.Errorf("Requests = %d, want 0", res.Requests)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

func TestStopKillsStubbornServer(t *testing.T) {
	t.Parallel()
	s, err := Start(t.Context(), fakeConfig(t, "stubborn", "echo", ""))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.Stop()
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop = %v, want a killed error", err)
	}
	if d := time.Since(start); d < stopGrace || d > stopGrace+3*time.Second {
		t.Errorf("Stop took %v, want about %v", d, stopGrace)
	}
}

func TestConfigErrors(t *testing.T) {
	ctx := t.Context()
	if _, err := Run(ctx, Config{Tool: "echo", Requests: 1}); err == nil {
		t.Error("empty Command accepted")
	}
	if _, err := Run(ctx, Config{Command: []string{"true"}, Requests: 1}); err == nil {
		t.Error("empty Tool accepted")
	}
	if _, err := Run(ctx, Config{Command: []string{"true"}, Tool: "echo", Args: json.RawMessage(`{`), Requests: 1}); err == nil {
		t.Error("invalid Args accepted")
	}
	if _, err := Run(ctx, Config{Command: []string{"/nonexistent/server"}, Tool: "echo", Requests: 1}); err == nil {
		t.Error("missing command accepted")
	}
	cfg := fakeConfig(t, "legacy", "echo", "")
	if _, err := Run(ctx, cfg); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("no Requests nor Duration: err = %v", err)
	}
}

func TestHandshakeFailure(t *testing.T) {
	// The server exits at once: the handshake sees stdout close, and the
	// error carries the server's stderr.
	cfg := fakeConfig(t, "oops", "echo", "")
	cfg.Requests = 1
	_, err := Run(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "oops") {
		t.Errorf("err = %v, want one carrying the server's stderr", err)
	}
}

func TestDriveCancelledWhileWriting(t *testing.T) {
	t.Parallel()
	args, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 1<<20)})
	cfg := fakeConfig(t, "deaf", "echo", string(args))
	cfg.InFlight = 8
	s, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.Drive(ctx, 100, 0); err == nil {
		t.Error("Drive against a server that does not read succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Drive took %v to notice the cancellation", d)
	}
	// The server neither reads nor exits: Stop has to kill it.
	if err := s.Stop(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop = %v, want a killed error", err)
	}
}

// fakePeak is a peakMeter that says what it is told to.
type fakePeak struct {
	whileRunning, atExit int64
	sawExit, closed      bool
}

func (f *fakePeak) live() int64 { return f.whileRunning }
func (f *fakePeak) exited(ps *os.ProcessState) int64 {
	f.sawExit = ps != nil && ps.Exited()
	return f.atExit
}
func (f *fakePeak) close() { f.closed = true }

// TestStopReadsThePeakBeforeAndAfterExit checks that Stop reads the peak both while the child
// still runs and once it has exited and keeps the larger, since each OS tells it at one of the
// two moments, and that Drive reports what can be read while the child runs.
func TestStopReadsThePeakBeforeAndAfterExit(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		whileRunning, atExit int64
	}{
		{"told only while running (Linux)", 5000, 0},
		{"told only after exit (macOS, BSD)", 0, 7000},
		{"told at both moments (Windows)", 5000, 7000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Start(t.Context(), fakeConfig(t, "legacy", "echo", `{"text":"x"}`))
			if err != nil {
				t.Fatal(err)
			}
			s.peak.close()
			meter := &fakePeak{whileRunning: tt.whileRunning, atExit: tt.atExit}
			s.peak = meter
			res, err := s.Drive(t.Context(), 3, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.PeakRSSKiB != tt.whileRunning || s.PeakRSSKiB() != tt.whileRunning {
				t.Errorf("while running: Result.PeakRSSKiB %d, PeakRSSKiB() %d; want %d", res.PeakRSSKiB, s.PeakRSSKiB(), tt.whileRunning)
			}
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			if want := max(tt.whileRunning, tt.atExit); s.PeakRSSKiB() != want {
				t.Errorf("after Stop: PeakRSSKiB() = %d, want %d", s.PeakRSSKiB(), want)
			}
			if !meter.sawExit || !meter.closed {
				t.Errorf("the meter saw the exit: %v, was closed: %v; want both", meter.sawExit, meter.closed)
			}
		})
	}
}
