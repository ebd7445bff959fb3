//go:build race

package e2e

// raceEnabled: the tests run under -race, so the server binaries are built with -race too and
// a data race in the server fails the test through its exit status.
const raceEnabled = true
