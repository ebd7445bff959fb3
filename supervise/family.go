package supervise

// process is a started child as the OS-specific code hands it to Child.
type process struct {
	pid  int         // the server's own pid
	fam  family      // how to reach it and everything it started
	wait func() Exit // waits for the process started (the child, or its guard); how the child ended
}

// family is a child and every process it started, as far as the OS lets the supervisor
// reach them.
type family interface {
	terminate() // ask the child to end: SIGTERM to its group; CTRL_BREAK_EVENT on Windows
	kill()      // end it now: SIGKILL to its group and every descendant found; the job on Windows
	release()   // once the process started is reaped: kill and reap what is left of the family
}
