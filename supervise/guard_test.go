//go:build unix

package supervise

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tcSupervisorEnv turns the test binary into a supervisor of one child (see
// runTestSupervisor), for tests that kill the supervisor itself.
const tcSupervisorEnv = "SUPERVISE_TEST_SUPERVISOR"

// runTestSupervisor starts a child whose family has every shape: a shell's background job
// in the child's group, an orphan whose parent exited at once, and (the child itself, the
// test binary) a grandchild that called setsid. It writes "pids CHILD SETSID GROUP ORPHAN"
// to stdout, then waits to be killed.
func runTestSupervisor(dir string) int {
	exe, _ := os.Executable()
	script := fmt.Sprintf(`sleep 5001 & echo $! > %[1]s/group; (sleep 5003 & echo $! > %[1]s/orphan); exec %[2]s`, dir, exe)
	cmd := tcCommand(nil, "echo,spawn=devnull", "")
	cmd.Path, cmd.Args = "/bin/sh", []string{"-c", script}
	c, err := StartChild(cmd, nil)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	hello := <-c.Frames()
	var pid, gpid int
	if _, err := fmt.Sscanf(string(hello), `{"jsonrpc":"2.0","method":"hello","params":{"grandchild":%d,"pid":%d}}`, &gpid, &pid); err != nil {
		fmt.Println("error", string(hello))
		return 1
	}
	read := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	fmt.Println("pids", pid, gpid, read("group"), read("orphan"))
	time.Sleep(time.Hour)
	return 0
}

// The supervisor's own death ends the child's whole family: the supervisor is killed with
// SIGKILL, so nothing of its own runs, and its guard ends the child, the setsid grandchild,
// the background job of its group and the orphan that left it.
func TestSupervisorDeathEndsTheWholeFamily(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sup := exec.Command(exe)
	sup.Env = append(os.Environ(), tcSupervisorEnv+"="+t.TempDir(), tcGorace())
	out, err := sup.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	sup.Stderr = os.Stderr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	var pids [4]int
	select {
	case s := <-line:
		if n, _ := fmt.Sscanf(s, "pids %d %d %d %d", &pids[0], &pids[1], &pids[2], &pids[3]); n != 4 || pids[0] == 0 || pids[1] == 0 || pids[2] == 0 || pids[3] == 0 {
			sup.Process.Kill()
			sup.Wait()
			t.Fatalf("the supervisor said %q", s)
		}
	case <-time.After(20 * time.Second):
		sup.Process.Kill()
		sup.Wait()
		t.Fatal("the supervisor did not report its child's family")
	}
	names := []string{"child", "setsid grandchild", "background job in the group", "orphan"}
	for i, pid := range pids {
		if tcDead(pid) {
			t.Fatalf("the %s (pid %d) is not running before the supervisor is killed", names[i], pid)
		}
	}
	sup.Process.Signal(syscall.SIGKILL)
	sup.Wait()
	for i, pid := range pids {
		deadline := time.Now().Add(5 * time.Second)
		for !tcDead(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if !tcDead(pid) {
			t.Errorf("the %s (pid %d) outlived the supervisor killed with SIGKILL", names[i], pid)
			killPid(pid)
		}
	}
}

// tcDead reports whether pid has ended: it no longer exists, or it is a zombie that is not
// this process's to reap (with no subreaper, an orphan's zombie is its new parent's).
func tcDead(pid int) bool {
	st, ppid, ok := tcStat(pid)
	return !ok || (st == 'Z' && ppid != os.Getpid())
}

// The path macOS and the BSDs take — process groups, the descendant walk, the mark, the
// guard, no subreaper and no PR_SET_PDEATHSIG — runs here too: the child scenarios again,
// in a copy of this test binary with the Linux-only extras switched off.
func TestPortableUnixPath(t *testing.T) {
	if portable {
		t.Skip("this is the portable run")
	}
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has extras to switch off")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^(TestChild|TestSupervisorDeath|TestSupervisorCancel|TestProxy)", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), tcPortableEnv+"=1")
	out, err := cmd.CombinedOutput()
	passed := strings.Count(string(out), "--- PASS")
	if err != nil {
		t.Fatalf("on the portable path: %v\n%s", err, out)
	}
	if passed < 15 {
		t.Fatalf("only %d tests passed on the portable path:\n%s", passed, out)
	}
	t.Logf("%d tests passed on the portable path", passed)
}
