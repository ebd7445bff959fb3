package load

import "os"

// A peakMeter reads a child's peak resident set size in KiB; each OS has one (peak_*.go).
// live reads it while the child runs and exited once the child has been waited for; each
// returns 0 where the OS does not tell it then. close releases what the meter holds.
type peakMeter interface {
	live() int64
	exited(*os.ProcessState) int64
	close()
}

// noPeak is the meter of an OS that tells nothing of a child's memory.
type noPeak struct{}

func (noPeak) live() int64                   { return 0 }
func (noPeak) exited(*os.ProcessState) int64 { return 0 }
func (noPeak) close()                        {}
