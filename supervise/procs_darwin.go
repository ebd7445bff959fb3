package supervise

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// macOS has no subreaper: an orphan's parent is launchd, which reaps it. Descendants that
// left the child's group are found by their parent (while it lives) and by the mark in
// their environment.

var portable bool // nothing Linux-only to switch off here

func becomeReaper() {}

func processAttrs() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// sZomb is p_stat of a process that exited and was not reaped yet (sys/proc.h).
const sZomb = 5

// listProcs returns the process table, from sysctl kern.proc.all.
func listProcs() []procInfo {
	kp, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	out := make([]procInfo, 0, len(kp))
	for i := range kp {
		out = append(out, procInfo{pid: int(kp[i].Proc.P_pid), ppid: int(kp[i].Eproc.Ppid), dead: kp[i].Proc.P_stat == sZomb})
	}
	return out
}

// environ returns the environment pid was started with, from sysctl kern.procargs2; nil
// when it cannot be read (another user's process, say).
func environ(pid int) []string {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil
	}
	return procargsEnv(b)
}

func reaperKill(int) int { return 0 }

// reapOrphans has nothing to do: launchd reaps orphans.
func reapOrphans(int, string) {}
