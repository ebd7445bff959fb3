//go:build unix

package supervise

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// launch starts c: through a guard when this program can be one (GuardMain was called),
// else directly. Either way the child leads its own process group.
func launch(c *exec.Cmd, mark string) (*process, error) {
	if guardReady.Load() {
		return launchGuarded(c, mark)
	}
	becomeReaper()
	c.SysProcAttr = processAttrs()
	if err := c.Start(); err != nil {
		return nil, err
	}
	pid := c.Process.Pid
	live.add(pid)
	f := &groupFamily{pid: pid, mark: mark}
	return &process{pid: pid, fam: f, wait: func() Exit {
		err := c.Wait() // the process alone: exec copies nothing, the pipes are ours
		live.remove(pid)
		return exitOf(err)
	}}, nil
}

// groupFamily is a child started without a guard: its process group, its descendants found
// while it runs, and after it exits the orphans that carry its mark.
type groupFamily struct {
	pid  int
	mark string
}

func (f *groupFamily) terminate() { syscall.Kill(-f.pid, syscall.SIGTERM) }

func (f *groupFamily) kill() {
	syscall.Kill(-f.pid, syscall.SIGKILL)
	killDescendants(f.pid, f.mark)
}

func (f *groupFamily) release() {
	syscall.Kill(-f.pid, syscall.SIGKILL) // whatever is left of its group dies with it
	killDescendants(f.pid, f.mark)        // and the orphans that left it (they may hold stdout)
	reapOrphans(f.pid, f.mark)
}

// killDescendants SIGKILLs every process that descends from top (top excepted), or carries
// mark in its environment, as far as this OS's process table shows them (procs_*.go). It
// returns how many it signalled.
func killDescendants(top int, mark string) int {
	me := os.Getpid()
	n := 0
	for _, pid := range relatives(listProcs(), top, mark) {
		if pid != me && pid != top && pid > 1 {
			killed.add(pid)
			syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
	}
	return n + reaperKill(top)
}

// relatives returns the pids of procs that descend from top, or whose environment holds mark.
func relatives(procs []procInfo, top int, mark string) []int {
	children := map[int][]int{}
	for _, p := range procs {
		if !p.dead {
			children[p.ppid] = append(children[p.ppid], p.pid)
		}
	}
	seen := map[int]bool{}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				walk(c)
			}
		}
	}
	walk(top)
	if mark != "" {
		for _, p := range procs {
			if !p.dead && !seen[p.pid] && p.pid != top && hasEnv(environ(p.pid), mark) {
				seen[p.pid] = true
				out = append(out, p.pid)
				walk(p.pid)
			}
		}
	}
	return out
}

// procInfo is one row of the process table.
type procInfo struct {
	pid, ppid int
	dead      bool // a zombie: exited, not yet reaped
}

func hasEnv(env []string, entry string) bool {
	for _, e := range env {
		if e == entry {
			return true
		}
	}
	return false
}

// live is the set of children started without a guard and not yet waited for; killed, the
// processes killDescendants signalled. reapOrphans reads both.
var live, killed = &pidSet{m: map[int]bool{}}, &pidSet{m: map[int]bool{}}

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
