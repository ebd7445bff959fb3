package bench

import (
	"os"
	"strconv"
	"strings"
)

// vmRSS returns the resident set size of process pid in bytes, from /proc/PID/status.
func vmRSS(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, false
			}
			kib, err := strconv.ParseInt(f[0], 10, 64)
			return kib << 10, err == nil
		}
	}
	return 0, false
}
