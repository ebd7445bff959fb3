//go:build race

package stdio_test

// parkedCount under the race detector, which keeps shadow memory for every goroutine and
// stack: 100,000 parked requests took it a minute and 5.4 GB on a two-core machine, too much
// for CI, so the race build parks 10,000 (about 4 s and 460 MB there) and the 100,000 run in
// the build without -race (admission_norace_test.go).
const parkedCount = 10_000
