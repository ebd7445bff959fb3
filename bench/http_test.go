package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/bench/httpload"
	"github.com/relayrt/relay/internal/hosttest"
)

// The Streamable HTTP servers: Relay's examples/echo with -http (built by
// echoServers), and the HTTP peers, built into the same directory on first
// use.
var (
	httpBuildOnce sync.Once
	httpServerSet []*server
)

// httpServers builds the HTTP peers on first use and returns the servers in
// benchmark order. Each cmd lacks the -http ADDR that startHTTP appends.
func httpServers(b *testing.B) []*server {
	echo := echoServers(b) // builds Relay, and makes buildDir
	httpBuildOnce.Do(func() {
		relay := &server{name: "relay"}
		for _, s := range echo {
			if s.name == "relay" {
				*relay = *s
			}
		}
		gosdk := &server{name: "gosdk", cmd: []string{hosttest.Exe(filepath.Join(buildDir, "gosdkhttp"))}}
		mcpgo := &server{name: "mcpgo", cmd: []string{hosttest.Exe(filepath.Join(buildDir, "mcpgohttp"))}}
		bare := &server{name: "bare", cmd: []string{hosttest.Exe(filepath.Join(buildDir, "barehttp")), "-text", httpText}}

		goTool := "go"
		if p, err := exec.LookPath("go"); err == nil {
			goTool = p
		}
		env := append(os.Environ(), "GOWORK=off")
		if out, err := run("peers", env, goTool, "build", "-o", buildDir+string(filepath.Separator),
			"./gosdkhttp", "./mcpgohttp", "./barehttp"); err != nil {
			msg := fmt.Sprintf("go build in bench/peers: %v\n%s", err, out)
			gosdk.fail, mcpgo.fail, bare.fail = msg, msg, msg
		}
		httpServerSet = []*server{relay, gosdk, mcpgo, bare}
	})
	return httpServerSet
}

// httpText is the echo argument: 64 bytes, like BenchmarkEcho's small case.
var httpText = text(64)

// httpConns are the numbers of concurrent keep-alive connections measured.
var httpConns = []int{64}

// BenchmarkHTTPEcho measures tools/call echo over Streamable HTTP, protocol
// 2026-07-28 without sessions, on conns keep-alive connections each with one
// request outstanding. Each sub-benchmark starts its server once, checks one
// answer and warms up, all outside the timer; every iteration is then one
// request.
func BenchmarkHTTPEcho(b *testing.B) {
	for _, srv := range httpServers(b) {
		b.Run("server="+srv.name, func(b *testing.B) {
			for _, conns := range httpConns {
				b.Run("conns="+strconv.Itoa(conns), func(b *testing.B) {
					switch {
					case srv.fail != "":
						b.Fatal(srv.fail)
					case srv.skip != "":
						b.Skip(srv.skip)
					}
					benchHTTP(b, srv.cmd, conns)
				})
			}
		})
	}
}

func benchHTTP(b *testing.B, cmd []string, conns int) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	p, err := startHTTP(ctx, cmd)
	if err != nil {
		b.Fatal(err)
	}
	defer p.stop()

	c, err := httpload.New(httpload.Config{URL: "http://" + p.addr + "/mcp", Conns: conns, Text: httpText})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	// One checked call before timing: the answer must be the text itself.
	if msg, err := c.Call(ctx); err != nil {
		b.Fatalf("%v%s", err, p.stderr.suffix())
	} else if testing.Verbose() {
		b.Logf("answer: %s", msg)
	}
	timedDrive(ctx, b, c, p, conns)
}

// timedDrive measures c's requests to the server p serves on conns connections, once warmed
// up untimed (every connection opens, and the server grows its buffers and pools): each
// b.Loop iteration hands one request to a free connection. It stops p and reports req/s and
// the latency's p50 and p99.
func timedDrive(ctx context.Context, b *testing.B, c *httpload.Client, p served, conns int) {
	if _, err := c.Drive(ctx, 0, warmUp); err != nil {
		b.Fatalf("%v%s", err, p.output())
	}
	// When b.Loop ends, it stops the timer with up to conns requests still outstanding:
	// restart it so that ns/op counts them, like req/s does.
	res, err := c.DriveFunc(ctx, func() bool {
		if b.Loop() {
			return true
		}
		b.StartTimer()
		return false
	})
	b.StopTimer()
	if err != nil {
		b.Fatalf("%v%s", err, p.output())
	}
	if res.Errors > 0 {
		b.Fatalf("%d of %d answers were bad; the first: %s", res.Errors, res.Requests, res.FirstError)
	}
	if res.Dials > 0 {
		// Go's transport drops a connection when it cannot confirm within
		// 50 ms that the request was written, as happens on a loaded
		// machine; a server closing connections would show here too.
		b.Logf("%d connections were opened during the measurement, besides the %d of the warm-up", res.Dials, conns)
	}
	c.Close()
	if err := p.stop(); err != nil {
		b.Error(err)
	}
	b.ReportMetric(res.PerSecond(), "req/s")
	b.ReportMetric(float64(res.Percentile(50))/float64(time.Microsecond), "p50-µs")
	b.ReportMetric(float64(res.Percentile(99))/float64(time.Microsecond), "p99-µs")
}

// served is what timedDrive drives: one server process, or several behind a balancer.
type served interface {
	stop() error    // stops what serves, and says what went wrong
	output() string // what it wrote last, as "\n<output>", for error messages
}

// httpProcess is a running HTTP server.
type httpProcess struct {
	addr     string
	cmd      *exec.Cmd
	stderr   *tail
	exited   chan struct{} // closed when cmd.Wait returns
	waitErr  error         // what cmd.Wait returned, once exited is closed
	stopOnce sync.Once
	stopErr  error
}

// startHTTP starts cmd with -http on a free loopback port and waits until
// the port accepts connections. A port taken between choosing it and the
// server binding it makes the server exit; startHTTP then tries another.
func startHTTP(ctx context.Context, cmd []string) (*httpProcess, error) {
	var err error
	for range 3 {
		var p *httpProcess
		if p, err = tryStartHTTP(ctx, cmd); err == nil {
			return p, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

func tryStartHTTP(ctx context.Context, argv []string) (*httpProcess, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &httpProcess{addr: addr, stderr: &tail{}, exited: make(chan struct{})}
	args := append(append([]string(nil), argv[1:]...), "-http", addr)
	p.cmd = exec.Command(argv[0], args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before serving %s: %v%s", argv[0], addr, p.waitErr, p.stderr.suffix())
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s did not listen on %s within 10 s%s", argv[0], addr, p.stderr.suffix())
		}
	}
}

// freePort returns a loopback address whose port was free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// stop sends SIGTERM, and SIGKILL if the server has not exited 5 s later; where SIGTERM
// cannot be sent (Windows) it kills the server at once.
// Exiting with status 0 or by the SIGTERM is success.
func (p *httpProcess) stop() error {
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
		default:
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
				p.cmd.Process.Kill() // Windows cannot send SIGTERM: killing is the only stop there
				<-p.exited
				return
			}
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
				p.cmd.Process.Kill()
				<-p.exited
				p.stopErr = fmt.Errorf("%s did not exit within 5 s of SIGTERM%s", p.cmd.Path, p.stderr.suffix())
				return
			}
		}
		var ee *exec.ExitError
		if errors.As(p.waitErr, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
				return
			}
		}
		if p.waitErr != nil {
			p.stopErr = fmt.Errorf("%s: %v%s", p.cmd.Path, p.waitErr, p.stderr.suffix())
		}
	})
	return p.stopErr
}

func (p *httpProcess) output() string { return p.stderr.suffix() }

// tail keeps the last few KiB written to it, for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

// suffix returns the output kept so far as "\n<output>", or "" if none.
func (t *tail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := bytes.TrimSpace(t.buf)
	if len(s) == 0 {
		return ""
	}
	return "\nserver output:\n" + string(s)
}
