//go:build unix

package supervise

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/relayrt/relay/internal/proc"
)

const guardSupported = true

// The guard's descriptors, after stdin, stdout and stderr: the lifeline from the supervisor
// (EOF: kill the family) and the status pipe back to it, which carries one line
// "started PID", "failed REASON" or "unrunnable REASON" (the program itself cannot run),
// and at the end "exited CODE SIGNAL".
const (
	guardLifeFD   = 3
	guardStatusFD = 4
)

// launchGuarded starts this program as a guard of c. It returns once the guard has started
// c, or failed to.
func launchGuarded(c *exec.Cmd, mark string) (*process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find this program to start a guard: %w", err)
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	statR, statW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		return nil, err
	}
	g := &exec.Cmd{
		Path: exe, Args: append([]string{proc.GuardName, c.Path}, c.Args[1:]...),
		Env: append(c.Env, guardEnv+"=1"), Dir: c.Dir,
		Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr,
		ExtraFiles: []*os.File{lifeR, statW},
		// Its own group, so that a signal to the host's group (Ctrl-C in a terminal) does not
		// reach it; it ignores such signals anyway: the lifeline ends it.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = g.Start()
	lifeR.Close()
	statW.Close()
	if err != nil {
		lifeW.Close()
		statR.Close()
		return nil, err
	}
	status := bufio.NewReader(statR)
	line, _ := status.ReadString('\n')
	verb, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	pid, _ := strconv.Atoi(arg)
	if verb != "started" || pid <= 0 {
		lifeW.Close()
		werr := g.Wait()
		statR.Close()
		switch verb {
		case "failed":
			return nil, errors.New(arg)
		case "unrunnable":
			return nil, fmt.Errorf("%s (%w)", arg, errUnrunnable)
		}
		return nil, fmt.Errorf("its guard ended before starting it (%s)", exitOf(werr))
	}
	f := &guardedFamily{pid: pid, mark: mark, life: lifeW}
	return &process{pid: pid, fam: f, wait: func() Exit {
		werr := g.Wait()
		line, _ := status.ReadString('\n')
		statR.Close()
		var code, sig int
		if n, _ := fmt.Sscanf(line, "exited %d %d", &code, &sig); n == 2 {
			return Exit{Code: code, Signal: syscall.Signal(sig)}
		}
		e := exitOf(werr) // the guard itself was killed: the child's status is lost
		e.Err = fmt.Errorf("its guard ended without reporting the child's exit (%s)", e)
		return e
	}}, nil
}

// guardedFamily is a child behind a guard.
type guardedFamily struct {
	pid  int
	mark string
	life *os.File
	once sync.Once
}

func (f *guardedFamily) terminate() { syscall.Kill(-f.pid, syscall.SIGTERM) }

func (f *guardedFamily) kill() {
	syscall.Kill(-f.pid, syscall.SIGKILL)
	f.once.Do(func() { f.life.Close() }) // the guard kills the rest of the family
}

func (f *guardedFamily) release() {
	f.once.Do(func() { f.life.Close() })
	// The guard cleaned up before it exited, unless it was killed itself: then what is left
	// of the family is the supervisor's to end.
	syscall.Kill(-f.pid, syscall.SIGKILL)
	killDescendants(f.pid, f.mark)
}

// runGuard is the guard: it starts args as the child, reports its pid, and returns the exit
// code for the guard once the child and everything it started are gone.
func runGuard(args []string) int {
	life, status := os.NewFile(guardLifeFD, "lifeline"), os.NewFile(guardStatusFD, "status")
	if len(args) == 0 || life == nil || status == nil {
		fmt.Fprintf(os.Stderr, "relay guard: %s=1 is set, but this process was not started by a supervisor\n", guardEnv)
		return 2
	}
	syscall.CloseOnExec(guardLifeFD) // the child must not inherit them
	syscall.CloseOnExec(guardStatusFD)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	becomeReaper()
	mark := markEnv + "=" + os.Getenv(markEnv)
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, guardEnv+"=") {
			env = append(env, e)
		}
	}
	c := &exec.Cmd{Path: args[0], Args: args, Env: env,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, SysProcAttr: processAttrs()}
	if err := c.Start(); err != nil {
		verb := "failed"
		if unrunnable(err) {
			verb = "unrunnable"
		}
		fmt.Fprintf(status, "%s %s\n", verb, err)
		return 127
	}
	pid := c.Process.Pid
	fmt.Fprintf(status, "started %d\n", pid)
	ended := make(chan struct{})
	go func() { io.Copy(io.Discard, life); close(ended) }() // EOF: the supervisor is gone
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-ended:
		syscall.Kill(-pid, syscall.SIGKILL)
		killDescendants(os.Getpid(), mark)
		err = <-exited
	}
	// The child is gone, and so must be all it started: its group, its descendants (here,
	// where the guard is their reaper) and whatever carries its mark.
	syscall.Kill(-pid, syscall.SIGKILL)
	for i := 0; i < 400; i++ {
		n := killDescendants(os.Getpid(), mark)
		reapAll()
		// A zombie can show this guard as its parent a moment before wait4 can reap it (the
		// kernel moves a dying child's children over in steps): wait for it too.
		if n == 0 && !zombieChildren() {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	e := exitOf(err)
	fmt.Fprintf(status, "exited %d %d\n", e.Code, int(e.Signal))
	if e.Signal != 0 {
		return 128 + int(e.Signal)
	}
	return e.Code
}

// zombieChildren reports whether the table shows a child of this process that exited and
// was not reaped yet.
func zombieChildren() bool {
	me := os.Getpid()
	for _, p := range listProcs() {
		if p.dead && p.ppid == me {
			return true
		}
	}
	return false
}

// reapAll reaps every child of the guard that has exited: orphans re-parented to it.
func reapAll() {
	for {
		var ws syscall.WaitStatus
		if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
			return
		}
	}
}
