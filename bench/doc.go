// Package bench holds Relay's side-by-side benchmarks: the same stdio MCP
// echo server written on Relay and on peer SDKs, driven by package
// [github.com/relayrt/relay/bench/load]. The peers live in the separate
// module under peers/, so the main module never depends on them. See
// README.md for how to run the benchmarks and compare results.
package bench
