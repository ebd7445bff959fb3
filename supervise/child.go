package supervise

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/relayrt/relay/actors"
	"github.com/relayrt/relay/internal/ratelog"
	"github.com/relayrt/relay/runtime"
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
	// Logger receives the child's lifecycle, and its stderr unless Stderr is set (default:
	// nothing is logged).
	Logger *zap.Logger
	// Stderr, when set, receives the child's stderr as it comes, line by line, each line
	// prefixed with the child's name and ": ", and cut to MaxStderrLine bytes, in one Write
	// per line. io.Discard drops it. When nil, each line is logged at info level.
	Stderr io.Writer
	// MaxStderrLine bounds one line of the child's stderr as it is passed on (default
	// 4,096 bytes); the rest of a longer line is dropped and counted.
	MaxStderrLine int
}

// Child is one running process. Its stdout frames arrive on Frames, its exit on Done.
type Child struct {
	name      string
	proc      *process // the process started, the server's pid and how to reach its family
	log       *zap.Logger
	wait      time.Duration
	frames    chan []byte
	out       *stdio.Outbox // to the writer actor of its stdin
	stdin     io.WriteCloser
	done      chan struct{}
	exit      Exit
	closed    chan struct{} // closed when stdin has been closed
	closeOnce sync.Once
	tail      []string // the last lines of stderr, for StderrTail; written by drainStderr before done
	stderr    io.Writer
	maxLine   int
	warn      *ratelog.Limiter // Relay's own warnings about the child's output
}

// stderrTail is how many of the child's last stderr lines StderrTail keeps, and
// stderrTailLine how many bytes of each.
const (
	stderrTail     = 10
	stderrTailLine = 512
)

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
	if o.MaxStderrLine <= 0 {
		o.MaxStderrLine = 4096
	}
	name := cmd.Name
	if name == "" {
		name = baseName(cmd.Path)
	}
	c := exec.Command(cmd.Path, cmd.Args...)
	if err := checkProgram(c); err != nil { // not there, or not runnable: fail now rather than in a guard
		return nil, &StartError{Command: cmd.Path, Err: err}
	}
	c.Env, c.Dir = cmd.Env, cmd.Dir
	if c.Env == nil {
		c.Env = os.Environ()
	}
	// Descendants inherit the mark, which is how the ones that left the child's process
	// group, or were re-parented, are told apart from the host program's own processes.
	mark := markEnv + "=" + strconv.Itoa(os.Getpid()) + "." + strconv.FormatUint(childSeq.Add(1), 10)
	c.Env = append(slices.Clip(c.Env), mark) // never the caller's array
	// The pipes are made here, not by exec, so that a guard can hand the child's ends
	// straight to the child.
	var ours, theirs [3]*os.File // stdin, stdout, stderr
	for i := range ours {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(ours[:i])
			closeFiles(theirs[:i])
			return nil, fmt.Errorf("supervise: cannot make the pipes for %s: %w", name, err)
		}
		ours[i], theirs[i] = r, w
		if i == 0 { // the child reads its stdin
			ours[i], theirs[i] = w, r
		}
	}
	c.Stdin, c.Stdout, c.Stderr = theirs[0], theirs[1], theirs[2]
	p, err := launch(c, mark)
	closeFiles(theirs[:]) // the child has its own copies now
	if err != nil {
		closeFiles(ours[:])
		if unrunnable(err) {
			return nil, &StartError{Command: cmd.Path, Err: err}
		}
		return nil, fmt.Errorf("supervise: cannot start %s: %w", name, err)
	}
	stdin, stdout, stderr := ours[0], ours[1], ours[2]
	ch := &Child{
		name: name, proc: p, log: o.Logger.With(zap.String("child", name), zap.Int("pid", p.pid)),
		wait: o.StopWait, frames: make(chan []byte, 256), out: stdio.NewOutbox(o.MaxBacklog), stdin: stdin,
		done: make(chan struct{}), closed: make(chan struct{}),
		stderr: o.Stderr, maxLine: o.MaxStderrLine,
	}
	ch.warn = ratelog.New(ch.log, nil)
	errDone := make(chan struct{})
	go ch.readStdout(stdout, o.MaxFrame)
	go ch.drainStderr(stderr, errDone)
	go ch.writeStdin()
	go func() { // the waiter: the child's exit is the last thing this actor reports
		exit := p.wait() // the process, not the pipes: a grandchild may hold them
		p.fam.release()  // whatever is left of its family dies with it, and is reaped
		<-errDone
		ch.exit = exit
		close(ch.done)
		ch.out.Abort() // the writer actor ends; what the child did not take is not written to a closed pipe
	}()
	return ch, nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// childSeq numbers the children of this process, for their marks.
var childSeq atomic.Uint64

// Name returns the child's name.
func (c *Child) Name() string { return c.name }

// PID returns the child's process id.
func (c *Child) PID() int { return c.proc.pid }

// Frames delivers the child's stdout, one line per frame; it is closed when stdout ends.
// While the child runs, a frame nobody takes holds the next one back (and so the child, once
// the pipe is full). Done does not wait for Frames to be read: once the child has been
// reaped, frames still not taken after StopWait are dropped with a warning, so a Child whose
// frames nobody reads still ends.
func (c *Child) Frames() <-chan []byte { return c.frames }

// Done is closed when the child has exited and been reaped; Exit then says how.
func (c *Child) Done() <-chan struct{} { return c.done }

// Exit reports how the child ended; valid once Done is closed.
func (c *Child) Exit() Exit { return c.exit }

// Send queues one frame for the child's stdin. It fails once stdin is closed or the child
// has exited, and with ErrBacklog while the child has not read MaxBacklog bytes sent to it.
func (c *Child) Send(frame []byte) error {
	// Two receives of one channel each: a select over both would lock them both, on every
	// frame sent.
	select {
	case <-c.closed:
		return ErrStdinClosed
	default:
	}
	select {
	case <-c.done:
		return ErrExited
	default:
	}
	switch err := c.out.Send(frame); {
	case errors.Is(err, stdio.ErrOutboxFull):
		return ErrBacklog
	case err != nil:
		return ErrStdinClosed
	}
	return nil
}

// Errors of Send.
var (
	ErrStdinClosed = errors.New("supervise: the child's stdin is closed")
	ErrExited      = errors.New("supervise: the child has exited")
	ErrBacklog     = errors.New("supervise: the child is not reading its stdin, and its backlog is full")
)

// CloseStdin closes the child's stdin: the graceful end of a stdio server. It is safe to
// call more than once, from any goroutine.
func (c *Child) CloseStdin() {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.out.Close() // the writer actor writes what is queued, then closes stdin
	})
}

// Stop ends the child as the MCP specification's stdio shutdown says: close stdin, wait;
// ask its process group to end (SIGTERM; CTRL_BREAK_EVENT on Windows), wait; then kill the
// group and every descendant that can be found (SIGKILL; the job object on Windows). It
// returns once the child is reaped, or when ctx ends (the child is killed first).
func (c *Child) Stop(ctx context.Context) Exit {
	c.CloseStdin()
	steps := []func(){
		func() { c.log.Info("stopping: asking the child to end (SIGTERM)"); c.proc.fam.terminate() },
		func() { c.log.Warn("stopping: killing the child and its descendants (SIGKILL)"); c.proc.fam.kill() },
	}
	for _, next := range steps {
		t := time.NewTimer(c.wait)
		select {
		case <-c.done:
			t.Stop()
			return c.exit
		case <-ctx.Done():
			t.Stop()
			c.proc.fam.kill()
			<-c.done
			return c.exit
		case <-t.C:
			next()
		}
	}
	<-c.done
	return c.exit
}

// readStdout is the reader actor of the child's stdout (stdio.ReadFrames). It ends at the
// end of stdout; once the child has been reaped it waits at most StopWait for each frame to
// be taken, so that a Child whose frames nobody reads cannot keep it running.
func (c *Child) readStdout(r io.ReadCloser, maxFrame int) {
	defer r.Close()
	defer close(c.frames)
	defer c.warn.Flush()
	dropped := 0
	defer func() {
		if dropped > 0 {
			c.log.Warn("dropped frames of the child's stdout that nothing read after it exited", zap.Int("frames", dropped))
		}
	}()
	stdio.ReadFrames(context.Background(), r, maxFrame, func(msg runtime.Inbound) bool {
		if msg.TooLarge > 0 {
			c.warn.Warn("discarded a line of the child's stdout over the size limit", nil, zap.Int("limit", msg.TooLarge))
			return true
		}
		if actors.Deliver(c.frames, msg.Frame, c.done) {
			return true
		}
		if dropped > 0 { // nothing read the last one within StopWait: nothing reads
			dropped++
			return true
		}
		t := time.NewTimer(c.wait)
		defer t.Stop()
		select {
		case c.frames <- msg.Frame:
		case <-t.C:
			dropped++
		}
		return true
	})
}

// drainStderr passes the child's stderr on line by line (to Stderr, or the log); it never
// stops reading, so a child that writes a lot to stderr, or a line without end, can never
// block on a full pipe.
func (c *Child) drainStderr(r io.ReadCloser, done chan<- struct{}) {
	defer close(done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte // the line so far, at most maxLine bytes
	more := 0       // bytes of it past maxLine, dropped
	for {
		chunk, err := br.ReadSlice('\n')
		whole := err == nil
		if whole {
			chunk = bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\r"))
		}
		room := max(c.maxLine-len(line), 0)
		if len(chunk) > room {
			more += len(chunk) - room
			chunk = chunk[:room]
		}
		line = append(line, chunk...)
		switch {
		case whole:
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(line) == 0 && more == 0:
			return
		}
		c.passOn(line, more)
		line, more = line[:0], 0
		if !whole {
			return
		}
	}
}

// passOn hands one line of stderr on, and keeps it for StderrTail.
func (c *Child) passOn(line []byte, more int) {
	if more > 0 { // cut where a character starts, not inside one
		i := len(line) - 1
		for i > 0 && !utf8.RuneStart(line[i]) {
			i--
		}
		if i >= 0 && !utf8.FullRune(line[i:]) {
			more += len(line) - i
			line = line[:i]
		}
	}
	c.keep(line)
	if c.stderr == nil {
		if more > 0 {
			c.log.Info(string(line), zap.String("stream", "stderr"), zap.Int("cut", more))
		} else {
			c.log.Info(string(line), zap.String("stream", "stderr"))
		}
		return
	}
	out := make([]byte, 0, len(c.name)+len(line)+40)
	out = append(append(append(out, c.name...), ": "...), line...)
	if more > 0 {
		out = append(out, " … ("...)
		out = strconv.AppendInt(out, int64(more), 10)
		out = append(out, " more bytes)"...)
	}
	c.stderr.Write(append(out, '\n'))
}

// keep adds a line of stderr to the tail.
func (c *Child) keep(line []byte) {
	if len(c.tail) == stderrTail {
		c.tail = append(c.tail[:0], c.tail[1:]...)
	}
	c.tail = append(c.tail, cut(line, stderrTailLine))
}

// cut returns line as a string of at most n bytes, never splitting a UTF-8 sequence, with
// the number of bytes cut said at its end.
func cut(line []byte, n int) string {
	if len(line) <= n {
		return string(line)
	}
	end := n
	for end > 0 && !utf8.RuneStart(line[end]) {
		end--
	}
	return string(line[:end]) + "… (" + strconv.Itoa(len(line)-end) + " more bytes)"
}

// StderrTail returns the last lines the child wrote to its stderr (at most 10, each cut to
// 512 bytes), once Done is closed; before, it returns nil. It says why a child that
// exited at once could not start.
func (c *Child) StderrTail() []string {
	select {
	case <-c.done:
		return slices.Clone(c.tail)
	default:
		return nil
	}
}

// writeStdin is the writer actor of the child's stdin (stdio.WriteOutbox), its only owner. A
// failed write (the child closed its stdin, or exited) closes the outbox: Send says so.
func (c *Child) writeStdin() {
	defer c.stdin.Close()
	stdio.WriteOutbox(c.stdin, c.out, c.log)
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

func baseName(path string) string { return filepath.Base(path) }

// markEnv marks every process this package starts, and so their descendants, with the
// supervisor's pid and the child's number: RELAY_SUPERVISED_BY=PID.N.
const markEnv = "RELAY_SUPERVISED_BY"
