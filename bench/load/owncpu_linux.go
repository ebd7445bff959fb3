package load

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// ownCPU returns the CPU time (user and system) that process pid has used so far, without
// its children's, from /proc/<pid>/stat; zero when it cannot be read.
func ownCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields that count follow it.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64) // field 14 of proc(5)
	stime, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	const ticksPerSecond = 100                  // USER_HZ, 100 on every Linux that Go supports
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}
