package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/bench/httpload"
	"github.com/relayrt/relay/internal/proc"
)

// BenchmarkBridge serves the same stdio server, Relay's examples/echo, over Streamable HTTP
// through `relay bridge` and through supergateway (npm, pinned in peers/supergateway) in both
// of its Streamable HTTP modes, and drives each with the echo tool on bridgeConns keep-alive
// connections. Besides throughput and latency it reports how many echo processes were alive
// at some point of the measured run (children).
//
// The flows (see bench/README.md, "BenchmarkBridge"):
//
//   - relay, supergateway-stateless, direct: httpload's self-contained 2026-07-28 requests,
//     the load of BenchmarkHTTPEcho. supergateway 4 routes them, in either mode, to a fresh
//     child per request. direct is examples/echo serving Streamable HTTP itself (-http): what
//     the bridge costs is relay against direct, on the same connections.
//   - supergateway-stateful, relay-legacy: the initialize generation, one session per
//     connection (initialize, notifications/initialized, then tools/call with the
//     Mcp-Session-Id). supergateway's stateful mode only applies to this flow: it gives each
//     session a child of its own.
func BenchmarkBridge(b *testing.B) {
	echo := relayEcho(b)
	for _, c := range []struct {
		name   string
		legacy bool
		cmd    func(addr string) []string
	}{
		{"relay", false, func(addr string) []string { return relayBridgeCmd(b, addr, echo.cmd[0]) }},
		{"supergateway-stateless", false, func(addr string) []string { return sgCmd(sgEntry(), addr, echo.cmd[0], false) }},
		{"supergateway-stateful", true, func(addr string) []string { return sgCmd(sgEntry(), addr, echo.cmd[0], true) }},
		{"relay-legacy", true, func(addr string) []string { return relayBridgeCmd(b, addr, echo.cmd[0]) }},
		{"direct", false, func(addr string) []string { return []string{echo.cmd[0], "-http", addr} }},
	} {
		b.Run("server="+c.name+"/conns="+strconv.Itoa(bridgeConns), func(b *testing.B) {
			// Asked here, not before the loop, so that a run without the supergateway
			// cases (-bench 'Bridge/server=relay/') does not install it.
			if strings.HasPrefix(c.name, "supergateway") {
				if _, skip := supergateway(); skip != "" {
					b.Skip(skip)
				}
			}
			benchBridge(b, c.cmd, filepath.Base(echo.cmd[0]), c.legacy)
		})
	}
}

const (
	bridgeConns = 16 // concurrent keep-alive connections, one request outstanding on each
	bridgePool  = 4  // relay bridge --pool
)

// supergateway installs peers/supergateway (npm ci) when node_modules is missing, and returns
// the path of its entry point, or why it cannot run here.
var supergateway = sync.OnceValues(func() (string, string) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", "node is not installed"
	}
	dir, err := filepath.Abs(filepath.Join("peers", "supergateway"))
	if err != nil {
		return "", err.Error()
	}
	entry := filepath.Join(dir, "node_modules", "supergateway", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return "", "npm is not installed and peers/supergateway/node_modules is missing"
		}
		if out, err := run(dir, nil, npm, "ci", "--no-audit", "--no-fund"); err != nil {
			return "", fmt.Sprintf("npm ci in bench/peers/supergateway failed: %v\n%s", err, out)
		}
	}
	return entry, ""
})

func relayBridgeCmd(b *testing.B, addr, echo string) []string {
	cli, err := relayCLI()
	if err != nil {
		b.Fatal(err)
	}
	return []string{cli, "bridge", "--listen", addr, "--pool", strconv.Itoa(bridgePool), "--", echo}
}

// sgEntry is supergateway's entry point, once a sub-benchmark has checked that it is installed.
func sgEntry() string {
	entry, _ := supergateway()
	return entry
}

func sgCmd(entry, addr, echo string, stateful bool) []string {
	_, port, _ := net.SplitHostPort(addr)
	cmd := []string{"node", entry, "--stdio", echo, "--outputTransport", "streamableHttp",
		"--port", port, "--logLevel", "none"}
	if stateful {
		cmd = append(cmd, "--stateful")
	}
	return cmd
}

func benchBridge(b *testing.B, cmdFor func(addr string) []string, echoComm string, legacy bool) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	p, err := startListening(ctx, cmdFor)
	if err != nil {
		b.Fatal(err)
	}
	defer p.stop()
	url := "http://" + p.addr + "/mcp"

	var d driver
	if legacy {
		d, err = newSessionDriver(ctx, url, bridgeConns, httpText)
	} else {
		d, err = httpload.New(httpload.Config{URL: url, Conns: bridgeConns, Text: httpText})
	}
	if err != nil {
		b.Fatalf("%v%s", err, p.stderr.suffix())
	}
	defer d.Close()
	if msg, err := d.Call(ctx); err != nil {
		b.Fatalf("%v%s", err, p.stderr.suffix())
	} else if testing.Verbose() {
		b.Logf("answer: %s", msg)
	}
	if _, err := d.Drive(ctx, 0, warmUp); err != nil {
		b.Fatalf("%v%s", err, p.stderr.suffix())
	}

	w := watchChildren(p.cmd.Process.Pid, echoComm)
	res, err := d.DriveFunc(ctx, func() bool {
		if b.Loop() {
			return true
		}
		b.StartTimer()
		return false
	})
	b.StopTimer()
	children := w.stop()
	if err != nil {
		b.Fatalf("%v%s", err, p.stderr.suffix())
	}
	if res.Errors > 0 {
		b.Fatalf("%d of %d answers were bad; the first: %s", res.Errors, res.Requests, res.FirstError)
	}
	d.Close()
	if err := p.stop(); err != nil {
		b.Log(err)
	}
	b.ReportMetric(res.PerSecond(), "req/s")
	b.ReportMetric(float64(res.Percentile(50))/float64(time.Microsecond), "p50-µs")
	b.ReportMetric(float64(res.Percentile(99))/float64(time.Microsecond), "p99-µs")
	if goruntime.GOOS == "linux" { // watchChildren reads /proc
		b.ReportMetric(float64(children), "children")
	}
}

// driver is what benchBridge needs of httpload.Client and sessionDriver.
type driver interface {
	Call(ctx context.Context) ([]byte, error)
	Drive(ctx context.Context, requests int, d time.Duration) (httpload.Result, error)
	DriveFunc(ctx context.Context, next func() bool) (httpload.Result, error)
	Close()
}

// startListening runs cmdFor(a free loopback address) and waits until the address accepts
// connections, trying another port if the server exits first.
func startListening(ctx context.Context, cmdFor func(addr string) []string) (*httpProcess, error) {
	var err error
	for range 3 {
		var addr string
		if addr, err = freePort(); err != nil {
			return nil, err
		}
		argv := cmdFor(addr)
		p := &httpProcess{addr: addr, stderr: &tail{}, exited: make(chan struct{})}
		p.cmd = exec.Command(argv[0], argv[1:]...)
		p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
		if err = p.cmd.Start(); err != nil {
			return nil, err
		}
		go func() {
			p.waitErr = p.cmd.Wait()
			close(p.exited)
		}()
		if err = waitListening(ctx, p, 30*time.Second); err == nil {
			return p, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

func waitListening(ctx context.Context, p *httpProcess, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if conn, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before serving %s: %v%s", p.cmd.Path, p.addr, p.waitErr, p.stderr.suffix())
		case <-ctx.Done():
			p.stop()
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return fmt.Errorf("%s did not listen on %s within %v%s", p.cmd.Path, p.addr, within, p.stderr.suffix())
		}
	}
}

// ---- children ----

// childWatch samples, every millisecond, the descendants of a process whose command name is
// comm, and remembers each one it saw (a pid with its start time). A child that lives less
// than a sampling interval can be missed: for servers that spawn one per request, the count
// is a lower bound.
type childWatch struct {
	root int
	comm string
	seen map[[2]uint64]bool
	quit chan struct{}
	done chan struct{}
}

func watchChildren(root int, comm string) *childWatch {
	w := &childWatch{root: root, comm: comm, seen: map[[2]uint64]bool{},
		quit: make(chan struct{}), done: make(chan struct{})}
	w.scan()
	go func() {
		defer close(w.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.quit:
				w.scan()
				return
			case <-t.C:
				w.scan()
			}
		}
	}()
	return w
}

// stop ends the sampling and returns the number of distinct children seen.
func (w *childWatch) stop() int {
	close(w.quit)
	<-w.done
	return len(w.seen)
}

func (w *childWatch) scan() {
	var walk func(pid int, depth int)
	walk = func(pid int, depth int) {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
			for _, f := range strings.Fields(string(kids)) {
				kid, _ := strconv.Atoi(f)
				st, ok := proc.Read(kid)
				if !ok {
					continue
				}
				if st.Comm == w.comm {
					w.seen[[2]uint64{uint64(kid), st.Start}] = true
				} else if depth < 3 { // a shell between the server and the child
					walk(kid, depth+1)
				}
			}
		}
	}
	walk(w.root, 0)
}

// ---- an initialize-generation driver ----

// legacyVersion is the protocol version the session driver asks for in initialize.
const legacyVersion = "2025-11-25"

// sessionDriver drives tools/call echo over conns initialize-generation sessions, one per
// worker and connection: each session is opened with initialize and
// notifications/initialized, and each call carries its Mcp-Session-Id and the negotiated
// MCP-Protocol-Version. Answers are checked like httpload's.
type sessionDriver struct {
	url      string
	text     string
	tr       *http.Transport
	hc       *http.Client
	sessions []*legacySession
}

type legacySession struct {
	id      string // Mcp-Session-Id, "" if the server gave none
	version string // negotiated protocol version
	next    int    // the next request id
}

func newSessionDriver(ctx context.Context, url string, conns int, text string) (*sessionDriver, error) {
	tr := &http.Transport{Proxy: nil, MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	d := &sessionDriver{url: url, text: text, tr: tr, hc: &http.Client{Transport: tr}}
	for range conns {
		s, err := d.open(ctx)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.sessions = append(d.sessions, s)
	}
	return d, nil
}

func (d *sessionDriver) Close() { d.tr.CloseIdleConnections() }

// post sends one message and returns the status, the session id header and the JSON-RPC
// response in the body (nil for a body without one, as a 202 has).
func (d *sessionDriver) post(ctx context.Context, s *legacySession, body []byte) (int, string, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	if s.version != "" {
		req.Header.Set("MCP-Protocol-Version", s.version)
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", nil, fmt.Errorf("reading the answer: %w", err)
	}
	msg := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if data = strings.TrimSpace(data); ok && strings.Contains(data, `"id"`) &&
				(strings.Contains(data, `"result"`) || strings.Contains(data, `"error"`)) {
				msg = []byte(data)
			}
		}
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), bytes.TrimSpace(msg), nil
}

func (d *sessionDriver) open(ctx context.Context) (*legacySession, error) {
	s := &legacySession{next: 2}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyVersion +
		`","capabilities":{},"clientInfo":{"name":"relay-bench","version":"1.0.0"}}}`
	status, sid, msg, err := d.post(ctx, s, []byte(init))
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	var res struct {
		Result *struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if status != http.StatusOK || json.Unmarshal(msg, &res) != nil || res.Result == nil {
		return nil, fmt.Errorf("initialize: HTTP %d: %s", status, clip(msg))
	}
	s.id, s.version = sid, res.Result.ProtocolVersion
	status, _, msg, err = d.post(ctx, s, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	if status != http.StatusAccepted && status != http.StatusOK {
		return nil, fmt.Errorf("notifications/initialized: HTTP %d: %s", status, clip(msg))
	}
	return s, nil
}

// call sends one tools/call echo on s and returns its latency and answer.
func (d *sessionDriver) call(ctx context.Context, s *legacySession) (time.Duration, []byte, error, error) {
	q, _ := json.Marshal(d.text)
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(s.next) +
		`,"method":"tools/call","params":{"name":"echo","arguments":{"text":` + string(q) + `}}}`
	id := s.next
	s.next++
	t0 := time.Now()
	status, _, msg, err := d.post(ctx, s, []byte(body))
	lat := time.Since(t0)
	if err != nil {
		return lat, nil, nil, err
	}
	var a struct {
		ID     int `json:"id"`
		Result *struct {
			Content []struct{ Type, Text string } `json:"content"`
			IsError bool                          `json:"isError"`
		} `json:"result"`
	}
	switch {
	case status != http.StatusOK:
		return lat, msg, fmt.Errorf("HTTP %d: %s", status, clip(msg)), nil
	case json.Unmarshal(msg, &a) != nil || a.ID != id || a.Result == nil || a.Result.IsError ||
		len(a.Result.Content) != 1 || a.Result.Content[0].Type != "text" || a.Result.Content[0].Text != d.text:
		return lat, msg, fmt.Errorf("not the echo of the %d-byte text to id %d: %s", len(d.text), id, clip(msg)), nil
	}
	return lat, msg, nil, nil
}

func (d *sessionDriver) Call(ctx context.Context) ([]byte, error) {
	_, msg, bad, err := d.call(ctx, d.sessions[0])
	if err == nil {
		err = bad
	}
	return msg, err
}

func (d *sessionDriver) Drive(ctx context.Context, requests int, dur time.Duration) (httpload.Result, error) {
	next, err := httpload.Until(requests, dur)
	if err != nil {
		return httpload.Result{}, err
	}
	return d.DriveFunc(ctx, next)
}

// DriveFunc hands each request, while next returns true, to the first free session.
func (d *sessionDriver) DriveFunc(ctx context.Context, next func() bool) (httpload.Result, error) {
	return httpload.DriveWorkers(ctx, len(d.sessions), next, func(ctx context.Context, worker int) (httpload.Exchange, error) {
		lat, _, bad, err := d.call(ctx, d.sessions[worker])
		return httpload.Exchange{Latency: lat, Bad: bad}, err
	})
}

// clip shortens b for an error message.
func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// ---- a child per session: relay bridge's sessions against supergateway's stateful mode ----

// legacyEchoEnv makes the bench binary serve legacyecho on its stdio instead of running its
// tests and benchmarks: a stdio server of the initialize generation only, as most servers
// are today, so that relay bridge gives each session a child of its own.
const legacyEchoEnv = "RELAY_BENCH_LEGACY_ECHO"

func init() {
	if os.Getenv(legacyEchoEnv) != "1" {
		return
	}
	serveLegacyEcho(os.Stdin, os.Stdout)
	os.Exit(0)
}

// serveLegacyEcho answers initialize (2025-11-25, tools), ping, tools/list and tools/call
// echo (the text, as one text item) until its input ends; server/discover and anything else
// get -32601, notifications nothing.
func serveLegacyEcho(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 16<<20)
	w := bufio.NewWriter(out)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil || m.Method == "" {
			continue
		}
		var result any
		switch m.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": legacyVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "legacy-echo", "version": "1.0.0"}}
		case "ping":
			result = map[string]any{}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}}}}
		case "tools/call":
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": m.Params.Arguments.Text}}}
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result}
		if result == nil {
			reply = map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found: " + m.Method}}
		}
		b, _ := json.Marshal(reply)
		w.Write(append(b, '\n'))
		if w.Flush() != nil {
			return
		}
	}
}

// legacyEcho sets the environment for the bench binary to be a legacy echo server (inherited
// by relay or supergateway, and by the children they start) and returns its path and command
// name.
func legacyEcho(b *testing.B) (string, string) {
	echoServers(b) // relayCLI builds relay beside them
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv(legacyEchoEnv, "1")
	comm := filepath.Base(self)
	if len(comm) > 15 { // /proc/PID/stat keeps 15 bytes of the name
		comm = comm[:15]
	}
	return self, comm
}

// sessionServers are the servers of the session benchmarks: relay bridge with and without
// warm spares, and supergateway's stateful mode, each starting a child per session.
func sessionServers(b *testing.B, child string) []struct {
	name string
	cmd  func(addr string) []string
} {
	sg, _ := supergateway()
	relay := func(spares int) func(addr string) []string {
		return func(addr string) []string {
			cli, err := relayCLI()
			if err != nil {
				b.Fatal(err)
			}
			return []string{cli, "bridge", "--listen", addr, "--pool", "1", "--spares", strconv.Itoa(spares),
				"--max-sessions", "256", "--", child}
		}
	}
	return []struct {
		name string
		cmd  func(addr string) []string
	}{
		{"relay-spares=0", relay(0)},
		{"relay-spares=2", relay(2)},
		{"supergateway-stateful", func(addr string) []string { return sgCmd(sg, addr, child, true) }},
	}
}

// BenchmarkBridgeSessions drives tools/call echo on bridgeConns initialize-generation
// sessions, one per connection, each of which has a child of its own (the legacy echo
// server above): throughput and latency as BenchmarkBridge reports them, and the memory a
// session costs: the resident set of the server and all its descendants with the sessions
// open, less that before any session, divided by the sessions (rss-KiB/session).
func BenchmarkBridgeSessions(b *testing.B) {
	child, comm := legacyEcho(b)
	_, sgSkip := supergateway()
	for _, s := range sessionServers(b, child) {
		b.Run("server="+s.name+"/conns="+strconv.Itoa(bridgeConns), func(b *testing.B) {
			if strings.HasPrefix(s.name, "supergateway") && sgSkip != "" {
				b.Skip(sgSkip)
			}
			ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
			defer cancel()
			p, err := startListening(ctx, s.cmd)
			if err != nil {
				b.Fatal(err)
			}
			defer p.stop()
			url := "http://" + p.addr + "/mcp"
			time.Sleep(time.Second) // the pool's child and the spares have started
			idle := treeRSS(p.cmd.Process.Pid)
			d, err := newSessionDriver(ctx, url, bridgeConns, httpText)
			if err != nil {
				b.Fatalf("%v%s", err, p.stderr.suffix())
			}
			defer d.Close()
			if _, err := d.Drive(ctx, 0, warmUp); err != nil {
				b.Fatalf("%v%s", err, p.stderr.suffix())
			}
			w := watchChildren(p.cmd.Process.Pid, comm)
			res, err := d.DriveFunc(ctx, func() bool {
				if b.Loop() {
					return true
				}
				b.StartTimer()
				return false
			})
			b.StopTimer()
			children := w.stop()
			busy := treeRSS(p.cmd.Process.Pid)
			if err != nil {
				b.Fatalf("%v%s", err, p.stderr.suffix())
			}
			if res.Errors > 0 {
				b.Fatalf("%d of %d answers were bad; the first: %s", res.Errors, res.Requests, res.FirstError)
			}
			d.Close()
			if err := p.stop(); err != nil {
				b.Log(err)
			}
			b.ReportMetric(res.PerSecond(), "req/s")
			b.ReportMetric(float64(res.Percentile(50))/float64(time.Microsecond), "p50-µs")
			b.ReportMetric(float64(res.Percentile(99))/float64(time.Microsecond), "p99-µs")
			if goruntime.GOOS == "linux" {
				b.ReportMetric(float64(children), "children")
				b.ReportMetric(float64(busy-idle)/float64(bridgeConns)/1024, "rss-KiB/session")
			}
		})
	}
}

// startPause is how long BenchmarkBridgeSessionStart waits between sessions, outside the
// timer.
const startPause = 300 * time.Millisecond

// BenchmarkBridgeSessionStart measures how long a new initialize-generation session takes
// to be served when it finds the server idle (startPause after the last one ended):
// initialize, notifications/initialized and the first tools/call echo answered (start-µs,
// the median; ns/op includes the DELETE that ends each session). relay bridge with spares
// hands the session a child spawned ahead; without, and supergateway, spawn one at the
// initialize. Sessions that come faster than the children can be spawned find no spare left
// whatever their number: spares buy latency for the sessions of a burst, not throughput.
func BenchmarkBridgeSessionStart(b *testing.B) {
	child, _ := legacyEcho(b)
	_, sgSkip := supergateway()
	for _, s := range sessionServers(b, child) {
		b.Run("server="+s.name, func(b *testing.B) {
			if strings.HasPrefix(s.name, "supergateway") && sgSkip != "" {
				b.Skip(sgSkip)
			}
			ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
			defer cancel()
			p, err := startListening(ctx, s.cmd)
			if err != nil {
				b.Fatal(err)
			}
			defer p.stop()
			d := &sessionDriver{url: "http://" + p.addr + "/mcp", text: httpText,
				tr: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, DisableCompression: true}}
			d.hc = &http.Client{Transport: d.tr}
			defer d.Close()
			time.Sleep(time.Second) // the pool's child and the spares have started
			var starts []time.Duration
			for b.Loop() {
				t0 := time.Now()
				sess, err := d.open(ctx)
				if err != nil {
					b.Fatalf("%v%s", err, p.stderr.suffix())
				}
				_, _, bad, err := d.call(ctx, sess)
				if err == nil {
					err = bad
				}
				if err != nil {
					b.Fatalf("%v%s", err, p.stderr.suffix())
				}
				starts = append(starts, time.Since(t0))
				d.end(ctx, sess)
				// A session that finds the server idle: relay bridge has made up its spares,
				// and the ended session's child has stopped.
				b.StopTimer()
				time.Sleep(startPause)
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(starts)
			b.ReportMetric(float64(starts[len(starts)/2])/float64(time.Microsecond), "start-µs")
		})
	}
}

// end sends DELETE for s's session; the answer does not matter.
func (d *sessionDriver) end(ctx context.Context, s *legacySession) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, d.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("MCP-Protocol-Version", s.version)
	if resp, err := d.hc.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// treeRSS sums the resident set of pid and all its descendants (Linux; 0 elsewhere).
func treeRSS(pid int) int64 {
	total, _ := vmRSS(pid)
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(kids)) {
			if kid, err := strconv.Atoi(f); err == nil {
				total += treeRSS(kid)
			}
		}
	}
	return total
}
