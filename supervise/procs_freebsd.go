package supervise

import (
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FreeBSD has a real reaper: a guard acquires it (procctl PROC_REAP_ACQUIRE), every
// orphaned descendant of the child is re-parented to it, and PROC_REAP_KILL kills them all,
// found or not. Without a guard only the child's process group is reached.

var portable bool // nothing Linux-only to switch off here

// procctl(2) commands and flags (sys/procctl.h); golang.org/x/sys has only SYS_PROCCTL.
const (
	pPID            = 0 // idtype_t P_PID
	procReapAcquire = 2
	procReapKill    = 6
)

// reaperKillArgs is struct procctl_reaper_kill.
type reaperKillArgs struct {
	sig     int32
	flags   uint32
	subtree int32
	killed  uint32
	fpid    int32
	pad     [15]uint32
}

var reaper atomic.Bool

func procctl(cmd int, data unsafe.Pointer) error {
	_, _, errno := unix.Syscall6(unix.SYS_PROCCTL, pPID, uintptr(os.Getpid()), uintptr(cmd), uintptr(data), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// becomeReaper makes a guard the reaper of its child's family; it then reaps, with wait4,
// whatever it adopts. A supervisor without guards stays no reaper: it would adopt orphans
// that nothing here finds to reap.
func becomeReaper() {
	if os.Getenv(guardEnv) == "" {
		return
	}
	if procctl(procReapAcquire, nil) == nil {
		reaper.Store(true)
	}
}

func processAttrs() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// listProcs has no table to read here: the reaper finds the descendants instead.
func listProcs() []procInfo { return nil }

func environ(int) []string { return nil }

// reaperKill SIGKILLs every descendant of this process when it is a reaper and top is this
// process (a guard ending its child's family); it returns how many were signalled.
func reaperKill(top int) int {
	if !reaper.Load() || top != os.Getpid() {
		return 0
	}
	rk := reaperKillArgs{sig: int32(syscall.SIGKILL)}
	if procctl(procReapKill, unsafe.Pointer(&rk)) != nil {
		return 0
	}
	return int(rk.killed)
}

func reapOrphans(int, string) {}
