package bench

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/relayrt/relay/internal/hosttest"
)

// relayCLI builds cmd/relay once, next to the echo servers.
var relayCLI = sync.OnceValues(func() (string, error) {
	bin := hosttest.Exe(filepath.Join(buildDir, "relay-cli"))
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = "go"
	}
	if out, err := run("..", nil, gobin, "build", "-o", bin, "./cmd/relay"); err != nil {
		return "", fmt.Errorf("go build ./cmd/relay: %v\n%s", err, out)
	}
	return bin, nil
})

// BenchmarkSupervise measures what `relay supervise` costs: echo round trips straight to
// examples/echo and through the supervising proxy, in the same run (aim: the proxy keeps at
// least 70 % of the direct throughput).
func BenchmarkSupervise(b *testing.B) {
	echo := relayEcho(b)
	cli, err := relayCLI()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cmd  []string
	}{
		{"path=direct", echo.cmd},
		{"path=supervised", append([]string{cli, "supervise", "--"}, echo.cmd...)},
	} {
		b.Run(c.name+"/size=64B/inflight=256", func(b *testing.B) { benchEcho(b, c.cmd, text(64), 256, false) })
	}
}
