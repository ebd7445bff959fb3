// Command echo is a stdio MCP server with two tools, used by Relay's tests and benchmarks:
// echo returns its text, and sleep waits (reporting progress when asked) until its time is up
// or the request is cancelled.
//
// -state-key-file PATH, or $RELAY_STATE_KEY, gives the key that signs the requestState of
// 2026-07-28 input_required results (at least 32 bytes; see package internal/statekey), the
// same for every instance behind a load balancer (-http). -redis URL, or $RELAY_REDIS_URL,
// makes it a member of a fleet on that Redis (see package internal/fleetflag).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/fleetflag"
	"github.com/relayrt/relay/internal/statekey"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/stdio"
	"github.com/relayrt/relay/telemetry"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

type sleepArgs struct {
	MS int `json:"ms" jsonschema:"how long to sleep, in milliseconds"`
}

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:8080, endpoint /mcp) instead of stdio")
	instance := flag.String("instance", "", "with -http: this instance's name behind a load balancer (see examples/deploy)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to this file (for benchmarking Relay itself)")
	memprofile := flag.String("memprofile", "", "write a heap profile (allocations by place) to this file when the input ends (for benchmarking Relay itself)")
	traceFile := flag.String("trace", "", "write an execution trace to this file (go tool trace; for benchmarking Relay itself)")
	stateKey := statekey.AddFlag(flag.CommandLine, "with -http, give every instance behind a load balancer the same key")
	redis := fleetflag.AddFlag(flag.CommandLine, "with -http")
	flag.Parse()
	key, err := stateKey.Key()
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(2)
	}
	member, err := redis.Join(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(2)
	}
	defer member.Close()
	o := &mcp.ServerOptions{StateKey: key}
	member.Server(o)
	s := mcp.NewServer(mcp.Implementation{Name: "relay-echo", Version: "1.0.0"}, o)
	safe := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}

	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return the text unchanged.", Annotations: safe},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, error) {
			return mcp.TextResult(in.Text), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleep for ms milliseconds.", Annotations: safe},
		func(ctx context.Context, req *mcp.CallToolRequest, in sleepArgs) (*mcp.CallToolResult, error) {
			if req.ProgressToken() != nil {
				return sleepReporting(ctx, req, in.MS)
			}
			// Only the wait itself here, so that a call that waits keeps a small stack.
			done := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
			defer done.Stop()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-done.C:
				return slept(in.MS), nil
			}
		})

	if *cpuprofile != "" {
		pprof.StartCPUProfile(createOrExit(*cpuprofile))
		defer pprof.StopCPUProfile()
	}
	if *memprofile != "" {
		f := createOrExit(*memprofile)
		defer func() { pprof.Lookup("allocs").WriteTo(f, 0); f.Close() }()
	}
	if *traceFile != "" {
		trace.Start(createOrExit(*traceFile))
		defer trace.Stop()
	}
	// OpenTelemetry, when the OTEL_* variables ask for it (see package telemetry).
	tel, err := telemetry.FromEnv(context.Background(), "relay-echo")
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	defer tel.Shutdown(context.Background())
	if *addr != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		opts := &httpx.MCPOptions{Instance: *instance, Runtime: []runtime.Option{tel.Option(telemetry.MCP)}}
		member.Handler(opts)
		h := httpx.NewMCPHandler(s, opts)
		defer h.Close()
		err = httpx.ListenAndServe(ctx, *addr, h, nil)
	} else {
		err = stdio.ServeStdio(context.Background(), s.Runtime(tel.Option(telemetry.MCP)))
	}
	if err != nil {
		tel.Shutdown(context.Background())
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

// sleepReporting is the sleep tool for a request that asked for progress: it reports it every
// tenth of the time.
func sleepReporting(ctx context.Context, req *mcp.CallToolRequest, ms int) (*mcp.CallToolResult, error) {
	total := time.Duration(ms) * time.Millisecond
	done := time.NewTimer(total)
	defer done.Stop()
	tick := time.NewTicker(max(total/10, time.Millisecond))
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-done.C:
			return slept(ms), nil
		case <-tick.C:
			elapsed := min(time.Since(start).Milliseconds(), int64(ms)) // never past the total
			req.Progress(float64(elapsed), float64(ms), "sleeping")
		}
	}
}

func slept(ms int) *mcp.CallToolResult { return mcp.TextResult(fmt.Sprintf("slept %d ms", ms)) }

// createOrExit creates the file a profiling flag names, or ends the program saying why.
func createOrExit(path string) *os.File {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	return f
}
