package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
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
			b.Run(c.name+"/size=64B/inflight="+strconv.Itoa(inFlight), func(b *testing.B) { benchEcho(b, c.cmd, text(64), inFlight) })
		}
	}
}
