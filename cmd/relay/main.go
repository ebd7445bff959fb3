// Command relay is Relay's command line: `relay supervise` runs a stdio server as a
// self-healing child behind a transparent proxy; `relay bridge` serves one over Streamable
// HTTP from a pool of supervised children; `relay gateway` serves many servers as one;
// `relay replay` turns a recording of either
// (--record) into a regression test or a mock server.
//
//	relay supervise [flags] -- CMD ARGS...
//	relay bridge [--listen ADDR] [--pool N] [flags] -- CMD ARGS...
//	relay gateway --config FILE [--listen ADDR] [flags]
//	relay replay [flags] FILE -- CMD ARGS...
//	relay replay --serve FILE
//
// Run `relay help` or `relay supervise --help` for the flags.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/relayrt/relay/supervise"
)

const usage = `relay — Relay's command line

Usage:
  relay supervise [flags] -- CMD [ARGS...]   run a stdio server as a self-healing child
  relay bridge [flags] -- CMD [ARGS...]      serve a stdio server over Streamable HTTP
  relay gateway --config FILE [flags]        serve many MCP servers as one (stdio or HTTP)
  relay bench [flags] -- CMD [ARGS...]       measure a stdio server's throughput and latency
  relay replay [flags] FILE -- CMD [ARGS...] replay a recorded session to a server, diff its answers
  relay replay --serve FILE                  act as the recorded server for a host
  relay help                                 show this help

Run "relay COMMAND --help" for a command's flags.
`

func main() {
	// relay guards the children it supervises: a copy of it runs as each child's guard.
	supervise.GuardMain()
	if path := os.Getenv("RELAY_CPUPROFILE"); path != "" { // for profiling Relay itself
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
		}
	}
	code := run()
	pprof.StopCPUProfile() // a no-op unless profiling
	// What Relay allocated, and where: for profiling Relay itself.
	if path := os.Getenv("RELAY_MEMPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	os.Exit(code)
}

func run() int {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	switch os.Args[1] {
	case "supervise":
		return runSupervise(os.Args[2:])
	case "bridge":
		return runBridge(os.Args[2:])
	case "gateway":
		return runGateway(os.Args[2:])
	case "bench":
		return runBench(os.Args[2:])
	case "replay":
		return runReplay(os.Args[2:])
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "relay: unknown command %q\n\n%s", os.Args[1], usage)
	return 2
}
