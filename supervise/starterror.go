package supervise

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"syscall"
)

// StartError is a child that cannot be started at all: its program is not there, or it
// cannot be run (no permission, not an executable). Trying again cannot mend it, so the
// Supervisor does not: it gives up at once, and Proxy answers every request with this error
// until the host closes its input.
type StartError struct {
	Command string // the program, as the Command named it
	Err     error  // why it cannot run
}

func (e *StartError) Error() string {
	return fmt.Sprintf("supervise: cannot run %q: %v; check that the command exists and is executable", e.Command, e.Err)
}

// Unwrap returns the cause.
func (e *StartError) Unwrap() error { return e.Err }

// errUnrunnable marks a guard's report that its child's program could not be run.
var errUnrunnable = errors.New("the program cannot be run")

// unrunnable reports whether err, from starting a program, says the program itself cannot
// run (missing, not executable, no permission): a fault of the command, not of the moment.
func unrunnable(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) ||
		errors.Is(err, fs.ErrPermission) || errors.Is(err, errUnrunnable) || errors.Is(err, syscall.ENOEXEC)
}

// checkProgram finds what exec would find wrong with c's program before anything is
// started: exec.Command has looked a bare name up in PATH already (c.Err); a path is checked
// here, so that the failure is the same with a guard and without.
func checkProgram(c *exec.Cmd) error {
	if c.Err != nil {
		return c.Err
	}
	if filepath.Base(c.Path) == c.Path {
		return nil
	}
	_, err := exec.LookPath(c.Path)
	return err
}
