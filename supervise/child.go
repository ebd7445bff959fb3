package supervise

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/stdio"
)

// Command says how to start a child.
type Command struct {
	Path string   // the program; looked up in PATH when it has no slash
	Args []string // arguments, without the program name
	Env  []string // the environment; nil inherits the supervisor's
	Dir  string   // the working directory; "" is the supervisor's
	Name string   // names the child in logs (default: the program's base name)
}

// Exit is how a child ended.
type Exit struct {
	Code   int            // the exit code, or -1 when a signal ended it
	Signal syscall.Signal // the signal that ended it, or 0
	Err    error          // why the supervisor ended it (a restart), or a failure to wait for it
}

// Failed reports whether the exit was not a clean exit with code 0.
func (e Exit) Failed() bool { return e.Code != 0 || e.Signal != 0 || e.Err != nil }

func (e Exit) String() string {
	switch {
	case e.Err != nil:
		return e.Err.Error()
	case e.Signal != 0:
		return fmt.Sprintf("ended by signal %d (%s)", int(e.Signal), e.Signal)
	}
	return fmt.Sprintf("exit code %d", e.Code)
}

// ChildOptions tunes a Child. The zero value is ready to use.
type ChildOptions struct {
	// StopWait is how long Stop waits after closing stdin, and again after SIGTERM
	// (default 2 s each).
	StopWait time.Duration
	// MaxFrame bounds one line of the child's stdout (default 16 MiB).
	MaxFrame int
	// MaxBacklog bounds the bytes sent to the child that it has not read yet (default
	// 64 MiB): past it, Send fails with ErrBacklog instead of holding more for a child that
	// stopped reading.
	MaxBacklog int
	// Logger receives the child's stderr and lifecycle (default: a logger on stderr).
	Logger *zap.Logger
}

// Child is one running process. Its stdout frames arrive on Frames, its exit on Done.
type Child struct {
	name    string
	cmd     *exec.Cmd
	pid     int
	log     *zap.Logger
	wait    time.Duration
	frames  chan []byte
	qmu     sync.Mutex
	queue   [][]byte // to the writer actor
	backlog int      // bytes queued or being written, not yet taken by the pipe
	maxLog  int
	kick    chan struct{} // wakes the writer actor
	stdin   io.WriteCloser
	done    chan struct{}
	exit    Exit
	closed  chan struct{} // closed when stdin has been closed
}

// StartChild starts a process. The child runs until it exits or Stop is called; cancelling
// ctx does not stop it (call Stop).
func StartChild(cmd Command, opts *ChildOptions) (*Child, error) {
	var o ChildOptions
	if opts != nil {
		o = *opts
	}
	if o.StopWait <= 0 {
		o.StopWait = 2 * time.Second
	}
	if o.MaxBacklog <= 0 {
		o.MaxBacklog = 64 << 20
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	becomeSubreaper()
	name := cmd.Name
	if name == "" {
		name = baseName(cmd.Path)
	}
	c := exec.Command(cmd.Path, cmd.Args...)
	c.Env, c.Dir = cmd.Env, cmd.Dir
	if c.Env == nil {
		c.Env = os.Environ()
	}
	// Descendants inherit the mark, which is how orphans re-parented here are told apart
	// from children of the host program's own.
	c.Env = append(slices.Clip(c.Env), markEnv+"="+strconv.Itoa(os.Getpid())) // never the caller's array
	c.SysProcAttr = processAttrs()
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := c.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("supervise: cannot start %s: %w", name, err)
	}
	live.add(c.Process.Pid)
	ch := &Child{
		name: name, cmd: c, pid: c.Process.Pid, log: o.Logger.With(zap.String("child", name), zap.Int("pid", c.Process.Pid)),
		wait: o.StopWait, frames: make(chan []byte, 256), kick: make(chan struct{}, 1), stdin: stdin,
		done: make(chan struct{}), closed: make(chan struct{}), maxLog: o.MaxBacklog,
	}
	readDone := make(chan struct{})
	errDone := make(chan struct{})
	go ch.readStdout(stdout, o.MaxFrame, readDone)
	go ch.drainStderr(stderr, errDone)
	go ch.writeStdin()
	go func() { // the waiter: the child's exit is the last thing this actor reports
		st, err := c.Process.Wait() // the process, not the pipes: a grandchild may hold them
		live.remove(ch.pid)
		ch.killGroup(syscall.SIGKILL) // whatever is left of its group dies with it
		reapOrphans(ch.pid)           // and the orphans that left it (they may hold stdout)
		<-readDone
		<-errDone
		stdout.Close()
		stderr.Close()
		if err == nil && !st.Success() {
			err = &exec.ExitError{ProcessState: st}
		}
		ch.exit = exitOf(err)
		close(ch.done)
	}()
	return ch, nil
}

// Name returns the child's name.
func (c *Child) Name() string { return c.name }

// PID returns the child's process id.
func (c *Child) PID() int { return c.pid }

// Frames delivers the child's stdout, one line per frame; it is closed when stdout ends.
func (c *Child) Frames() <-chan []byte { return c.frames }

// Done is closed when the child has exited and been reaped; Exit then says how.
func (c *Child) Done() <-chan struct{} { return c.done }

// Exit reports how the child ended; valid once Done is closed.
func (c *Child) Exit() Exit { return c.exit }

// Send queues one frame for the child's stdin. It fails once stdin is closed or the child
// has exited, and with ErrBacklog while the child has not read MaxBacklog bytes sent to it.
func (c *Child) Send(frame []byte) error {
	select {
	case <-c.closed:
		return ErrStdinClosed
	case <-c.done:
		return ErrExited
	default:
	}
	c.qmu.Lock()
	if c.backlog > 0 && c.backlog+len(frame) > c.maxLog {
		c.qmu.Unlock()
		return ErrBacklog
	}
	c.queue = append(c.queue, frame)
	c.backlog += len(frame) + 1
	c.qmu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

// Errors of Send.
var (
	ErrStdinClosed = errors.New("supervise: the child's stdin is closed")
	ErrExited      = errors.New("supervise: the child has exited")
	ErrBacklog     = errors.New("supervise: the child is not reading its stdin, and its backlog is full")
)

// CloseStdin closes the child's stdin: the graceful end of a stdio server.
func (c *Child) CloseStdin() {
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
}

// Stop ends the child as the MCP specification's stdio shutdown says: close stdin, wait;
// SIGTERM to its process group, wait; SIGKILL to the group and to any descendant that left
// it. It returns once the child is reaped, or when ctx ends (the child is killed first).
func (c *Child) Stop(ctx context.Context) Exit {
	c.CloseStdin()
	steps := []func(){
		func() { c.log.Info("stopping: sending SIGTERM"); c.killGroup(syscall.SIGTERM) },
		func() { c.log.Warn("stopping: sending SIGKILL"); c.killGroup(syscall.SIGKILL); killDescendants(c.pid) },
	}
	for _, next := range steps {
		t := time.NewTimer(c.wait)
		select {
		case <-c.done:
			t.Stop()
			return c.exit
		case <-ctx.Done():
			t.Stop()
			c.killGroup(syscall.SIGKILL)
			killDescendants(c.pid)
			<-c.done
			return c.exit
		case <-t.C:
			next()
		}
	}
	<-c.done
	return c.exit
}

func (c *Child) readStdout(r io.Reader, maxFrame int, done chan<- struct{}) {
	defer close(done)
	defer close(c.frames)
	fr := stdio.NewReader(r, maxFrame)
	for {
		line, err := fr.Next()
		var tl *stdio.TooLargeError
		switch {
		case errors.As(err, &tl):
			c.log.Warn("discarded a line of the child's stdout over the size limit", zap.Int("limit", tl.Limit))
			continue
		case err != nil:
			return
		}
		c.frames <- append([]byte(nil), line...)
	}
}

// drainStderr logs the child's stderr line by line; it never stops reading, so a child that
// writes a lot to stderr can never block on a full pipe.
func (c *Child) drainStderr(r io.Reader, done chan<- struct{}) {
	defer close(done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		c.log.Info(sc.Text(), zap.String("stream", "stderr"))
	}
	if sc.Err() != nil { // a line over 1 MiB: keep draining, unlogged
		io.Copy(io.Discard, r)
	}
}

// writeStdin is the writer actor: the only owner of the child's stdin.
func (c *Child) writeStdin() {
	defer c.stdin.Close()
	w := bufio.NewWriterSize(c.stdin, 64<<10)
	take := func() [][]byte {
		c.qmu.Lock()
		defer c.qmu.Unlock()
		q := c.queue
		c.queue = nil
		return q
	}
	written := func(q [][]byte) { // the pipe took them: they leave the backlog
		n := 0
		for _, f := range q {
			n += len(f) + 1
		}
		c.qmu.Lock()
		c.backlog -= n
		c.qmu.Unlock()
	}
	for {
		select {
		case <-c.kick:
			q := take()
			for _, f := range q {
				w.Write(f)
				w.WriteByte('\n')
			}
			if w.Flush() != nil {
				c.CloseStdin()
				return
			}
			written(q)
		case <-c.closed:
			for _, f := range take() {
				w.Write(f)
				w.WriteByte('\n')
			}
			w.Flush()
			return
		case <-c.done:
			return
		}
	}
}

func (c *Child) killGroup(sig syscall.Signal) {
	syscall.Kill(-c.pid, sig) // the whole group: the child was started as its leader
}

func exitOf(err error) Exit {
	if err == nil {
		return Exit{}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return Exit{Code: -1, Signal: ws.Signal()}
		}
		return Exit{Code: ee.ExitCode()}
	}
	return Exit{Code: -1, Err: err}
}

func baseName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}

// markEnv marks every process this package starts, and so their descendants.
const markEnv = "RELAY_SUPERVISED_BY"
