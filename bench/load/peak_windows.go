package load

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// newPeakMeter puts the child in a job object of its own, whose PeakProcessMemoryUsed (the
// peak commit of any process in it, in bytes) can be read while the child runs and after.
func newPeakMeter(p *os.Process) peakMeter {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return noPeak{}
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err == nil {
		err = windows.AssignProcessToJobObject(job, h)
		windows.CloseHandle(h)
	}
	if err != nil {
		windows.CloseHandle(job)
		return noPeak{}
	}
	return jobPeak(job)
}

type jobPeak windows.Handle

func (j jobPeak) live() int64 {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	if windows.QueryInformationJobObject(windows.Handle(j), windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil) != nil {
		return 0
	}
	return int64(info.PeakProcessMemoryUsed >> 10)
}

func (j jobPeak) exited(*os.ProcessState) int64 { return j.live() }
func (j jobPeak) close()                        { windows.CloseHandle(windows.Handle(j)) }
