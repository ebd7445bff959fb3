//go:build unix

package fleet

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/proc"
)

// TestFleetScript runs ../fleet.sh as a user would (with this test binary's build of
// examples/everything and free ports): it prints the URL, behind which requests go round the
// three instances, a session's included; on Ctrl-C (SIGINT) it stops redis-server, the
// instances and nginx, and exits, leaving no process behind.
func TestFleetScript(t *testing.T) {
	requireRedis(t)
	if _, err := exec.LookPath("nginx"); err != nil {
		if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
			t.Skip("nginx is not installed (Debian package nginx)")
		}
	}
	ctx := ctxFor(t, 2*time.Minute)
	cmd := exec.Command("bash", "../fleet.sh")
	cmd.Env = append(os.Environ(), "RELAY_FLEET_EVERYTHING="+everythingBin(t),
		"RELAY_FLEET_PORT="+freePort(t), "RELAY_FLEET_REDIS_PORT="+freePort(t),
		"RELAY_FLEET_PORT_A="+freePort(t), "RELAY_FLEET_PORT_B="+freePort(t), "RELAY_FLEET_PORT_C="+freePort(t))
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			t.Log(sc.Text())
			if url, ok := strings.CutPrefix(sc.Text(), "fleet.sh: serving MCP on "); ok {
				urls <- strings.Fields(url)[0]
			}
		}
		exited <- cmd.Wait()
	}()
	stopped := false
	t.Cleanup(func() { // the test failed before it stopped the script
		if !stopped {
			cmd.Process.Signal(syscall.SIGTERM)
			<-exited
		}
	})
	var url string
	select {
	case url = <-urls:
	case err := <-exited:
		t.Fatalf("fleet.sh exited before serving: %v\n%s", err, stderr.String())
	case <-ctx.Done():
		t.Fatalf("fleet.sh printed no URL\n%s", stderr.String())
	}
	children := proc.Children(cmd.Process.Pid)

	sid := rawSession(ctx, t, url)
	seen := map[string]bool{}
	for i := range 6 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`, i+1)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("call %d of the session: %s", i, res.Status)
		}
		seen[res.Header.Get("Relay-Instance")] = true
	}
	if !seen["a"] || !seen["b"] || !seen["c"] {
		t.Errorf("one session's calls were served by %v: want a, b and c", seen)
	}
	http.DefaultClient.CloseIdleConnections()

	cmd.Process.Signal(syscall.SIGINT) // Ctrl-C
	select {
	case <-exited:
		stopped = true
	case <-time.After(30 * time.Second):
		t.Fatalf("fleet.sh still runs 30 s after SIGINT\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "fleet.sh: stopped") {
		t.Errorf("fleet.sh did not say it stopped:\n%s", stderr.String())
	}
	if runtime.GOOS != "linux" {
		return // the processes are read from /proc
	}
	if len(children) < 5 {
		t.Errorf("fleet.sh ran %d processes, want redis-server, three instances and nginx: %+v", len(children), children)
	}
	for _, c := range children {
		if st, ok := proc.Read(c.PID); ok && st.Alive() && st.Start == c.Start {
			t.Errorf("%s (pid %d) still runs after fleet.sh stopped", c.Comm, c.PID)
		}
	}
}
