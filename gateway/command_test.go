package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp/client"
)

// writeConfig writes a host configuration to a file of the test's.
func writeConfig(t *testing.T, cfg []byte) string {
	path := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// `relay gateway --config FILE` as a host runs it: one stdio server, the two upstreams'
// tools behind it, both generations.
func TestRelayGateway_OneStdioServerForTheHost(t *testing.T) {
	path := writeConfig(t, config(entry("echo", echoBin(t), ""), entry("everything", everythingBin(t), `"relay": {"prefix": "ev"}`)))
	for _, gen := range generations {
		t.Run(gen.name, func(t *testing.T) {
			tr := client.Command(relayBin(t), "gateway", "--config", path, "--quiet-child")
			c := connect(t, tr, gen.opts...)
			if names := toolNames(t, c); !slices.Contains(names, "echo__echo") || !slices.Contains(names, "ev__test_simple_text") {
				t.Errorf("tools/list: %v", names)
			}
			r, err := c.CallTool(context.Background(), "echo__echo", map[string]string{"text": "stdio"})
			if err != nil || text(r) != "stdio" {
				t.Errorf("echo__echo: %q %v", text(r), err)
			}
		})
	}
}

// A configuration the gateway cannot use is refused before anything starts, with exit
// status 2 and an error that names the bad key.
func TestRelayGateway_RefusesABadConfig(t *testing.T) {
	path := writeConfig(t, config(entry("echo", "echo", `"relay": {"prefix": "e", "tols": {}}`)))
	out, err := exec.Command(relayBin(t), "gateway", "--config", path).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), `"tols"`) {
		t.Errorf("exit %v, output %q; want status 2 and the bad key named", err, out)
	}
}

// `relay gateway --listen`: Streamable HTTP on /mcp, /readyz ready once the upstreams
// have started, `relay gateway --status` reading the state of its servers, and a graceful
// end on SIGTERM.
func TestRelayGateway_ListenServesHTTPWithReadyz(t *testing.T) {
	path := writeConfig(t, config(entry("echo", echoBin(t), "")))
	cmd := exec.Command(relayBin(t), "gateway", "--config", path, "--listen", "127.0.0.1:0", "--quiet-child")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var base string
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "serving MCP on "); ok {
			base = strings.TrimSuffix(strings.Fields(rest)[0], "/mcp")
			break
		}
	}
	drained := make(chan struct{})
	go func() { // reads the rest of stderr until relay exits
		defer close(drained)
		for lines.Scan() {
		}
	}()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-drained
		if err := cmd.Wait(); err != nil {
			t.Errorf("relay gateway after SIGTERM: %v", err)
		}
	}()
	if base == "" {
		t.Fatal("relay gateway never said where it serves")
	}
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %d, want 200 once the upstreams have started", resp.StatusCode)
	}
	// relay gateway --status reads the gateway's status resource.
	out, err := exec.Command(relayBin(t), "gateway", "--status", base+"/mcp").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SERVER") || !strings.Contains(string(out), "echo") || !strings.Contains(string(out), "up") {
		t.Errorf("relay gateway --status: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.HTTP(base+"/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.CallTool(ctx, "echo__echo", map[string]string{"text": "http"})
	if err != nil || text(r) != "http" {
		t.Errorf("echo__echo over HTTP: %q %v", text(r), err)
	}
}
