// Package supervise launches stdio servers as child processes and keeps them alive: the
// client side of Relay.
//
//   - Child is one process as an actor: its own process group, killed with the supervisor
//     (Pdeathsig), stdin and stdout framed with Relay's NDJSON reader and writer, stderr
//     drained line by line into the log so the child can never block on it, and its exit
//     delivered as a message. Stop follows the stdio shutdown sequence of the MCP
//     specification: close stdin, wait, SIGTERM to the group, wait, SIGKILL to the group,
//     then to any descendant that left the group; nothing is left running or unreaped.
//   - Supervisor owns the restart decision: a policy (always, on-failure, never),
//     exponential backoff with jitter between a minimum and a maximum, reset after a stable
//     uptime, and an intensity limit (N restarts within a window, then give up). Time comes
//     from an injectable Clock, so the logic is tested without sleeping.
//
// On Linux the process that uses this package is made a child subreaper, so grandchildren
// that call setsid are re-parented to it when their parent dies, and found and reaped.
package supervise
