package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/relayrt/relay/bench/load"
)

const benchUsage = `Usage: relay bench [flags] -- CMD [ARGS...]
       relay bench framing [--duration D]

Measures a stdio MCP server: starts CMD, detects its protocol generation (server/discover
first, initialize otherwise), keeps a window of tools/call requests in flight, and prints
requests per second, latency percentiles, the server's peak RSS and errors, for each window.
With --vs, a second server is measured round by round against the first, and the ratio of
their throughputs printed.

"relay bench framing" measures Relay's frame reader alone over a real pipe, against a bare
read loop. --svg FILE draws throughput and p50 latency per window, one series per server.

Flags:
`

// benchRow is one measured round.
type benchRow struct {
	Server     string  `json:"server"`
	InFlight   int     `json:"inflight"`
	Round      int     `json:"round"`
	Protocol   string  `json:"protocol"`
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	PerSecond  float64 `json:"reqPerSec"`
	P50us      float64 `json:"p50us"`
	P90us      float64 `json:"p90us"`
	P99us      float64 `json:"p99us"`
	MaxUs      float64 `json:"maxUs"`
	PeakRSSKiB int64   `json:"peakRssKiB"`
}

func runBench(args []string) int {
	if len(args) > 0 && args[0] == "framing" {
		return runBenchFraming(args[1:])
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), benchUsage); fs.PrintDefaults() }
	tool := fs.String("tool", "echo", "the tool every request calls")
	toolArgs := fs.String("args", `{"text":"hello"}`, "the tool's arguments, a JSON object")
	windows := fs.String("inflight", "1,16,256", "comma-separated numbers of requests kept in flight")
	duration := fs.Duration("duration", 5*time.Second, "how long each round sends")
	rounds := fs.Int("rounds", 1, "rounds per window (with --vs the servers alternate round by round)")
	vs := fs.String("vs", "", "a second server command to compare with, as one string (split on spaces)")
	asJSON := fs.Bool("json", false, "print one JSON object per round instead of a table")
	svg := fs.String("svg", "", "also draw throughput and p50 latency per window into this SVG file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(fs.Args()) == 0 {
		fmt.Fprintln(os.Stderr, "relay bench: no server command; put it after --, e.g. relay bench -- ./server")
		return 2
	}
	if !json.Valid([]byte(*toolArgs)) {
		fmt.Fprintf(os.Stderr, "relay bench: -args %q is not JSON\n", *toolArgs)
		return 2
	}
	var inflight []int
	for _, w := range strings.Split(*windows, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "relay bench: -inflight %q: want numbers ≥ 1, e.g. 1,16,256\n", *windows)
			return 2
		}
		inflight = append(inflight, n)
	}
	servers := []struct {
		name string
		cmd  []string
	}{{"a", fs.Args()}}
	if *vs != "" {
		servers = append(servers, struct {
			name string
			cmd  []string
		}{"b", strings.Fields(*vs)})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	out := os.Stdout
	progress := isTerminal(os.Stderr) && !*asJSON
	if !*asJSON {
		for _, s := range servers {
			fmt.Fprintf(out, "server %s: %s\n", s.name, strings.Join(s.cmd, " "))
		}
		fmt.Fprintf(out, "\n%-6s %8s %5s %10s %12s %10s %10s %10s %10s %10s %8s\n",
			"server", "inflight", "round", "protocol", "req/s", "p50", "p90", "p99", "max", "peak RSS", "errors")
	}
	failed := false
	var all []benchRow
	for _, n := range inflight {
		perServer := map[string][]float64{}
		for round := 1; round <= *rounds; round++ {
			for _, s := range servers {
				if progress {
					fmt.Fprintf(os.Stderr, "\r%s inflight=%d round %d/%d … ", s.name, n, round, *rounds)
				}
				row, err := benchRound(ctx, s.cmd, *tool, json.RawMessage(*toolArgs), n, *duration)
				row.Server, row.Round = s.name, round
				if progress {
					fmt.Fprint(os.Stderr, "\r\033[K")
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "relay bench: server %s, inflight %d: %v\n", s.name, n, err)
					failed = true
					continue
				}
				perServer[s.name] = append(perServer[s.name], row.PerSecond)
				all = append(all, row)
				printRow(out, row, *asJSON)
			}
		}
		if len(servers) == 2 && !*asJSON && len(perServer["a"]) > 0 && len(perServer["b"]) > 0 {
			fmt.Fprintf(out, "%-6s %8d  a/b throughput: %.2f×\n", "ratio", n, mean(perServer["a"])/mean(perServer["b"]))
		}
		if ctx.Err() != nil {
			break
		}
	}
	if *svg != "" && len(all) > 0 {
		f, err := os.Create(*svg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay bench:", err)
			return 1
		}
		names := map[string]string{}
		for _, s := range servers {
			names[s.name] = strings.Join(s.cmd, " ")
		}
		writeSVG(f, all, names)
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "relay bench:", err)
			return 1
		}
	}
	if failed {
		return 1
	}
	return 0
}

func benchRound(ctx context.Context, cmd []string, tool string, args json.RawMessage, inflight int, d time.Duration) (benchRow, error) {
	s, err := load.Start(ctx, load.Config{Command: cmd, Tool: tool, Args: args, InFlight: inflight, Stderr: io.Discard})
	if err != nil {
		return benchRow{}, err
	}
	res, err := s.Drive(ctx, 0, d)
	s.Stop()
	if err != nil {
		return benchRow{}, err
	}
	us := func(p float64) float64 { return float64(res.Percentile(p)) / float64(time.Microsecond) }
	return benchRow{InFlight: inflight, Protocol: res.Protocol, Requests: res.Requests, Errors: res.Errors,
		PerSecond: res.PerSecond(), P50us: us(50), P90us: us(90), P99us: us(99), MaxUs: us(100),
		PeakRSSKiB: s.PeakRSSKiB()}, nil // after Stop: macOS and the BSDs tell it only once the server has exited
}

func printRow(w io.Writer, r benchRow, asJSON bool) {
	if asJSON {
		json.NewEncoder(w).Encode(r)
		return
	}
	fmt.Fprintf(w, "%-6s %8d %5d %10s %12.0f %10s %10s %10s %10s %7d KiB %8d\n", r.Server, r.InFlight, r.Round,
		r.Protocol, r.PerSecond, usString(r.P50us), usString(r.P90us), usString(r.P99us), usString(r.MaxUs), r.PeakRSSKiB, r.Errors)
}

func usString(us float64) string {
	return (time.Duration(us * float64(time.Microsecond))).Round(time.Microsecond).String()
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// isTerminal reports whether f is a character device (a terminal), to decide on progress
// lines.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
