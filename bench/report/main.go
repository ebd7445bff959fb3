// Command report runs Relay's side-by-side benchmarks and writes the performance table and
// chart of the README from that one run:
//
//	go run ./bench/report -rounds 3 -readme README.md -svg docs/bench.svg
//
// Each round runs every server through BenchmarkEcho, BenchmarkSleep, BenchmarkFraming and
// BenchmarkIdleInFlight once (package bench), and the sub-benchmarks of BenchmarkSupervise,
// BenchmarkGateway, BenchmarkBridge and BenchmarkHTTPEcho that the proxy paths table compares,
// so the servers alternate round by round and a slow minute of the machine does not land on
// one of them; the tables show the median of the rounds. Progress goes to stderr. Without
// -readme the tables are printed on stdout; with it, the part of the README between the lines
// <!-- bench:begin --> and <!-- bench:end --> is replaced.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	rounds := flag.Int("rounds", 3, "how many times every benchmark runs; the table shows the median")
	benchtime := flag.String("benchtime", "2s", "go test -benchtime for each benchmark of a round")
	readme := flag.String("readme", "", "replace the table between the bench markers in this file instead of printing it")
	svg := flag.String("svg", "", "also draw the chart into this SVG file")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: go run ./bench/report [flags]\n\n"+
			"Runs Relay's benchmarks against the peer SDKs and the machine's limit, round by round,\n"+
			"and writes the README's performance table (and, with -svg, its chart).\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*rounds, *benchtime, *readme, *svg); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(rounds int, benchtime, readme, svg string) error {
	if rounds < 1 {
		return errors.New("-rounds must be at least 1")
	}
	res := results{}
	started := time.Now()
	for r := 1; r <= rounds; r++ {
		for _, step := range []struct{ pattern, benchtime string }{
			{timedPattern(), benchtime},
			{"^BenchmarkSleep$", "1x"},        // one batch of 2,560 calls is the measurement
			{"^BenchmarkIdleInFlight$", "1x"}, // 10,000 and 100,000 requests parked at once
		} {
			prefix := func() string {
				return fmt.Sprintf("[round %d/%d, %s]", r, rounds, time.Since(started).Round(time.Second))
			}
			if err := goTest(step.pattern, step.benchtime, prefix, res); err != nil {
				return err
			}
		}
	}
	var out bytes.Buffer
	writeTables(&out, res, rounds, benchtime)
	if svg != "" {
		var chart bytes.Buffer
		writeChart(&chart, res)
		if err := os.WriteFile(svg, chart.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if readme == "" {
		_, err := os.Stdout.Write(out.Bytes())
		return err
	}
	return replaceBetweenMarkers(readme, out.Bytes())
}

// timedPattern is the -bench pattern of the benchmarks a round runs for -benchtime, all in one
// go test so that the servers are built once: BenchmarkEcho and BenchmarkFraming whole, and
// of the others only the sub-benchmarks proxyRows compares. Each is an alternative of its own
// (a | outside parentheses), as go test matches every alternative level by level.
func timedPattern() string {
	alts := []string{"^BenchmarkEcho$", "^BenchmarkFraming$"}
	for _, r := range proxyRows {
		for _, name := range []string{r.path, r.against} {
			if alt := exactPattern(name); !slices.Contains(alts, alt) {
				alts = append(alts, alt)
			}
		}
	}
	return strings.Join(alts, "|")
}

// exactPattern matches the benchmark name and nothing else, level by level.
func exactPattern(name string) string {
	levels := strings.Split(name, "/")
	for i, l := range levels {
		levels[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	return strings.Join(levels, "/")
}

// goTest runs one go test -bench of package bench and records every result line.
func goTest(pattern, benchtime string, prefix func() string, res results) error {
	cmd := exec.Command("go", "test", "./bench", "-run", "^$", "-bench", pattern,
		"-benchtime", benchtime, "-count", "1", "-timeout", "60m")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var tail []string // kept for the error message
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		tail = append(tail[max(0, len(tail)-20):], line)
		if name, metrics, ok := parseLine(line); ok {
			res.add(name, metrics)
			fmt.Fprintf(os.Stderr, "%s %s %s\n", prefix(), name, summary(metrics))
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("go test -bench %s: %w\n%s", pattern, err, strings.Join(tail, "\n"))
	}
	return nil
}

// benchLine matches "BenchmarkX/a=b/c=d-2   N   v unit   v unit ...".
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

func parseLine(line string) (string, map[string]float64, bool) {
	m := benchLine.FindStringSubmatch(line)
	if m == nil {
		return "", nil, false
	}
	f := strings.Fields(m[2])
	metrics := map[string]float64{}
	for i := 0; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", nil, false
		}
		metrics[f[i+1]] = v
	}
	return m[1], metrics, true
}

func summary(m map[string]float64) string {
	for _, unit := range []string{"req/s", "x-ideal", "rss-B/parked", "B/parked", "MB/s"} {
		if v, ok := m[unit]; ok {
			return fmt.Sprintf("%.4g %s", v, unit)
		}
	}
	return fmt.Sprintf("%.4g ns/op", m["ns/op"])
}

// results holds every measurement of every benchmark, by name and unit.
type results map[string]map[string][]float64

func (r results) add(name string, metrics map[string]float64) {
	if r[name] == nil {
		r[name] = map[string][]float64{}
	}
	for unit, v := range metrics {
		r[name][unit] = append(r[name][unit], v)
	}
}

// median returns the median of the named benchmark's metric, and false when it never ran.
func (r results) median(name, unit string) (float64, bool) {
	vs := slices.Clone(r[name][unit])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}

// servers are the columns of the stdio table, in order; limit is the machine's.
var servers = []struct{ key, title string }{
	{"relay", "Relay"},
	{"gosdk", "go-sdk 1.8.0"},
	{"mcpgo", "mcp-go 1.2.1"},
	{"ts", "TypeScript SDK 1.32.2"},
	{"limit", "limit"},
}

// row is one line of the stdio table.
type row struct {
	title, bench, unit string
	higherIsBetter     bool
	aim                float64 // Relay ÷ the fastest peer must be at least this (higher is better) or at most
	format             func(float64) string
	ideal              float64 // when set, the limit column: a case the limit server does not run
}

var rows = []row{
	{"64 B echo, 256 in flight (req/s)", "BenchmarkEcho/server=%s/size=64B/inflight=256", "req/s", true, 5, thousands, 0},
	{"64 KiB echo, 16 in flight (req/s)", "BenchmarkEcho/server=%s/size=64KiB/inflight=16", "req/s", true, 4, thousands, 0},
	{"64 B echo, 1 in flight: p50 latency", "BenchmarkEcho/server=%s/size=64B/inflight=1", "p50-µs", false, 0.5, micros, 0},
	{"2,560 × sleep 10 ms, 256 in flight", "BenchmarkSleep/server=%s/calls=2560/inflight=256", "ns/op", false, 0, millis,
		float64(100 * time.Millisecond)},
	{"peak RSS, 64 B echo at 256 in flight", "BenchmarkEcho/server=%s/size=64B/inflight=256", "peak-RSS-KiB", false, 0, mebibytes, 0},
}

// writeCollectorShare says what share of each Go server's CPU its collector took at 64 KiB
// (the gc-% of BenchmarkEcho, from GODEBUG=gctrace=1), the size where it weighs most, with
// Relay's CPU per request, which moves less with the machine than its throughput.
func writeCollectorShare(w io.Writer, res results) {
	const bench = "BenchmarkEcho/server=%s/size=64KiB/inflight=16"
	ofRelay := fmt.Sprintf(bench, "relay")
	relay, ok := res.median(ofRelay, "gc-%")
	if !ok {
		return
	}
	var peers []string
	for _, s := range servers {
		if v, ok := res.median(fmt.Sprintf(bench, s.key), "gc-%"); ok && s.key != "relay" && s.key != "limit" {
			peers = append(peers, fmt.Sprintf("%s %.0f %%", s.title, v))
		}
	}
	cpu := ""
	if v, ok := res.median(ofRelay, "cpu-µs/req"); ok {
		cpu = fmt.Sprintf(", %.0f µs per request", v)
	}
	fmt.Fprintf(w, "\nAt 64 KiB the garbage collector takes %.0f %% of Relay's CPU%s (marking and pauses, as `GODEBUG=gctrace=1` counts them", relay, cpu)
	if len(peers) > 0 {
		fmt.Fprintf(w, "; %s", strings.Join(peers, ", "))
	}
	fmt.Fprint(w, ").\n")
}

// value returns the row's median for a server, the ideal standing for the limit's where the
// row has one; ok is false when the server was not measured.
func (r row) value(res results, server string) (v float64, ok bool) {
	if server == "limit" && r.ideal != 0 {
		return r.ideal, true
	}
	return res.median(fmt.Sprintf(r.bench, server), r.unit)
}

func writeTables(w io.Writer, res results, rounds int, benchtime string) {
	fmt.Fprintf(w, "Measured on %s: %s. Every server in the same run, the median of %d rounds (go test -benchtime %s).\n\n",
		time.Now().UTC().Format("2006-01-02"), machine(), rounds, benchtime)
	fmt.Fprint(w, "| stdio `tools/call` |")
	for _, s := range servers {
		fmt.Fprintf(w, " %s |", s.title)
	}
	fmt.Fprint(w, " Relay ÷ fastest peer |\n|---|")
	for range servers {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprint(w, "---:|\n")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |", r.title)
		var relay, best float64
		for _, s := range servers {
			v, ok := r.value(res, s.key)
			switch {
			case s.key == "limit" && r.ideal != 0:
				fmt.Fprintf(w, " %s (ideal) |", r.format(v))
				continue
			case !ok:
				fmt.Fprint(w, " – |")
				continue
			case s.key == "relay":
				relay = v
				fmt.Fprintf(w, " **%s** |", r.format(v))
				continue
			}
			fmt.Fprintf(w, " %s |", r.format(v))
			if s.key != "limit" && (best == 0 || (r.higherIsBetter && v > best) || (!r.higherIsBetter && v < best)) {
				best = v
			}
		}
		switch {
		case relay == 0 || best == 0:
			fmt.Fprint(w, " |\n")
		case r.aim == 0:
			fmt.Fprintf(w, " %.2f× |\n", relay/best)
		case r.higherIsBetter:
			fmt.Fprintf(w, " %.2f× (aim ≥ %g×) |\n", relay/best, r.aim)
		default:
			fmt.Fprintf(w, " %.2f× (aim ≤ %g×) |\n", relay/best, r.aim)
		}
	}
	if v, ok := res.median("BenchmarkSleep/server=relay/calls=2560/inflight=256", "x-ideal"); ok {
		fmt.Fprintf(w, "\nThe 2,560 sleeps take %.2f× the ideal 100 ms on Relay (aim ≤ 1.5×).\n", v)
	}
	writeCollectorShare(w, res)

	fmt.Fprint(w, "\n| framing over a real pipe (ns per frame) | Relay's Reader | bufio.Scanner | bare read loop (the limit) | Relay ÷ limit speed |\n|---|---:|---:|---:|---:|\n")
	for _, size := range []string{"64B", "1KiB", "64KiB"} {
		get := func(reader string) (float64, bool) {
			return res.median("BenchmarkFraming/reader="+reader+"/size="+size, "ns/op")
		}
		relay, ok1 := get("relay")
		scanner, ok2 := get("scanner")
		bare, ok3 := get("bare")
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		aim := ""
		if size == "1KiB" {
			aim = " (aim ≥ 70 %)"
		}
		fmt.Fprintf(w, "| %s frames | %s | %s | %s | %.0f %%%s |\n", size, nanos(relay), nanos(scanner), nanos(bare), 100*bare/relay, aim)
	}
	// The aim, 4 KiB resident, holds at 10,000 and at 100,000 parked: both are shown in
	// bytes, as a tenth of a KiB cannot tell 4,062 from 4,147.
	const parked = "BenchmarkIdleInFlight/server=%s/parked=%d"
	idle := func(n int) string { return fmt.Sprintf(parked, "idle", n) }
	sleep := func(n int) string { return fmt.Sprintf(parked, "relay", n) }
	resident := func(name func(int) string) string {
		at100k, ok := res.median(name(100_000), "rss-B/parked")
		if !ok {
			return ""
		}
		s := thousands(at100k) + " bytes resident at 100,000"
		if at10k, ok := res.median(name(10_000), "rss-B/parked"); ok {
			s += " and " + thousands(at10k) + " at 10,000"
		}
		return s
	}
	if v, ok := res.median(idle(100_000), "B/parked"); ok {
		stack, _ := res.median(idle(100_000), "stack-B/parked")
		fmt.Fprintf(w, "\nMemory per request parked in a handler on a stdio server: %s of Go heap and stacks at 100,000 parked, of which %s of stack", bytesize(v), bytesize(stack))
		if r := resident(idle); r != "" {
			fmt.Fprintf(w, "; %s", r)
		}
		if r := resident(sleep); r != "" {
			fmt.Fprintf(w, "; an MCP tool call parked in examples/echo's sleep, %s", r)
		}
		fmt.Fprint(w, " (aim ≤ 4,096 bytes at both).\n")
	}
	fmt.Fprintln(w)
	writeProxyTable(w, res)
}

// proxyRow is one line of the proxy paths table: the throughput of one path of 64 B echo
// calls against another's, both measured in each round.
type proxyRow struct {
	title         string
	path, against string  // benchmark names
	aim           float64 // path ÷ against must be at least this; below 1 it reads as a share
}

// proxyRows are the lines of the proxy paths table, in order; timedPattern runs what they name.
var proxyRows = []proxyRow{
	{"`relay supervise` against the server direct (stdio, 256 in flight)",
		"BenchmarkSupervise/path=supervised/size=64B/inflight=256", "BenchmarkSupervise/path=direct/size=64B/inflight=256", 0.7},
	// Both at BenchmarkBridge's 16 connections, the same self-contained requests.
	{"`relay bridge` against examples/echo's own Streamable HTTP (16 connections)",
		"BenchmarkBridge/server=relay/conns=16", "BenchmarkBridge/server=direct/conns=16", 0.7},
	{"`relay gateway` against the server direct (stdio, 256 in flight)",
		"BenchmarkGateway/path=gateway/size=64B/inflight=256", "BenchmarkGateway/path=direct/size=64B/inflight=256", 0.7},
	{"Streamable HTTP: Relay against a bare net/http handler (64 connections)",
		"BenchmarkHTTPEcho/server=relay/conns=64", "BenchmarkHTTPEcho/server=bare/conns=64", 0.8},
	{"Streamable HTTP: Relay against mcp-go 1.2.1 (64 connections)",
		"BenchmarkHTTPEcho/server=relay/conns=64", "BenchmarkHTTPEcho/server=mcpgo/conns=64", 3},
}

// writeProxyTable writes the proxy paths table: each row's two medians of req/s, with the
// server's CPU per request where the benchmark reports it, and their ratio against the aim.
func writeProxyTable(w io.Writer, res results) {
	fmt.Fprint(w, "| proxy paths, 64 B echo | req/s | against (req/s) | ratio |\n|---|---:|---:|---:|\n")
	for _, r := range proxyRows {
		path, ok1 := res.median(r.path, "req/s")
		against, ok2 := res.median(r.against, "req/s")
		ratio, aim := "–", fmt.Sprintf("%.0f %%", 100*r.aim)
		if r.aim >= 1 {
			aim = fmt.Sprintf("%g×", r.aim)
		}
		switch {
		case ok1 && ok2 && against > 0 && r.aim >= 1:
			ratio = fmt.Sprintf("%.2f×", path/against)
		case ok1 && ok2 && against > 0:
			ratio = fmt.Sprintf("%.0f %%", 100*path/against)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s (aim ≥ %s) |\n", r.title, throughput(res, r.path), throughput(res, r.against), ratio, aim)
	}
}

// throughput is a benchmark's median req/s, with the server's CPU per request (cpu-µs/req)
// when the benchmark reports it, or "not measured" when it did not run or was skipped.
func throughput(res results, name string) string {
	v, ok := res.median(name, "req/s")
	if !ok {
		return "not measured"
	}
	s := thousands(v)
	if cpu, ok := res.median(name, "cpu-µs/req"); ok {
		s += fmt.Sprintf(" (CPU %.1f µs/req)", cpu)
	}
	return s
}

// machine describes the computer the benchmarks ran on.
func machine() string {
	model := "an unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	node := "no Node.js"
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		node = "Node.js " + strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%d vCPUs (%s, %s/%s), %s, %s, the load driver on the same CPUs as the server",
		runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH, runtime.Version(), node)
}

func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func micros(v float64) string { return fmt.Sprintf("%.1f µs", v) }
func millis(ns float64) string {
	return fmt.Sprintf("%s ms", thousands(ns/float64(time.Millisecond)))
}
func mebibytes(kib float64) string { return fmt.Sprintf("%.0f MiB", kib/1024) }
func bytesize(b float64) string    { return fmt.Sprintf("%.1f KiB", b/1024) }

func nanos(ns float64) string {
	if ns >= 1000 {
		return fmt.Sprintf("%.1f µs", ns/1000)
	}
	return fmt.Sprintf("%.1f ns", ns)
}

const beginMarker, endMarker = "<!-- bench:begin -->", "<!-- bench:end -->"

// replaceBetweenMarkers puts table between the marker lines of the file.
func replaceBetweenMarkers(path string, table []byte) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	start := bytes.Index(b, []byte(beginMarker))
	end := bytes.Index(b, []byte(endMarker))
	if start < 0 || end < start {
		return fmt.Errorf("%s has no %s … %s lines to replace", path, beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(b[:start+len(beginMarker)])
	out.WriteString("\n")
	out.Write(table)
	out.Write(b[end:])
	return os.WriteFile(path, out.Bytes(), 0o644)
}
