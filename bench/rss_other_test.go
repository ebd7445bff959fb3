//go:build !linux

package bench

// vmRSS is Linux-only (/proc/PID/status): elsewhere BenchmarkIdleInFlight reports no
// rss-B/parked.
func vmRSS(int) (int64, bool) { return 0, false }
