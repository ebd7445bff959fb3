package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// On Windows every child runs in a job object that kills all its processes when its last
// handle closes (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE): the supervisor holds that handle, so
// the child and all its descendants die with the supervisor, even one killed outright. The
// child starts suspended and runs no code before it is in the job.

const guardSupported = false // the job object does a guard's work

func runGuard([]string) int { return 2 } // never reached: GuardMain enables no guard here

var portable bool

var getConsoleWindow = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetConsoleWindow")

// hasConsole reports whether this process has a console, which the child then shares.
// Hosts often start relay without one.
func hasConsole() bool {
	h, _, _ := getConsoleWindow.Call()
	return h != 0
}

func launch(c *exec.Cmd, mark string) (*process, error) {
	console := hasConsole()
	attrs := &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED}
	if !console {
		attrs.CreationFlags |= windows.CREATE_NO_WINDOW // no console window pops up for it
	}
	if isBatch(c.Path) {
		comspec := os.Getenv("ComSpec")
		if comspec == "" {
			comspec = filepath.Join(os.Getenv("SystemRoot"), "System32", "cmd.exe")
		}
		line, err := batchCommandLine(comspec, c.Path, c.Args[1:])
		if err != nil {
			return nil, err
		}
		c.Path, attrs.CmdLine = comspec, line
	}
	c.SysProcAttr = attrs
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot create a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("cannot set up a job object: %w", err)
	}
	if err := c.Start(); err != nil {
		windows.CloseHandle(job)
		return nil, err
	}
	pid := c.Process.Pid
	if err := runInJob(job, pid); err != nil {
		c.Process.Kill()
		c.Wait()
		windows.CloseHandle(job)
		return nil, fmt.Errorf("cannot run it in a job object: %w", err)
	}
	f := &jobFamily{job: job, pid: pid, console: console}
	return &process{pid: pid, fam: f, wait: func() Exit { return exitOf(c.Wait()) }}, nil
}

// runInJob puts the suspended process pid in job, then resumes its threads.
func runInJob(job windows.Handle, pid int) error {
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return err
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		return err
	}
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != uint32(pid) {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return err
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return err
		}
		resumed++
	}
	if resumed == 0 {
		return fmt.Errorf("no thread of process %d to resume", pid)
	}
	return nil
}

// jobFamily is a child in its job object.
type jobFamily struct {
	job     windows.Handle
	pid     int
	console bool
	once    sync.Once
}

// terminate sends CTRL_BREAK_EVENT to the child's process group, which only reaches it
// when it shares this process's console; without one this step only waits.
func (f *jobFamily) terminate() {
	if f.console {
		windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(f.pid))
	}
}

func (f *jobFamily) kill() { windows.TerminateJobObject(f.job, 1) }

func (f *jobFamily) release() {
	f.once.Do(func() {
		windows.TerminateJobObject(f.job, 1)
		windows.CloseHandle(f.job)
	})
}
