package supervise

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/relayrt/relay/internal/proc"
)

// portable switches off what only Linux has (the subreaper, PR_SET_PDEATHSIG), so that the
// tests run here the path macOS and the BSDs take. It is set before any child starts.
var portable bool

const prSetChildSubreaper = 36

var subreaperOnce sync.Once

// becomeReaper makes this process the reaper of its orphaned descendants, so that a
// grandchild that calls setsid and outlives its parent is re-parented here, not to init.
func becomeReaper() {
	if portable {
		return
	}
	subreaperOnce.Do(func() {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	})
}

func processAttrs() *syscall.SysProcAttr {
	if portable {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// listProcs returns the process table, from /proc.
func listProcs() []procInfo {
	all := proc.All()
	out := make([]procInfo, 0, len(all))
	for _, st := range all {
		out = append(out, procInfo{pid: st.PID, ppid: st.PPID, dead: !st.Alive()})
	}
	return out
}

// environ returns the environment pid was started with, or nil when it cannot be read.
func environ(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// reaperKill has nothing to add on Linux: the table walk found everything.
func reaperKill(int) int { return 0 }

// reapOrphans kills and reaps the orphaned descendants of a child started without a guard
// that were re-parented to this process (as a subreaper): nothing else would ever reap
// them. Only processes that carry the child's mark, are in its group or were killed by
// killDescendants are touched, so children the host program started itself are left alone,
// and wait4 on a specific pid leaves every other status be.
func reapOrphans(group int, mark string) {
	me := os.Getpid()
	for _, p := range listProcs() {
		if p.ppid != me || live.has(p.pid) {
			continue
		}
		st, _ := proc.Read(p.pid)
		if !hasEnv(environ(p.pid), mark) && !killed.has(p.pid) && !(group > 0 && st.PGRP == group) {
			continue
		}
		syscall.Kill(p.pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(p.pid, &ws, 0, nil)
		killed.remove(p.pid)
	}
}
