//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package load

import (
	"os"
	"runtime"
	"syscall"
)

// newPeakMeter reads ru_maxrss from the exited child's rusage: bytes on macOS, KiB on the BSDs.
func newPeakMeter(*os.Process) peakMeter { return rusagePeak{} }

type rusagePeak struct{ noPeak }

func (rusagePeak) exited(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss) >> 10
	}
	return int64(ru.Maxrss)
}
