package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/bench/httpload"
	"github.com/relayrt/relay/internal/hosttest"
)

// BenchmarkGateway measures what `relay gateway` costs: echo round trips straight to
// examples/echo, through `relay supervise`, and through `relay gateway` with examples/echo
// as its one server ("prefix": "", so that the tool keeps its name), in the same run.
func BenchmarkGateway(b *testing.B) {
	echo := relayEcho(b)
	cli, err := relayCLI()
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"echo": map[string]any{
		"command": echo.cmd[0], "args": echo.cmd[1:], "relay": map[string]any{"prefix": ""}}}})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "gateway.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cmd  []string
	}{
		{"path=direct", echo.cmd},
		{"path=supervised", append([]string{cli, "supervise", "--quiet-child", "--"}, echo.cmd...)},
		{"path=gateway", []string{cli, "gateway", "--config", path, "--quiet-child"}},
	} {
		for _, inFlight := range []int{1, 256} {
			b.Run(c.name+"/size=64B/inflight="+strconv.Itoa(inFlight), func(b *testing.B) { benchEcho(b, c.cmd, text(64), inFlight, false) })
		}
	}
}

// BenchmarkGatewayHTTP measures `relay gateway --listen` against examples/echo served over
// Streamable HTTP directly (-http) and against TBXark/mcp-proxy (pinned in peers/tbxark),
// each of the two proxies with examples/echo as its one stdio server, in the same run. TBXark
// serves each server at a path of its own (/echo/mcp) in the initialize generation only, so
// every path is driven the way a host of that generation does: one session (initialize,
// notifications/initialized, then every tools/call with its Mcp-Session-Id, when the server
// gives one) with inflight calls outstanding, each on a keep-alive connection of its own.
//
// path=gateway-remote is `relay gateway --listen` with examples/echo, itself served over
// Streamable HTTP (-http), as a remote server ("url"): two HTTP hops, the second through
// mcp/client's HTTP transport. Each of its sub-benchmarks starts an upstream of its own.
func BenchmarkGatewayHTTP(b *testing.B) {
	echo := relayEcho(b)
	cli, err := relayCLI()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	gwConfig := filepath.Join(dir, "gateway.json")
	if err := writeJSON(gwConfig, map[string]any{"mcpServers": map[string]any{"echo": map[string]any{
		"command": echo.cmd[0], "args": echo.cmd[1:], "relay": map[string]any{"prefix": ""}}}}); err != nil {
		b.Fatal(err)
	}
	tbx, tbxSkip := tbxark()
	remoteConfig := filepath.Join(dir, "gateway-remote.json") // written by each path=gateway-remote
	for _, c := range []struct {
		name string
		path string // of the MCP endpoint
		cmd  func(addr string) []string
	}{
		{"path=direct", "/mcp", func(addr string) []string {
			return append(append([]string(nil), echo.cmd...), "-http", addr)
		}},
		{"path=gateway", "/mcp", func(addr string) []string {
			return []string{cli, "gateway", "--config", gwConfig, "--listen", addr, "--quiet-child"}
		}},
		{"path=gateway-remote", "/mcp", func(addr string) []string {
			return []string{cli, "gateway", "--config", remoteConfig, "--listen", addr}
		}},
		// TBXark names the server's tools as the server does: the tool stays "echo". Its
		// configuration holds the address it listens on.
		{"path=tbxark", "/echo/mcp", func(addr string) []string {
			cfg := filepath.Join(dir, "tbxark-"+strings.ReplaceAll(addr, ":", "-")+".json")
			if err := writeJSON(cfg, map[string]any{
				"mcpProxy": map[string]any{"baseURL": "http://" + addr, "addr": addr, "name": "mcp-proxy",
					"version": "1.0.0", "type": "streamable-http", "options": map[string]any{"logEnabled": false}},
				"mcpServers": map[string]any{"echo": map[string]any{"command": echo.cmd[0], "args": echo.cmd[1:]}},
			}); err != nil {
				b.Fatal(err)
			}
			return []string{tbx, "--config", cfg}
		}},
	} {
		for _, inFlight := range []int{1, 256} {
			b.Run(c.name+"/size=64B/inflight="+strconv.Itoa(inFlight), func(b *testing.B) {
				if c.name == "path=tbxark" && tbxSkip != "" {
					b.Skip(tbxSkip)
				}
				if c.name == "path=gateway-remote" {
					up, err := startHTTP(b.Context(), echo.cmd)
					if err != nil {
						b.Fatal(err)
					}
					defer up.stop()
					if err := writeJSON(remoteConfig, map[string]any{"mcpServers": map[string]any{"echo": map[string]any{
						"url": "http://" + up.addr + "/mcp", "relay": map[string]any{"prefix": ""}}}}); err != nil {
						b.Fatal(err)
					}
				}
				benchGatewayHTTP(b, c.cmd, c.path, inFlight)
			})
		}
	}
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// tbxark builds TBXark/mcp-proxy, at the version peers/tbxark/go.mod pins, into buildDir,
// and returns its path, or why it cannot run here.
var tbxark = sync.OnceValues(func() (string, string) {
	bin := hosttest.Exe(filepath.Join(buildDir, "mcp-proxy"))
	goTool := "go"
	if p, err := exec.LookPath("go"); err == nil {
		goTool = p
	}
	env := append(os.Environ(), "GOWORK=off")
	if out, err := run(filepath.Join("peers", "tbxark"), env, goTool, "build", "-o", bin, "github.com/TBXark/mcp-proxy"); err != nil {
		return "", fmt.Sprintf("go build github.com/TBXark/mcp-proxy in bench/peers/tbxark: %v\n%s", err, out)
	}
	return bin, ""
})

func benchGatewayHTTP(b *testing.B, cmdFor func(addr string) []string, path string, inFlight int) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	p, err := startListening(ctx, cmdFor)
	if err != nil {
		b.Fatal(err)
	}
	defer p.stop()

	c, err := httpload.New(httpload.Config{URL: "http://" + p.addr + path, Conns: inFlight, Sessions: 1, Text: httpText})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	// The port is open before the proxies have their server up (TBXark's path does not
	// exist until then, the gateway's tool neither): one checked call, retried until then.
	for deadline := time.Now().Add(30 * time.Second); ; {
		msg, err := c.Call(ctx)
		if err == nil {
			if testing.Verbose() {
				b.Logf("answer: %s", msg)
			}
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			b.Fatalf("%v%s", err, p.stderr.suffix())
		}
		time.Sleep(20 * time.Millisecond)
	}
	timedDrive(ctx, b, c, p, inFlight)
}
