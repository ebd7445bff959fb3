// Command relay is Relay's command line: `relay supervise` runs a stdio server as a
// self-healing child behind a transparent proxy; `relay bridge` serves one over Streamable
// HTTP from a pool of supervised children.
//
//	relay supervise [flags] -- CMD ARGS...
//	relay bridge [--listen ADDR] [--pool N] [flags] -- CMD ARGS...
//
// Run `relay help` or `relay supervise --help` for the flags.
package main

import (
	"fmt"
	"os"
)

const usage = `relay — Relay's command line

Usage:
  relay supervise [flags] -- CMD [ARGS...]   run a stdio server as a self-healing child
  relay bridge [flags] -- CMD [ARGS...]      serve a stdio server over Streamable HTTP
  relay help                                 show this help

Run "relay supervise --help" or "relay bridge --help" for their flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "supervise":
		os.Exit(runSupervise(os.Args[2:]))
	case "bridge":
		os.Exit(runBridge(os.Args[2:]))
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "relay: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}
