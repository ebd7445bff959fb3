package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relayrt/relay/bench/httpload"
	"github.com/relayrt/relay/internal/fleetflag"
	"github.com/relayrt/relay/internal/hosttest"
	"github.com/relayrt/relay/internal/redistest"
)

// commandStats are the calls Redis has served, by command (INFO commandstats: "get",
// "getex", "client|setinfo", ...), and the connections it has accepted.
type commandStats struct {
	calls  map[string]int
	conns  int   // total_connections_received
	probes int64 // redisStats calls so far, this one included: its connections are in conns
}

// statsProbes counts redisStats calls.
var statsProbes atomic.Int64

// redisStats reads addr's INFO commandstats and stats over a connection of its own, in RESP
// by hand, so that reading them costs one INFO (left out of every count) and nothing else.
func redisStats(addr string) (commandStats, error) {
	probe := statsProbes.Add(1)
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return commandStats{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("*3\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n$5\r\nstats\r\n")); err != nil {
		return commandStats{}, err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return commandStats{}, err
	}
	if !strings.HasPrefix(head, "$") {
		return commandStats{}, fmt.Errorf("Redis answered INFO with %q", head)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		return commandStats{}, fmt.Errorf("Redis answered INFO with %q", head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return commandStats{}, err
	}
	s := commandStats{calls: map[string]int{}, probes: probe}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			s.conns, _ = strconv.Atoi(v)
			continue
		}
		name, rest, ok := strings.Cut(line, ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		if s.calls[name], err = strconv.Atoi(calls); err != nil {
			return commandStats{}, fmt.Errorf("INFO commandstats: %q", line)
		}
	}
	return s, nil
}

// commandDelta is what Redis served between two commandStats, the INFO calls that read
// them left out.
type commandDelta struct {
	calls map[string]int // by command, only those with calls
	conns int            // connections accepted
}

func (after commandStats) since(before commandStats) commandDelta {
	d := commandDelta{calls: map[string]int{}, conns: after.conns - before.conns}
	for name, n := range after.calls {
		if name == "info" {
			continue
		}
		if n -= before.calls[name]; n != 0 {
			d.calls[name] = n
		}
	}
	// Each redisStats is a connection of its own, accepted before its INFO: those after
	// before's, after's included, are not the instance's.
	d.conns -= int(after.probes - before.probes)
	return d
}

// total returns the calls of every command but those named.
func (d commandDelta) total(except ...string) int {
	n := 0
	for name, c := range d.calls {
		if !slices.Contains(except, name) {
			n += c
		}
	}
	return n
}

func (d commandDelta) String() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(d.calls)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, d.calls[name]))
	}
	if len(parts) == 0 {
		parts = append(parts, "no command")
	}
	return strings.Join(parts, ", ") + fmt.Sprintf("; %d connections", d.conns)
}

// quiet waits until Redis at addr has served nothing for a while (an instance that has just
// started subscribes and opens its pool), and returns its stats then.
func quiet(t testing.TB, addr string) commandStats {
	t.Helper()
	prev, err := redisStats(addr)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		time.Sleep(200 * time.Millisecond)
		cur, err := redisStats(addr)
		if err != nil {
			t.Fatal(err)
		}
		if cur.since(prev).total() == 0 {
			return cur
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis kept serving commands for 10 s with nothing asked: %v", cur.since(prev))
		}
		prev = cur
	}
}

// noFleetEnv clears $RELAY_REDIS_URL for tb, so that only --redis makes an instance of the
// benchmarks and tests a member of a fleet.
func noFleetEnv(tb testing.TB) {
	if os.Getenv(fleetflag.Env) != "" {
		tb.Setenv(fleetflag.Env, "")
	}
}

// echoBinary builds examples/echo alone, once, into its own temporary directory (removed by
// TestMain), for the tests: the benchmarks use relayEcho, which builds the peers too.
var echoBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "relay-bench-echo-")
	if err != nil {
		return "", err
	}
	echoBinaryDir = dir
	bin := hosttest.Exe(filepath.Join(dir, "echo"))
	goTool := "go"
	if p, err := exec.LookPath("go"); err == nil {
		goTool = p
	}
	if out, err := run("..", nil, goTool, "build", "-o", bin, "./examples/echo"); err != nil {
		return "", fmt.Errorf("go build ./examples/echo: %v\n%s", err, out)
	}
	return bin, nil
})

// echoBinaryDir is where echoBinary built, for TestMain to remove.
var echoBinaryDir string

// fleetRequests is how many requests of each generation TestFleetRedisCommands sends.
const fleetRequests = 300

// TestFleetRedisCommands checks what an instance of a fleet (examples/echo -http --redis)
// asks of Redis per request, counted by Redis itself (INFO commandstats): a 2026-07-28
// tools/call, neither a listen nor a task, asks nothing, beyond what the instance does on its
// own while idle over the same span (the bus subscription's health PING); a request of an
// initialize-generation session asks at most one command (GETEX of its record), plus a
// small constant.
func TestFleetRedisCommands(t *testing.T) {
	noFleetEnv(t)
	rs := redistest.Start(t)
	bin, err := echoBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p, err := startHTTP(ctx, []string{bin, "--redis", rs.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
	}()
	url := "http://" + p.addr + "/mcp"

	t.Run("2026-07-28", func(t *testing.T) {
		c, err := httpload.New(httpload.Config{URL: url, Conns: 8, Text: httpText})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Call(ctx); err != nil { // the connections and the instance's pool
			t.Fatalf("%v%s", err, p.output())
		}
		before := quiet(t, rs.Addr)
		start := time.Now()
		res, err := c.Drive(ctx, fleetRequests, 0)
		if err != nil || res.Errors > 0 {
			t.Fatalf("%v: %v%s", res, err, p.output())
		}
		// Let whatever the requests set off reach Redis before counting.
		time.Sleep(100 * time.Millisecond)
		span := time.Since(start)
		after, err := redisStats(rs.Addr)
		if err != nil {
			t.Fatal(err)
		}
		busy := after.since(before)

		// The same span with nothing asked: what the instance does on its own.
		time.Sleep(span)
		idleAfter, err := redisStats(rs.Addr)
		if err != nil {
			t.Fatal(err)
		}
		idle := idleAfter.since(after)
		t.Logf("%d requests in %v: %v; idle over as long: %v", res.Requests, span.Round(time.Millisecond), busy, idle)

		// A PING is a bus subscription checking its connection after 10 s of quiet (one per
		// subscription, each on its own clock): it may fall in either span, and is no
		// request's, so PINGs are left out of both counts.
		if n, idleN := busy.total("ping"), idle.total("ping"); n > idleN {
			t.Errorf("%d 2026-07-28 tools/call asked Redis %d commands (idle over as long: %d): %v",
				res.Requests, n, idleN, busy)
		}
		if busy.conns > 0 {
			t.Errorf("%d 2026-07-28 tools/call made the instance open %d connections to Redis", res.Requests, busy.conns)
		}
	})

	t.Run("session", func(t *testing.T) {
		sessionCommands(ctx, t, rs.Addr, url, p.output)
	})

	// Three instances on the same Redis behind a round-robin balancer: a session's
	// requests land on each in turn, and each instance serves the session with a replica of
	// its own, started from the record it reads.
	t.Run("session-fleet3", func(t *testing.T) {
		f, err := startFleet(ctx, []string{bin, "--redis", rs.URL}, 3, true)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := f.stop(); err != nil {
				t.Error(err)
			}
		}()
		sessionCommands(ctx, t, rs.Addr, "http://"+f.addr+"/mcp", f.output)
	})
}

// sessionCommands sends fleetRequests requests of 4 initialize-generation sessions to url,
// on 8 connections, and checks that they ask Redis (at redisAddr) at most one command each,
// plus a small constant.
func sessionCommands(ctx context.Context, t *testing.T, redisAddr, url string, output func() string) {
	const sessions = 4
	c, err := httpload.New(httpload.Config{URL: url, Conns: 8, Sessions: sessions, Text: httpText})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Opens the sessions (initialize: their records are written), then warms up: the
	// instances grow their pools of Redis connections to what 8 requests at once need, and
	// start their replicas of the sessions.
	if _, err := c.Call(ctx); err != nil {
		t.Fatalf("%v%s", err, output())
	}
	opened := quiet(t, redisAddr)
	warm, err := c.Drive(ctx, 100, 0)
	if err != nil || warm.Errors > 0 {
		t.Fatalf("%v: %v%s", warm, err, output())
	}
	before := quiet(t, redisAddr)
	t.Logf("warm-up, %d requests: %v", warm.Requests, before.since(opened))
	res, err := c.Drive(ctx, fleetRequests, 0)
	if err != nil || res.Errors > 0 {
		t.Fatalf("%v: %v%s", res, err, output())
	}
	time.Sleep(100 * time.Millisecond)
	after, err := redisStats(redisAddr)
	if err != nil {
		t.Fatal(err)
	}
	busy := after.since(before)
	n := busy.total("ping")
	t.Logf("%d requests on %d sessions: %v: %.3f commands per request", res.Requests, sessions, busy,
		float64(n)/float64(res.Requests))
	// The constant: a pool opening a connection more (HELLO), should the requests'
	// concurrency outgrow the warm-up's.
	if limit := res.Requests + 16; n > limit {
		t.Errorf("%d session requests asked Redis %d commands, more than one per request (+16): %v",
			res.Requests, n, busy)
	}
	if getex := busy.calls["getex"]; getex > res.Requests {
		t.Errorf("%d session requests read their record %d times", res.Requests, getex)
	}
}

// fleetSetups are BenchmarkFleet's ways of serving: how many instances of examples/echo
// -http, whether they share their state on Redis (--redis), and whether a round-robin
// balancer stands in front.
var fleetSetups = []struct {
	name      string
	instances int
	redis     bool
	balanced  bool
}{
	{"single", 1, false, false},      // one instance, alone
	{"single-redis", 1, true, false}, // one instance, a fleet of one on Redis
	{"balanced", 1, false, true},     // one instance, alone, behind the balancer
	{"fleet3", 3, true, true},        // three instances on Redis behind the balancer
}

// fleetConns and fleetSessions are BenchmarkFleet's keep-alive connections (requests
// outstanding) and, for proto=session, the initialize-generation sessions they share.
const (
	fleetConns    = 64
	fleetSessions = 16
)

// BenchmarkFleet measures tools/call echo over Streamable HTTP on a fleet of examples/echo
// -http instances sharing their state on Redis (a redis-server of its own per
// sub-benchmark, internal/redistest), against one instance alone, at 64 requests outstanding
// on keep-alive connections: proto=2026-07-28, self-contained requests that need no Redis,
// and proto=session, requests of 16 initialize-generation sessions, each of which reads its
// session's record from Redis (GETEX). The setups are in fleetSetups; the balancer is a
// round-robin reverse proxy in the benchmark's own process (net/http/httputil), one backend
// per request, so that consecutive requests of a session land on different instances.
func BenchmarkFleet(b *testing.B) {
	noFleetEnv(b)
	echo := relayEcho(b)
	for _, proto := range []struct {
		name     string
		sessions int
	}{{"2026-07-28", 0}, {"session", fleetSessions}} {
		for _, s := range fleetSetups {
			b.Run("proto="+proto.name+"/setup="+s.name, func(b *testing.B) {
				ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
				defer cancel()
				cmd := slices.Clone(echo.cmd)
				if s.redis {
					cmd = append(cmd, "--redis", redistest.Start(b).URL)
				}
				f, err := startFleet(ctx, cmd, s.instances, s.balanced)
				if err != nil {
					b.Fatal(err)
				}
				defer f.stop()
				c, err := httpload.New(httpload.Config{URL: "http://" + f.addr + "/mcp", Conns: fleetConns,
					Sessions: proto.sessions, Text: httpText})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				if msg, err := c.Call(ctx); err != nil {
					b.Fatalf("%v%s", err, f.output())
				} else if testing.Verbose() {
					b.Logf("answer: %s", msg)
				}
				timedDrive(ctx, b, c, f, fleetConns)
			})
		}
	}
}

// fleetServer is instances of a server, alone or behind a round-robin balancer.
type fleetServer struct {
	addr      string // where to send requests: the balancer's, or the one instance's
	instances []*httpProcess
	balancer  *http.Server // nil without one
	proxyTr   *http.Transport
	done      chan struct{} // closed when the balancer's Serve returns
}

// startFleet starts n instances of cmd (each with -http on a port of its own) and, when
// balanced, a round-robin reverse proxy in front of them on a free loopback port.
func startFleet(ctx context.Context, cmd []string, n int, balanced bool) (*fleetServer, error) {
	f := &fleetServer{}
	for range n {
		p, err := startHTTP(ctx, cmd)
		if err != nil {
			f.stop()
			return nil, err
		}
		f.instances = append(f.instances, p)
	}
	f.addr = f.instances[0].addr
	if !balanced {
		return f, nil
	}
	targets := make([]*url.URL, n)
	for i, p := range f.instances {
		targets[i] = &url.URL{Scheme: "http", Host: p.addr}
	}
	f.proxyTr = &http.Transport{
		Proxy:               nil, // never a proxy, whatever the environment says
		MaxIdleConns:        2 * fleetConns,
		MaxIdleConnsPerHost: fleetConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	var next atomic.Uint64
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(targets[(next.Add(1)-1)%uint64(n)])
		},
		Transport:     f.proxyTr,
		FlushInterval: -1, // SSE answers go out as they come
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.stop()
		return nil, err
	}
	f.addr = ln.Addr().String()
	f.balancer = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	f.done = make(chan struct{})
	go func() {
		defer close(f.done)
		f.balancer.Serve(ln)
	}()
	return f, nil
}

// stop closes the balancer, if any, and stops every instance.
func (f *fleetServer) stop() error {
	if f.balancer != nil {
		f.balancer.Close()
		<-f.done
		f.proxyTr.CloseIdleConnections()
		f.balancer = nil
	}
	var errs []error
	for _, p := range f.instances {
		errs = append(errs, p.stop())
	}
	return errors.Join(errs...)
}

// output returns what the instances wrote last.
func (f *fleetServer) output() string {
	var sb strings.Builder
	for _, p := range f.instances {
		sb.WriteString(p.output())
	}
	return sb.String()
}
