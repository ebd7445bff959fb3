//go:build !race

package stdio_test

// parkedCount is how many requests TestParkedRequests_NewOneAnsweredWhileAllStayParked parks:
// 100,000 without the race detector, the count a stdio server must take as normal load.
const parkedCount = 100_000
