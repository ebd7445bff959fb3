//go:build unix

package supervise

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/relayrt/relay/stdio"
)

// tcStart starts a test child and returns it with the pids of its hello frame.
func tcStart(t *testing.T, mode string, opts *ChildOptions) (c *Child, grandchild int) {
	t.Helper()
	c, err := StartChild(tcCommand(t, mode, ""), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // a failed test must not leave the child behind
		select {
		case <-c.Done():
		default:
			c.proc.fam.kill()
			<-c.Done()
		}
	})
	f := tcFrame(t, c, 10*time.Second)
	var hello struct {
		Method string
		Params struct{ PID, Grandchild int }
	}
	if json.Unmarshal(f, &hello); hello.Method != "hello" || hello.Params.PID != c.PID() {
		t.Fatalf("first frame = %s, want hello from pid %d", f, c.PID())
	}
	return c, hello.Params.Grandchild
}

func tcFrame(t *testing.T, c *Child, within time.Duration) []byte {
	t.Helper()
	select {
	case f, ok := <-c.Frames():
		if !ok {
			t.Fatalf("the child's stdout ended (exit: %v)", c.Exit())
		}
		return f
	case <-time.After(within):
		t.Fatalf("no frame from the child within %s", within)
	}
	return nil
}

// tcStop runs Stop with a guard: a Stop that does not return is reported, and unblock is
// then called so the test can clean up.
func tcStop(t *testing.T, c *Child, within time.Duration, unblock func()) (Exit, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan Exit, 1)
	go func() { done <- c.Stop(context.Background()) }()
	select {
	case e := <-done:
		return e, time.Since(start)
	case <-time.After(within):
		t.Errorf("Stop did not return within %s", within)
		if unblock != nil {
			unblock()
		}
		return <-done, time.Since(start)
	}
}

// D: close stdin, wait: a server that exits at EOF ends cleanly, before any signal.
func TestChildStopClosesStdinFirst(t *testing.T) {
	c, _ := tcStart(t, "echo", &ChildOptions{StopWait: 5 * time.Second})
	if err := c.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)); err != nil {
		t.Fatal(err)
	}
	if f := tcFrame(t, c, 10*time.Second); !strings.Contains(string(f), `"text":"hi"`) {
		t.Fatalf("answer = %s", f)
	}
	exit, took := tcStop(t, c, 10*time.Second, nil)
	if exit.Failed() || exit.Code != 0 || exit.Signal != 0 {
		t.Errorf("exit = %v, want a clean exit with code 0", exit)
	}
	if took >= 5*time.Second {
		t.Errorf("Stop took %s: it waited for the SIGTERM step although the child exits at EOF", took)
	}
	if err := c.Send([]byte(`{}`)); err == nil {
		t.Error("Send after Stop succeeded")
	}
	tcNoProcessesLeft(t)
}

// D: a child that ignores EOF but not SIGTERM ends with SIGTERM after one wait.
func TestChildStopSendsSIGTERMAfterWait(t *testing.T) {
	const wait = 150 * time.Millisecond
	c, _ := tcStart(t, "echo,ignore-eof", &ChildOptions{StopWait: wait})
	exit, took := tcStop(t, c, 10*time.Second, nil)
	if exit.Signal != syscall.SIGTERM || exit.Code != -1 {
		t.Errorf("exit = %+v, want killed by SIGTERM", exit)
	}
	if took < wait || took > wait+2*time.Second {
		t.Errorf("Stop took %s, want about one StopWait (%s)", took, wait)
	}
	tcNoProcessesLeft(t)
}

// D: a child that ignores both EOF and SIGTERM is killed with SIGKILL after two waits.
func TestChildStopSIGKILLsAChildIgnoringSIGTERM(t *testing.T) {
	const wait = 150 * time.Millisecond
	c, _ := tcStart(t, "echo,ignore-eof,ignore-term", &ChildOptions{StopWait: wait})
	exit, took := tcStop(t, c, 10*time.Second, nil)
	if exit.Signal != syscall.SIGKILL || !exit.Failed() {
		t.Errorf("exit = %+v, want killed by SIGKILL", exit)
	}
	if took < 2*wait {
		t.Errorf("Stop took %s, want at least two StopWaits (%s)", took, 2*wait)
	}
	tcNoProcessesLeft(t)
}

// Stop with a context that ends kills at once.
func TestChildStopContextKillsAtOnce(t *testing.T) {
	c, _ := tcStart(t, "echo,ignore-eof,ignore-term", &ChildOptions{StopWait: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	exit := c.Stop(ctx)
	if exit.Signal != syscall.SIGKILL {
		t.Errorf("exit = %+v, want SIGKILL", exit)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Stop took %s with a context of 100 ms", took)
	}
	tcNoProcessesLeft(t)
}

// A child that exits on its own reports its code on Done, without Stop.
func TestChildExitCodeDelivered(t *testing.T) {
	c, _ := tcStart(t, "echo", nil)
	c.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exit","arguments":{"code":3}}}`))
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the child exited")
	}
	if e := c.Exit(); e.Code != 3 || e.Signal != 0 || !e.Failed() {
		t.Errorf("exit = %+v, want code 3", e)
	}
	if _, ok := <-c.Frames(); ok {
		t.Error("Frames not closed after exit")
	}
	if err := c.Send([]byte(`{}`)); err == nil {
		t.Error("Send to an exited child succeeded")
	}
	tcNoProcessesLeft(t)
}

// D (nothing left running): a grandchild that called setsid, out of the child's group, is
// killed and reaped when the child stops. Its stdio is /dev/null.
func TestChildStopKillsSetsidGrandchild(t *testing.T) {
	for _, mode := range []string{"echo,spawn=devnull", "echo,spawn=devnull,ignore-eof,ignore-term"} {
		t.Run(mode, func(t *testing.T) {
			c, gpid := tcStart(t, mode, &ChildOptions{StopWait: 100 * time.Millisecond})
			tcCheckGrandchild(t, c, gpid)
		})
	}
}

// The same with a grandchild that inherited the child's stdout and stderr, as a daemon
// started without redirection does: it holds the pipes open after the child is gone.
func TestChildStopKillsSetsidGrandchildHoldingStdout(t *testing.T) {
	for _, mode := range []string{"echo,spawn=inherit", "echo,spawn=inherit,ignore-eof,ignore-term"} {
		t.Run(mode, func(t *testing.T) {
			c, gpid := tcStart(t, mode, &ChildOptions{StopWait: 100 * time.Millisecond})
			tcCheckGrandchild(t, c, gpid)
		})
	}
}

// tcOrphanZombie reports whether pid is, on the portable path (macOS, the BSDs, or Linux
// with its extras off), a zombie re-parented past the guard: with no subreaper its new
// parent (init, launchd) reaps it, not Relay. On Linux's own path a guard is the reaper, and
// a zombie left is a failure.
func tcOrphanZombie(pid int) bool {
	st, ppid, _ := tcStat(pid)
	return (portable || runtime.GOOS != "linux") && st == 'Z' && ppid != os.Getpid()
}

func tcCheckGrandchild(t *testing.T, c *Child, gpid int) {
	t.Helper()
	if gpid == 0 || tcState(gpid) == 0 {
		t.Fatalf("the grandchild (pid %d) is not running", gpid)
	}
	if sid, _, _ := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(gpid), 0, 0); int(sid) != gpid {
		t.Fatalf("the grandchild's session is %d, want its own (%d)", sid, gpid)
	}
	_, took := tcStop(t, c, 2*time.Second, func() {
		killPid(gpid)
		var ws syscall.WaitStatus
		syscall.Wait4(gpid, &ws, 0, nil)
	})
	switch st := tcState(gpid); {
	case st == 0 || tcOrphanZombie(gpid):
	case st == 'Z':
		t.Errorf("the setsid grandchild %d is a zombie after Stop", gpid)
	default:
		t.Errorf("the setsid grandchild %d is still running after Stop (state %c)", gpid, st)
	}
	t.Logf("Stop took %s", took)
	tcNoProcessesLeft(t)
}

// A child that started a process and never waited for it leaves a zombie; when the child
// exits the zombie is re-parented to this process (the subreaper), which must reap it.
func TestChildStopReapsOrphanedZombie(t *testing.T) {
	c, gpid := tcStart(t, "echo,spawn=zombie", &ChildOptions{StopWait: 100 * time.Millisecond})
	if st, ppid, _ := tcStat(gpid); st != 'Z' || ppid != c.PID() {
		t.Fatalf("grandchild %d: state %c parent %d, want a zombie of the child %d", gpid, st, ppid, c.PID())
	}
	tcStop(t, c, 5*time.Second, nil)
	if st := tcState(gpid); st != 0 && !tcOrphanZombie(gpid) {
		t.Errorf("the orphaned grandchild %d is left in state %c after Stop: re-parented to the subreaper and never reaped", gpid, st)
		tcCleanupProcesses(map[int]byte{gpid: st})
	}
	tcNoProcessesLeft(t)
}

// stderr is drained whatever the child writes there: 1 MiB before an answer, or a single
// line longer than the logger's limit, never blocks the child.
func TestChildStderrNeverBlocks(t *testing.T) {
	for _, mode := range []string{"echo,noisy", "echo,noisy-line"} {
		t.Run(mode, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			c, _ := tcStart(t, mode, &ChildOptions{StopWait: time.Second, Logger: zap.New(core)})
			for i := 0; i < 3; i++ {
				c.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"loud"}}}`))
				if f := tcFrame(t, c, 10*time.Second); !strings.Contains(string(f), `"loud"`) {
					t.Fatalf("answer = %s", f)
				}
			}
			if exit, _ := tcStop(t, c, 10*time.Second, nil); exit.Failed() {
				t.Errorf("exit = %v", exit)
			}
			n := logs.FilterField(zap.String("stream", "stderr")).Len()
			if mode == "echo,noisy" && n < 3*1024 {
				t.Errorf("%d stderr lines logged, want all %d", n, 3*1024)
			}
			tcNoProcessesLeft(t)
		})
	}
}

// StartChild of a program that does not exist fails, and leaves nothing behind.
func TestChildStartFails(t *testing.T) {
	if _, err := StartChild(Command{Path: "/nonexistent/relay-test-server"}, nil); err == nil {
		t.Fatal("StartChild of a missing program succeeded")
	}
	tcNoProcessesLeft(t)
}

// A Child whose frames nobody reads still ends: a Supervisor over a child that prints 1,000
// lines, whose owner only reads events, stops when asked. (Done used to wait for every
// frame to be taken, and the stdout reader waited for a reader that never came.)
func TestChildEndsWhenNobodyReadsItsFrames(t *testing.T) {
	sup := New(Spec{Command: tcCommand(t, "echo,lines=1000", ""), Restart: Never,
		Child: ChildOptions{StopWait: 200 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- sup.Run(ctx) }()
	started := make(chan *Child, 1)
	go func() { // the owner reads events only
		for e := range sup.Events() {
			if e.Kind == EventStarted {
				started <- e.Child
				cancel() // stop it: close stdin (it exits at EOF), with 1,000 frames unread
			}
		}
	}()
	var child *Child
	select {
	case child = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("no child started")
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return: the child never ended")
	}
	if child == nil {
		t.Fatal("no child started")
	}
	t.Logf("the child ended: %v", child.Exit()) // at EOF, or by SIGTERM when blocked on its stdout
	// Frames is closed: the reader ended too.
	for range child.Frames() {
	}
	tcNoProcessesLeft(t)
}

// CloseStdin may be called from several goroutines at once (Stop, and the stdin writer
// when a write fails): it closes once. (It checked, then closed, so two callers could both
// close.)
func TestChildCloseStdinConcurrently(t *testing.T) {
	for range 2000 {
		c := &Child{closed: make(chan struct{}), out: stdio.NewOutbox(1 << 20)}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				<-start
				c.CloseStdin()
			})
		}
		close(start)
		wg.Wait()
		select {
		case <-c.closed:
		default:
			t.Fatal("CloseStdin did not close")
		}
	}
}
