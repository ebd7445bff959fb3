//go:build unix && !linux && !darwin && !freebsd

package supervise

import "syscall"

// The other Unix systems: the child leads its own process group, and the stop sequence
// reaches that group; no process table is read.

var portable bool

func becomeReaper()                      {}
func processAttrs() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
func listProcs() []procInfo              { return nil }
func environ(int) []string               { return nil }
func reaperKill(int) int                 { return 0 }
func reapOrphans(int, string)            {}
