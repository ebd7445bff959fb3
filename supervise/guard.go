package supervise

import (
	"os"
	"sync/atomic"
)

// guardEnv tells a program started by StartChild that it is to be a child's guard.
const guardEnv = "RELAY_GUARD"

// guardReady is set by GuardMain: this program can be a guard, so StartChild starts each
// child behind one (on Unix).
var guardReady atomic.Bool

// GuardMain lets this program guard the children it supervises. Call it first thing in main,
// before anything else runs, as `relay` does:
//
//	func main() {
//		supervise.GuardMain()
//		...
//	}
//
// When the process was started as a guard, GuardMain runs the guard and exits; it never
// returns. Otherwise it returns at once, and from then on StartChild (and so Supervisor,
// Proxy and the bridge) starts every child on Unix behind a guard: a copy of this program,
// between the supervisor and the child, that hands the child the supervisor's pipes as they
// are (it copies no bytes) and holds a pipe from the supervisor. When that pipe closes — the
// supervisor exited, crashed or was killed with SIGKILL — the guard kills the child's
// process group and every descendant of the child it can find, reaps them where it is their
// reaper (Linux, FreeBSD), and exits with the child's status.
//
// Without GuardMain, children are started directly: stopping them works the same, but if
// the supervisor itself is killed, only Linux still ends the child (PR_SET_PDEATHSIG), and
// its descendants live on. On Windows GuardMain does nothing: each child runs in a job
// object that the system closes, killing every process in it, when the supervisor dies.
func GuardMain() {
	if os.Getenv(guardEnv) == "" {
		guardReady.Store(guardSupported)
		return
	}
	os.Exit(runGuard(os.Args[1:]))
}
