// Package supervise launches stdio servers as child processes and keeps them alive: the
// client side of Relay.
//
//   - Child is one process as an actor: it leads its own process group, its stdin and
//     stdout are framed with Relay's NDJSON reader and writer, its stderr is drained line
//     by line into the log so the child can never block on it, and its exit is delivered
//     as a message. Stop follows the stdio shutdown sequence of the MCP specification:
//     close stdin, wait, SIGTERM to the group, wait, SIGKILL to the group and to every
//     descendant that left it; nothing is left running or unreaped.
//   - Supervisor owns the restart decision: a policy (always, on-failure, never),
//     exponential backoff with jitter between a minimum and a maximum, reset after a stable
//     uptime, and an intensity limit (N restarts within a window, then give up). Time comes
//     from an injectable Clock, so the logic is tested without sleeping.
//   - Proxy puts a Supervisor between a host on stdio and the child; ServeFrames is its core,
//     on channels of frames, for a host of another kind (relay bridge's HTTP sessions).
//     Through either, Supervisor.Upgrade replaces the child with a new version without
//     dropping the host (upgrade.go).
//
// # The supervisor's own death
//
// A program that calls GuardMain first in its main starts every child behind a guard, a
// copy of itself that outlives the supervisor just long enough to end the child's whole
// family when the supervisor dies, even by SIGKILL (see GuardMain). relay does this; an
// embedding program should too.
//
// # What each OS guarantees
//
//   - Linux: the child's group, its descendants found in /proc, and orphans (the guard, or
//     without one the supervisor, is their subreaper, PR_SET_CHILD_SUBREAPER, so they are
//     found and reaped). Without a guard the child alone dies with the supervisor
//     (PR_SET_PDEATHSIG).
//   - macOS: the child's group, its descendants found in the process table (sysctl
//     kern.proc.all), and processes that carry the child's mark in their environment
//     (RELAY_SUPERVISED_BY, read with kern.procargs2) wherever they were re-parented. A
//     descendant that both left the group and cleared its environment after its parent
//     exited is out of reach: macOS has no subreaper.
//   - FreeBSD: the guard is the reaper of the child's family (procctl PROC_REAP_ACQUIRE)
//     and kills all of it (PROC_REAP_KILL). Without a guard, the child's group only.
//   - Other Unix systems: the child's group.
//   - Windows: each child runs in its own job object, created with
//     JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE and entered before the child runs any code: the
//     child and every descendant die with the job, when Stop ends it or when the
//     supervisor dies. Stop sends CTRL_BREAK_EVENT where the child shares the supervisor's
//     console (it has its own process group), then terminates the job. A .cmd or .bat
//     command (npx is npx.cmd) runs through cmd.exe with its arguments quoted for it.
package supervise
