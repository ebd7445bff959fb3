package supervise

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// The Unix process tests need signals, process groups and a process table; on Windows the
// job object is tested here, with the test binary as the child (tcWinEnv).
const tcWinEnv = "SUPERVISE_TEST_WINCHILD"

// runTestChildIfAsked turns the binary into a child when tcWinEnv says so: "sleep" sleeps;
// "parent" starts a "sleep" grandchild, says hello with both pids, and exits at EOF on
// stdin; "parent,ignore-eof" sleeps on after EOF.
func runTestChildIfAsked() {
	mode, ok := os.LookupEnv(tcWinEnv)
	if !ok {
		return
	}
	if mode == "sleep" {
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	exe, _ := os.Executable()
	g := exec.Command(exe)
	g.Env = append(os.Environ(), tcWinEnv+"=sleep")
	if err := g.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf(`{"jsonrpc":"2.0","method":"hello","params":{"pid":%d,"grandchild":%d}}`+"\n", os.Getpid(), g.Process.Pid)
	bufio.NewReader(os.Stdin).ReadString(0) // until EOF
	if mode == "parent,ignore-eof" {
		time.Sleep(time.Hour)
	}
	os.Exit(0)
}

func winStart(t *testing.T, mode string) (c *Child, grandchild int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err = StartChild(Command{Path: exe, Env: append(os.Environ(), tcWinEnv+"="+mode)}, &ChildOptions{StopWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-c.Frames():
		var hello struct{ Params struct{ PID, Grandchild int } }
		if err := json.Unmarshal(f, &hello); err != nil || hello.Params.PID != c.PID() {
			c.Stop(context.Background())
			t.Fatalf("hello = %s, want one from pid %d", f, c.PID())
		}
		return c, hello.Params.Grandchild
	case <-time.After(20 * time.Second):
		c.Stop(context.Background())
		t.Fatal("no hello from the child")
	}
	return nil, 0
}

// winAlive reports whether pid runs.
func winAlive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code == 259 // STILL_ACTIVE
}

func winGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for winAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if winAlive(pid) {
		t.Errorf("the %s (pid %d) still runs", what, pid)
	}
}

// A child that exits at EOF: Stop closes stdin, it exits, and its grandchild dies with its
// job.
func TestJobStopAtEOFEndsTheGrandchild(t *testing.T) {
	c, g := winStart(t, "parent")
	if !winAlive(g) {
		t.Fatalf("the grandchild %d is not running", g)
	}
	if e := c.Stop(context.Background()); e.Failed() {
		t.Errorf("exit = %v, want a clean exit at EOF", e)
	}
	winGone(t, "grandchild", g)
}

// A child that ignores EOF ends by CTRL_BREAK_EVENT where the test has a console, else
// when the job is terminated; either way its grandchild goes with the job.
func TestJobStopTerminatesTheJob(t *testing.T) {
	c, g := winStart(t, "parent,ignore-eof")
	e := c.Stop(context.Background())
	if !e.Failed() {
		t.Errorf("exit = %v, want the job's termination", e)
	}
	winGone(t, "child", c.PID())
	winGone(t, "grandchild", g)
}
