package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseLine(t *testing.T) {
	name, m, ok := parseLine("BenchmarkEcho/server=relay/size=64B/inflight=256-2   \t  294678\t      9282 ns/op\t      2036 p50-µs\t    109018 req/s")
	if !ok || name != "BenchmarkEcho/server=relay/size=64B/inflight=256" || m["req/s"] != 109018 || m["p50-µs"] != 2036 || m["ns/op"] != 9282 {
		t.Fatalf("got %q %v %v", name, m, ok)
	}
	for _, line := range []string{"PASS", "ok  \tgithub.com/relayrt/relay/bench\t31.2s", "BenchmarkEcho/x-2 \t 1\t abc ns/op", "goos: linux"} {
		if _, _, ok := parseLine(line); ok {
			t.Errorf("parseLine(%q) took it for a result", line)
		}
	}
}

// The table shows medians, Relay in bold, and Relay against the best peer in the right
// direction: throughput divided by the highest peer's, latency by the lowest peer's.
func TestWriteTables(t *testing.T) {
	res := results{}
	echo := "BenchmarkEcho/server=%s/size=64B/inflight=256"
	for _, round := range []map[string]float64{{"relay": 100_000, "ts": 20_000, "gosdk": 5_000}, {"relay": 120_000, "ts": 30_000, "gosdk": 4_000}, {"relay": 110_000, "ts": 25_000, "gosdk": 6_000}} {
		for server, v := range round {
			res.add(strings.Replace(echo, "%s", server, 1), map[string]float64{"req/s": v})
		}
	}
	lat := "BenchmarkEcho/server=%s/size=64B/inflight=1"
	res.add(strings.Replace(lat, "%s", "relay", 1), map[string]float64{"p50-µs": 20})
	res.add(strings.Replace(lat, "%s", "ts", 1), map[string]float64{"p50-µs": 50})
	res.add(strings.Replace(lat, "%s", "gosdk", 1), map[string]float64{"p50-µs": 80})
	res.add("BenchmarkIdleInFlight/server=idle/parked=100000", map[string]float64{"B/parked": 3686, "stack-B/parked": 2253, "rss-B/parked": 3789})
	res.add("BenchmarkIdleInFlight/server=idle/parked=10000", map[string]float64{"B/parked": 3700, "stack-B/parked": 2260, "rss-B/parked": 3850})
	res.add("BenchmarkIdleInFlight/server=relay/parked=100000", map[string]float64{"rss-B/parked": 4062})
	res.add("BenchmarkIdleInFlight/server=relay/parked=10000", map[string]float64{"rss-B/parked": 4275})
	big := "BenchmarkEcho/server=%s/size=64KiB/inflight=16"
	res.add(strings.Replace(big, "%s", "relay", 1), map[string]float64{"req/s": 6000, "gc-%": 22.4, "cpu-µs/req": 144.2})
	res.add(strings.Replace(big, "%s", "gosdk", 1), map[string]float64{"req/s": 400, "gc-%": 15.7})
	res.add(strings.Replace(big, "%s", "ts", 1), map[string]float64{"req/s": 2000})
	var out bytes.Buffer
	writeTables(&out, res, 3, "1s")
	text := out.String()
	hasLines(t, text,
		"| 64 B echo, 256 in flight (req/s) | **110,000** | 5,000 | – | 25,000 | – | 4.40× (aim ≥ 5×) |",
		"| 64 KiB echo, 16 in flight (req/s) | **6,000** | 400 | – | 2,000 | – | 3.00× (aim ≥ 4×) |",
		"At 64 KiB the garbage collector takes 22 % of Relay's CPU, 144 µs per request (marking and pauses, as `GODEBUG=gctrace=1` counts them; go-sdk 1.8.0 16 %).",
		"| 64 B echo, 1 in flight: p50 latency | **20.0 µs** | 80.0 µs | – | 50.0 µs | – | 0.40× (aim ≤ 0.5×) |",
		"Memory per request parked in a handler on a stdio server: 3.6 KiB of Go heap and stacks at 100,000 parked, of which 2.2 KiB of stack; 3,789 bytes resident at 100,000 and 3,850 at 10,000; an MCP tool call parked in examples/echo's sleep, 4,062 bytes resident at 100,000 and 4,275 at 10,000 (aim ≤ 4,096 bytes at both).",
	)
	res.add(strings.Replace(echo, "%s", "limit", 1), map[string]float64{"req/s": 500_000})
	var chart bytes.Buffer
	writeChart(&chart, res)
	if !strings.HasPrefix(chart.String(), "<svg") || !strings.Contains(chart.String(), "110,000 (22 %)") {
		t.Errorf("chart: %.300s", chart.String())
	}
}

// FuzzParseLine: any line of go test output is read without panicking, and a result it
// takes has a benchmark name and numbers only.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"BenchmarkEcho/server=relay/size=64B/inflight=256-2   \t  294678\t      9282 ns/op\t    109018 req/s",
		"BenchmarkIdleInFlight/server=idle/parked=100000-2 1 7333974073 ns/op 3642 B/parked 12.95 objects/parked 3737 rss-B/parked 2200 stack-B/parked",
		"PASS", "ok  \tgithub.com/relayrt/relay/bench\t31.2s", "Benchmark 1 x", "BenchmarkX-2 1 NaN ns/op",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		name, metrics, ok := parseLine(line)
		if ok && (!strings.HasPrefix(name, "Benchmark") || metrics == nil) {
			t.Fatalf("parseLine(%q) = %q, %v", line, name, metrics)
		}
	})
}

// A line of `go test ./bench -run '^$' -bench 'Supervise$' -benchtime 100ms` (2026-12-02): the
// unit cpu-µs/req is read as it is written, µ and all.
func TestParseLineSupervise(t *testing.T) {
	name, m, ok := parseLine("BenchmarkSupervise/path=supervised/size=64B/inflight=256-2     \t   10000\t     14692 ns/op\t        12.70 cpu-µs/req\t      3245 p50-µs\t      8496 p99-µs\t     26072 peak-RSS-KiB\t     68327 req/s")
	if !ok || name != proxyRows[0].path || m["req/s"] != 68327 || m["cpu-µs/req"] != 12.70 || m["peak-RSS-KiB"] != 26072 {
		t.Fatalf("got %q %v %v", name, m, ok)
	}
}

// The proxy paths table: medians of req/s on both sides, CPU per request where the benchmark
// reports it, the ratio as a share or a multiple like its aim, and "not measured" for a side
// that never ran.
func TestWriteProxyTable(t *testing.T) {
	res := results{}
	for _, round := range []struct{ direct, supervised, directCPU, supervisedCPU float64 }{
		{100_000, 60_000, 5.0, 12.0}, {120_000, 66_000, 5.4, 12.6}, {110_000, 90_000, 5.2, 12.2},
	} {
		res.add(proxyRows[0].against, map[string]float64{"req/s": round.direct, "cpu-µs/req": round.directCPU})
		res.add(proxyRows[0].path, map[string]float64{"req/s": round.supervised, "cpu-µs/req": round.supervisedCPU})
	}
	res.add("BenchmarkHTTPEcho/server=relay/conns=64", map[string]float64{"req/s": 14_000})
	res.add("BenchmarkHTTPEcho/server=bare/conns=64", map[string]float64{"req/s": 20_000})
	res.add("BenchmarkHTTPEcho/server=mcpgo/conns=64", map[string]float64{"req/s": 6_500})
	res.add("BenchmarkGateway/path=direct/size=64B/inflight=256", map[string]float64{"req/s": 89_000, "cpu-µs/req": 5.1})
	// The bridge's rows ran on one side only, and the gateway's path not at all.
	res.add("BenchmarkBridge/server=relay/conns=16", map[string]float64{"req/s": 7_500})

	var out bytes.Buffer
	writeTables(&out, res, 3, "2s")
	text := out.String()
	hasLines(t, text,
		"| proxy paths, 64 B echo | req/s | against (req/s) | ratio |\n|---|---:|---:|---:|\n",
		"| `relay supervise` against the server direct (stdio, 256 in flight) | 66,000 (CPU 12.2 µs/req) | 110,000 (CPU 5.2 µs/req) | 60 % (aim ≥ 70 %) |",
		"| `relay bridge` against examples/echo's own Streamable HTTP (16 connections) | 7,500 | not measured | – (aim ≥ 70 %) |",
		"| `relay gateway` against the server direct (stdio, 256 in flight) | not measured | 89,000 (CPU 5.1 µs/req) | – (aim ≥ 70 %) |",
		"| Streamable HTTP: Relay against a bare net/http handler (64 connections) | 14,000 | 20,000 | 70 % (aim ≥ 80 %) |",
		"| Streamable HTTP: Relay against mcp-go 1.2.1 (64 connections) | 14,000 | 6,500 | 2.15× (aim ≥ 3×) |",
	)
}

// One go test runs the stdio tables' benchmarks whole and, of the others, exactly the
// sub-benchmarks the proxy paths table compares, each once.
func TestTimedPattern(t *testing.T) {
	got := timedPattern()
	want := "^BenchmarkEcho$|^BenchmarkFraming$" +
		"|^BenchmarkSupervise$/^path=supervised$/^size=64B$/^inflight=256$|^BenchmarkSupervise$/^path=direct$/^size=64B$/^inflight=256$" +
		"|^BenchmarkBridge$/^server=relay$/^conns=16$|^BenchmarkBridge$/^server=direct$/^conns=16$" +
		"|^BenchmarkGateway$/^path=gateway$/^size=64B$/^inflight=256$|^BenchmarkGateway$/^path=direct$/^size=64B$/^inflight=256$" +
		"|^BenchmarkHTTPEcho$/^server=relay$/^conns=64$|^BenchmarkHTTPEcho$/^server=bare$/^conns=64$|^BenchmarkHTTPEcho$/^server=mcpgo$/^conns=64$"
	if got != want {
		t.Errorf("timedPattern() =\n%s\nwant\n%s", got, want)
	}
}

// hasLines fails t for each of want that text lacks.
func hasLines(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the table lacks\n%s\ngot:\n%s", w, text)
		}
	}
}
