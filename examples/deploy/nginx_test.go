//go:build unix

package deploy

// Unix only: nginx and the echo instances behind it are stopped with signals (SIGQUIT,
// SIGTERM), and nginx on Windows is stopped with nginx -s instead.

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
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}`

// cluster is nginx in front of three examples/echo instances, all on loopback.
type cluster struct {
	url string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		if _, err = os.Stat("/usr/sbin/nginx"); err != nil {
			t.Skip("nginx is not installed (Debian package nginx)")
		}
		nginx = "/usr/sbin/nginx"
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "echo")
	if out, err := exec.Command("go", "build", "-o", bin, "../echo").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ports := map[string]string{}
	for _, name := range []string{"A", "B", "C", "LB"} {
		ports[name] = freePort(t)
	}
	for _, inst := range []string{"a", "b", "c"} {
		addr := "127.0.0.1:" + ports[strings.ToUpper(inst)]
		cmd := exec.Command(bin, "-http", addr, "-instance", inst)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Errorf("instance %s did not stop cleanly: %v", inst, err)
			}
		})
		waitListening(t, addr)
	}
	conf, err := os.ReadFile("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer("@PREFIX@", dir, "@PORT_A@", ports["A"], "@PORT_B@", ports["B"],
		"@PORT_C@", ports["C"], "@PORT_LB@", ports["LB"])
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(r.Replace(string(conf))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT) // graceful
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx stderr:\n%s\nerror.log:\n%s", stderr.String(), log)
		}
	})
	waitListening(t, "127.0.0.1:"+ports["LB"])
	return &cluster{url: "http://127.0.0.1:" + ports["LB"] + "/mcp"}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

func waitListening(t *testing.T, addr string) {
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

// post sends one JSON-RPC message and returns the response.
func (c *cluster) post(t *testing.T, body string, header map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func modernHeaders(method, name string) map[string]string {
	return map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name}
}

func TestNginx_ModernRequestsSpreadAcrossAllInstances(t *testing.T) {
	c := startCluster(t)
	seen := map[string]int{}
	for i := range 30 {
		resp := c.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"n%d"},%s}}`, i, i, meta),
			modernHeaders("tools/call", "echo"))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`"text":"n%d"`, i)) {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		seen[resp.Header.Get("Relay-Instance")]++
	}
	if len(seen) != 3 || seen["a"] == 0 || seen["b"] == 0 || seen["c"] == 0 {
		t.Fatalf("stateless requests must reach every instance: %v", seen)
	}
}

func TestNginx_LegacySessionPinnedToItsInstance(t *testing.T) {
	c := startCluster(t)
	for round := range 3 { // three sessions, so that they start on different instances
		resp := c.post(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid, home := resp.Header.Get("Mcp-Session-Id"), resp.Header.Get("Relay-Instance")
		if resp.StatusCode != http.StatusOK || sid == "" || !strings.HasPrefix(sid, home+".") {
			t.Fatalf("round %d: initialize %d, session %q, instance %q", round, resp.StatusCode, sid, home)
		}
		h := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
		resp = c.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h)
		resp.Body.Close()
		for i := range 10 {
			resp := c.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"s"}}}`, i+1), h)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Relay-Instance") != home {
				t.Fatalf("session request %d: %d from %q (home %q): %s", i, resp.StatusCode, resp.Header.Get("Relay-Instance"), home, body)
			}
		}
	}
}

func TestNginx_SSEProgressArrivesIncrementally(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1500},`+meta+`}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range modernHeaders("tools/call", "sleep") {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	var firstProgress, final time.Time
	progress := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m struct {
			Method string
			ID     json.RawMessage
		}
		json.Unmarshal([]byte(data), &m)
		switch {
		case m.Method == "notifications/progress":
			if progress == 0 {
				firstProgress = time.Now()
			}
			progress++
		case m.ID != nil:
			final = time.Now()
		}
	}
	if progress < 3 || final.IsZero() {
		t.Fatalf("got %d progress events and final=%v", progress, !final.IsZero())
	}
	// A buffering proxy would deliver everything together at the end; streamed, the first
	// progress event comes about a second before the answer (the tool sleeps 1.5 s).
	if gap := final.Sub(firstProgress); gap < 500*time.Millisecond {
		t.Fatalf("progress arrived only %v before the answer: nginx buffered the stream", gap)
	}
}
