package httpx_test

// Admission under hostile input: clients that send their bodies slowly, or promise large ones,
// must not lock out everyone else or grow the server past its budgets. Every attack here runs
// on real sockets on 127.0.0.1, against both protocols where both are exposed to it.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/runtime"
)

// target is one protocol's handler on a real listener, with a request it answers at once.
type target struct {
	name    string
	addr    string // host:port
	path    string
	handler http.Handler
	ops     *httpx.Ops
	// normal sends a well-formed request and returns its status.
	normal func() (int, error)
	// refusal reads the JSON-RPC error code of a refusal's body.
	code func(body []byte) int
}

// admissionTargets serves an MCPHandler and an RCPHandler with these limits.
func admissionTargets(t *testing.T, mo httpx.MCPOptions, ro httpx.RCPOptions) []target {
	t.Helper()
	code := func(body []byte) int {
		var m rpcMsg
		json.Unmarshal(body, &m)
		return m.code()
	}
	mo.Ops, ro.Ops = httpx.NewOps(nil), httpx.NewOps(nil)
	f := newFixture(t, &mo)
	ro.Logger = zap.NewNop()
	rh := httpx.NewRCPHandler(rcpServer(nil), &ro)
	srv := httptest.NewServer(rh)
	t.Cleanup(func() { srv.Close(); rh.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return []target{
		{name: "MCP", addr: strings.TrimPrefix(f.base, "http://"), path: "/mcp", handler: f.h, ops: mo.Ops, code: code,
			normal: func() (int, error) {
				body, hdr := modernCall(1, "tools/list", nil)
				r, err := f.tryDo(f.request(context.Background(), http.MethodPost, body, hdr...))
				return r.status, err
			}},
		{name: "RCP", addr: strings.TrimPrefix(srv.URL, "http://"), path: "/rcp/ping", handler: rh, ops: ro.Ops, code: code,
			normal: func() (int, error) {
				resp, err := (&http.Client{Transport: tr}).Post(srv.URL+"/rcp/ping", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
				if err != nil {
					return 0, err
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode, nil
			}},
	}
}

// stall opens a connection and sends a POST's headers, declaring length bytes of body, and
// the first sent bytes of the body; then it sends nothing more. The caller closes it.
func stall(t *testing.T, addr, path string, length, sent int, header ...string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var extra string
	for i := 0; i+1 < len(header); i += 2 {
		extra += header[i] + ": " + header[i+1] + "\r\n"
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n", path, extra, length)
	if _, err := io.WriteString(conn, head+strings.Repeat("x", sent)); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	return conn
}

// response reads an HTTP response from conn, waiting at most d.
func response(conn net.Conn, d time.Duration) (status int, header http.Header, body []byte, err error) {
	conn.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, _ = io.ReadAll(resp.Body)
	if resp.Close { // net/http reads Connection: close into Close
		resp.Header.Set("Connection", "close")
	}
	return resp.StatusCode, resp.Header, body, nil
}

// inFlight reads the relay_http_in_flight gauge: the HTTP requests inside a handler.
func inFlight(t *testing.T, ops *httpx.Ops) float64 {
	t.Helper()
	return gauge(t, ops, "relay_http_in_flight")
}

// gauge reads a gauge of ops, summed over its labels.
func gauge(t *testing.T, ops *httpx.Ops, name string) float64 {
	t.Helper()
	mfs, err := ops.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// TestLimits_StalledBodiesHoldNoSlots: more connections than there are in-flight slots each
// send one byte of a 1,000-byte body and stall; while they do, a normal request is answered,
// for MCP and RCP alike: a request takes its slot only once its body is in.
func TestLimits_StalledBodiesHoldNoSlots(t *testing.T) {
	const slots, stalled = 8, 12
	for _, tg := range admissionTargets(t, httpx.MCPOptions{MaxInFlight: slots}, httpx.RCPOptions{MaxInFlight: slots}) {
		t.Run(tg.name, func(t *testing.T) {
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for range stalled {
				conns = append(conns, stall(t, tg.addr, tg.path, 1000, 1))
			}
			waitFor(t, "as many stalled requests inside the handler as there are slots", func() bool { return inFlight(t, tg.ops) >= slots })
			for i := range 3 {
				status, err := tg.normal()
				if err != nil || status != http.StatusOK {
					t.Fatalf("normal request %d with %d bodies stalled and %d slots: %d %v; want 200", i, stalled, slots, status, err)
				}
			}
		})
	}
}

// TestLimits_SlowBodyIs408: a body that has not all arrived within BodyTimeout is refused
// with 408 (RCP: -32014) and its connection closed.
func TestLimits_SlowBodyIs408(t *testing.T) {
	timeout := 200 * time.Millisecond
	for _, tg := range admissionTargets(t, httpx.MCPOptions{BodyTimeout: timeout}, httpx.RCPOptions{BodyTimeout: timeout}) {
		t.Run(tg.name, func(t *testing.T) {
			conn := stall(t, tg.addr, tg.path, 1000, 10)
			defer conn.Close()
			status, header, body, err := response(conn, waitLong)
			if err != nil || status != http.StatusRequestTimeout || header.Get("Connection") != "close" {
				t.Fatalf("got %d %v %s (%v); want 408 with Connection: close", status, header, body, err)
			}
			if want := map[string]int{"MCP": -32600, "RCP": -32014}[tg.name]; tg.code(body) != want {
				t.Errorf("the refusal's code is %d, want %d: %s", tg.code(body), want, body)
			}
			if status, err := tg.normal(); err != nil || status != http.StatusOK {
				t.Errorf("a normal request after: %d %v", status, err)
			}
		})
	}
}

// TestLimits_ContentLengthOverMaxBodyIs413BeforeTheBody: a Content-Length over MaxBody is
// refused with 413 (RCP: -32013) at once, without waiting for (or reading) the body, which
// this client never sends.
func TestLimits_ContentLengthOverMaxBodyIs413BeforeTheBody(t *testing.T) {
	const maxBody = 64 << 10
	for _, tg := range admissionTargets(t, httpx.MCPOptions{MaxBody: maxBody}, httpx.RCPOptions{MaxBody: maxBody}) {
		t.Run(tg.name, func(t *testing.T) {
			for _, length := range []int{maxBody + 1, 16 << 30} {
				conn := stall(t, tg.addr, tg.path, length, 0)
				status, _, body, err := response(conn, waitLong)
				conn.Close()
				if err != nil || status != http.StatusRequestEntityTooLarge {
					t.Fatalf("Content-Length %d: got %d %s (%v); want 413 before any of the body is sent", length, status, body, err)
				}
				if want := map[string]int{"MCP": -32600, "RCP": -32013}[tg.name]; tg.code(body) != want {
					t.Errorf("the refusal's code is %d, want %d: %s", tg.code(body), want, body)
				}
			}
			if status, err := tg.normal(); err != nil || status != http.StatusOK {
				t.Errorf("a normal request after: %d %v", status, err)
			}
		})
	}
}

// TestLimits_StalledBodiesStayWithinTheBudget: clients that each send all but one byte of a
// body as large as MaxBody, then stall, hold no more than BodyBudget between them: those past
// it are refused with 503 and Retry-After before more of their bodies is read, the bytes held
// never exceed the budget, and all of it is given back when they go.
func TestLimits_StalledBodiesStayWithinTheBudget(t *testing.T) {
	const maxBody, budget, clients = 128 << 10, 512 << 10, 8 // room for 4 whole bodies
	mo := httpx.MCPOptions{MaxBody: maxBody, BodyBudget: budget}
	ro := httpx.RCPOptions{MaxBody: maxBody, BodyBudget: budget}
	for _, tg := range admissionTargets(t, mo, ro) {
		t.Run(tg.name, func(t *testing.T) {
			type result struct {
				status int
				header http.Header
				err    error
			}
			results := make(chan result, clients)
			var conns []net.Conn
			var wg sync.WaitGroup
			for range clients {
				conn := stall(t, tg.addr, tg.path, maxBody, maxBody-1)
				conns = append(conns, conn)
				wg.Go(func() {
					status, header, _, err := response(conn, 2*time.Second)
					results <- result{status, header, err}
				})
				if held := httpx.HeldBodyBytes(tg.handler); held > budget {
					t.Errorf("the bodies hold %d bytes, over the %d-byte budget", held, budget)
				}
			}
			wg.Wait()
			close(results)
			refused := 0
			for r := range results {
				if r.err == nil && r.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") != "" {
					refused++
				}
			}
			if refused < clients-budget/maxBody {
				t.Errorf("%d of %d stalled bodies refused with 503 and Retry-After; want at least %d (the budget holds %d)",
					refused, clients, clients-budget/maxBody, budget/maxBody)
			}
			if held := httpx.HeldBodyBytes(tg.handler); held > budget {
				t.Errorf("the bodies hold %d bytes, over the %d-byte budget", held, budget)
			}
			for _, c := range conns {
				c.Close()
			}
			waitFor(t, "the stalled bodies to give their share back", func() bool {
				return httpx.HeldBodyBytes(tg.handler) == 0
			})
			if status, err := tg.normal(); err != nil || status != http.StatusOK {
				t.Errorf("a normal request after: %d %v", status, err)
			}
		})
	}
}

// TestLimits_OneClientHoldsOnlyItsShareOfTheBudget: one client's stalled bodies hold at most
// its share of the body budget (an eighth, and at least one whole body), so the budget is
// never spent by one client: another client, and even this one's small requests once its
// share is back, are served while the stalls last.
func TestLimits_OneClientHoldsOnlyItsShareOfTheBudget(t *testing.T) {
	const maxBody, budget = 128 << 10, 512 << 10 // room for 4 whole bodies; a client's share: 1
	// A client names itself in X-Client (a principal); without it, it is known by its address.
	auth := httpx.Authenticator(func(r *http.Request) (*runtime.Principal, error) {
		if c := r.Header.Get("X-Client"); c != "" {
			return &runtime.Principal{ID: c}, nil
		}
		return nil, nil
	})
	mo := httpx.MCPOptions{MaxBody: maxBody, BodyBudget: budget, Authenticator: auth}
	ro := httpx.RCPOptions{MaxBody: maxBody, BodyBudget: budget, Authenticator: auth}
	for _, tg := range admissionTargets(t, mo, ro) {
		t.Run(tg.name, func(t *testing.T) {
			var conns []net.Conn
			refused := 0
			for range 6 {
				conn := stall(t, tg.addr, tg.path, maxBody, maxBody-1, "X-Client", "mallory")
				conns = append(conns, conn)
				waitFor(t, "the stalled body to be read or refused", func() bool {
					held := httpx.HeldBodyBytes(tg.handler)
					return held >= maxBody-1 || len(conns) > 1
				})
				if status, _, _, err := response(conn, 300*time.Millisecond); err == nil && status == http.StatusServiceUnavailable {
					refused++
				}
			}
			if held := httpx.HeldBodyBytes(tg.handler); held > maxBody {
				t.Errorf("one client's stalled bodies hold %d bytes, over its share of %d", held, maxBody)
			}
			if refused < 5 {
				t.Errorf("%d of mallory's 6 stalled bodies refused; want every one past the first", refused)
			}
			if status, err := tg.normal(); err != nil || status != http.StatusOK {
				t.Errorf("another client's request while mallory stalls: %d %v, want 200", status, err)
			}
			for _, c := range conns {
				c.Close()
			}
			waitFor(t, "the stalled bodies to give their share back", func() bool {
				return httpx.HeldBodyBytes(tg.handler) == 0
			})
		})
	}
}
