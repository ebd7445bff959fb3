package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/stdio"
)

// CommandTransport starts a server as a child process and speaks to it over its stdin and
// stdout, one JSON-RPC message per line (MCP 2026-07-28, Transports › stdio). Nothing but
// protocol is read from stdout; stderr is informational and passed through.
type CommandTransport struct {
	// Command is the child to start; it must not have been started, and its Stdin and
	// Stdout must be unset.
	Command *exec.Cmd
	// Stderr receives the child's stderr; nil means this process's own, unless
	// Command.Stderr is set already.
	Stderr io.Writer
	// CloseWait is how long Close waits for the child to exit after its stdin is closed,
	// and again after SIGTERM, before the next step (default 5s).
	CloseWait time.Duration
	// MaxFrame is the longest line read from the child (stdio.DefaultMaxFrame if <= 0);
	// longer ones are dropped.
	MaxFrame int
}

// Command returns a transport that starts name with args.
func Command(name string, args ...string) *CommandTransport {
	return &CommandTransport{Command: exec.Command(name, args...)}
}

func (t *CommandTransport) dial(ctx context.Context, in *inbox) (conn, error) {
	cmd := t.Command
	if cmd == nil {
		return nil, errors.New("mcp/client: CommandTransport without a Command")
	}
	if cmd.Stderr == nil {
		cmd.Stderr = t.Stderr
		if cmd.Stderr == nil {
			cmd.Stderr = os.Stderr
		}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("mcp/client: starting %s: %w", cmd.Path, err)
	}
	wait := t.CloseWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	frames := make(chan []byte, 16)
	readCtx, stopReading := context.WithCancel(context.Background())
	readerDone := make(chan struct{})
	s := newStream(frames, in)
	go func() { // the reader actor
		defer close(readerDone)
		defer close(frames)
		stdio.ReadFrames(readCtx, stdout, t.MaxFrame, func(in runtime.Inbound) bool {
			if in.Frame == nil {
				return true // a line too long: dropped
			}
			select {
			case frames <- in.Frame:
				return true
			case <-readCtx.Done():
				return false
			}
		})
	}()
	writerDone := make(chan struct{})
	go func() { // the writer actor: its end closes the child's stdin
		defer close(writerDone)
		stdio.WriteFrames(stdin, s.out, nil)
		stdin.Close()
	}()
	s.stop = func() error {
		// MCP 2026-07-28, Transports › stdio › Shutdown: close stdin, wait, SIGTERM, wait,
		// SIGKILL. The writer closes stdin once it has written what was queued; a child that
		// stopped reading keeps it blocked, and gets the signals all the same.
		var forced error
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-readerDone:
		case <-timer.C:
			forced = errors.New("mcp/client: the child did not exit when its stdin closed")
			if cmd.Process.Signal(syscall.SIGTERM) != nil { // Windows has no SIGTERM
				cmd.Process.Kill()
			}
			timer.Reset(wait)
			select {
			case <-readerDone:
			case <-timer.C:
				cmd.Process.Kill()
			}
		}
		stopReading() // a grandchild may hold stdout open: stop reading it anyway
		<-readerDone
		cmd.Wait()
		stdin.Close() // the child is gone: a write still blocked on its stdin ends (a grandchild may hold the pipe)
		<-writerDone
		return forced
	}
	return s, nil
}
