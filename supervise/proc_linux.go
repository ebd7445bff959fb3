package supervise

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/relayrt/relay/internal/proc"
)

const prSetChildSubreaper = 36

var subreaperOnce sync.Once

// becomeSubreaper makes this process the reaper of its orphaned descendants, so that a
// grandchild that calls setsid and outlives its parent is re-parented here, not to init.
func becomeSubreaper() {
	subreaperOnce.Do(func() {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	})
}

func processAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// procs returns the pid → parent pid of every process.
func procs() map[int]int {
	out := map[int]int{}
	for _, st := range proc.All() {
		out[st.PID] = st.PPID
	}
	return out
}

// killDescendants SIGKILLs every descendant of pid, including those that left its group.
func killDescendants(pid int) {
	parents := procs()
	children := map[int][]int{}
	for p, pp := range parents {
		children[pp] = append(children[pp], p)
	}
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			killed.add(c)
			syscall.Kill(c, syscall.SIGKILL)
			walk(c)
		}
	}
	walk(pid)
}

// reapOrphans kills and reaps the orphaned descendants of our children that were re-parented
// to this process (as a subreaper): nothing else would ever reap them. Only processes that
// carry this process's mark in their environment are touched, so children the host program
// started itself are left alone, and wait4 on a specific pid leaves every other status be.
func reapOrphans(group int) {
	me := os.Getpid()
	mark := markEnv + "=" + strconv.Itoa(me)
	for pid, ppid := range procs() {
		if ppid != me || live.has(pid) {
			continue
		}
		if !hasEnv(pid, mark) && !killed.has(pid) && !(group > 0 && pgrpOf(pid) == group) {
			continue
		}
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
		killed.remove(pid)
	}
}

func pgrpOf(pid int) int {
	st, _ := proc.Read(pid)
	return st.PGRP
}

var killed = &pidSet{m: map[int]bool{}}

func hasEnv(pid int, entry string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range strings.Split(string(b), "\x00") {
		if e == entry {
			return true
		}
	}
	return false
}

// live is the set of children started by StartChild and not yet waited for.
var live = &pidSet{m: map[int]bool{}}

type pidSet struct {
	mu sync.Mutex
	m  map[int]bool
}

func (s *pidSet) add(pid int)    { s.mu.Lock(); s.m[pid] = true; s.mu.Unlock() }
func (s *pidSet) remove(pid int) { s.mu.Lock(); delete(s.m, pid); s.mu.Unlock() }
func (s *pidSet) has(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[pid]
}
