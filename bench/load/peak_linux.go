package load

import (
	"os"
	"strconv"
	"strings"
)

// newPeakMeter reads VmHWM from /proc/<pid>/status while the child runs.
func newPeakMeter(p *os.Process) peakMeter { return procPeak(p.Pid) }

type procPeak int

// live returns VmHWM, or zero when the file or the line is missing.
func (pid procPeak) live() int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.ParseInt(f[0], 10, 64)
			return n
		}
	}
	return 0
}

func (procPeak) exited(*os.ProcessState) int64 { return 0 }
func (procPeak) close()                        {}
