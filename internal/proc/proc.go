// Package proc reads what Linux's /proc/PID/stat says of processes: the one parser of that
// file that the supervisor and Relay's tests share. Where there is no /proc, every process
// reads as absent.
package proc

import (
	"os"
	"strconv"
	"strings"
)

// Stat is what /proc/PID/stat says of a process.
type Stat struct {
	PID   int
	Comm  string // the command name, without the parentheses around it
	State byte   // 'R', 'S', 'D', 'Z', 'T', …
	PPID  int
	PGRP  int
	// Start is when the process started, in clock ticks after boot: a pid seen again with
	// another Start is another process.
	Start uint64
}

// Alive reports whether the process runs: it exists and is not a zombie.
func (s Stat) Alive() bool { return s.State != 'Z' }

// Read returns what /proc says of pid; ok is false when there is no such process.
func Read(pid int) (Stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, false
	}
	return parse(pid, string(b))
}

// parse reads one stat line: "pid (comm) state ppid pgrp …", where comm may hold spaces and
// parentheses of its own, so the last ')' ends it.
func parse(pid int, s string) (Stat, bool) {
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return Stat{}, false
	}
	f := strings.Fields(s[closing+1:]) // field 3 of the line onwards: starttime is the 22nd
	// The state is one letter.
	if len(f) < 20 || len(f[0]) != 1 || f[0][0]|0x20 < 'a' || f[0][0]|0x20 > 'z' {
		return Stat{}, false
	}
	st := Stat{PID: pid, Comm: s[open+1 : closing], State: f[0][0]}
	var err1, err2, err3 error
	st.PPID, err1 = strconv.Atoi(f[1])
	st.PGRP, err2 = strconv.Atoi(f[2])
	st.Start, err3 = strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Stat{}, false
	}
	return st, true
}

// All returns every process there is, zombies included.
func All() []Stat {
	entries, _ := os.ReadDir("/proc")
	var out []Stat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := Read(pid); ok {
			out = append(out, st)
		}
	}
	return out
}

// Children returns the processes whose parent is pid and that are alive (not zombies).
func Children(pid int) []Stat {
	var out []Stat
	for _, st := range All() {
		if st.PPID == pid && st.Alive() {
			out = append(out, st)
		}
	}
	return out
}

// GuardName is argv[0] of the guard that package supervise puts between a supervisor and
// each child it starts.
const GuardName = "relay-guard"

// Supervised returns the live processes a Relay supervisor with pid runs as its children:
// its children, except that a guard stands for the child it guards.
func Supervised(pid int) []Stat {
	var out []Stat
	for _, st := range Children(pid) {
		if isGuard(st.PID) {
			out = append(out, Children(st.PID)...)
		} else {
			out = append(out, st)
		}
	}
	return out
}

func isGuard(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(b), "\x00")
	return argv0 == GuardName
}
