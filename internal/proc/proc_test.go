package proc

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	line := "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 120 0 0 0 1 2 0 0 20 0 1 0 98765 1234 56 rest\n"
	st, ok := parse(4242, line)
	if !ok || st.Comm != "a (b) c" || st.State != 'S' || st.PPID != 17 || st.PGRP != 4242 || st.Start != 98765 {
		t.Fatalf("parse = %+v, %v", st, ok)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 2", "1 (x) S two 3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5"} {
		if _, ok := parse(1, bad); ok {
			t.Errorf("parse(%q) succeeded", bad)
		}
	}
}

// A real child appears among this process's children with its name, and reads as absent once
// it has been waited for.
func TestReadAndChildren(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	me, ok := Read(os.Getpid())
	if !ok || me.PID != os.Getpid() || me.PPID != os.Getppid() || me.Start == 0 {
		t.Fatalf("Read(self) = %+v, %v", me, ok)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	pid := cmd.Process.Pid
	found := false
	for _, c := range Children(os.Getpid()) {
		if c.PID == pid && c.Comm == "sleep" && c.Alive() {
			found = true
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !found {
		t.Errorf("the sleep child %d is not among Children(self)", pid)
	}
	if st, ok := Read(pid); ok {
		t.Errorf("a waited-for child still reads as %+v", st)
	}
}

// FuzzParse: any stat line is read without panicking, and what is read is consistent with it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"4242 (a (b) c) S 17 4242 4242 0 -1 4194560 120 0 0 0 1 2 0 0 20 0 1 0 98765 1234 56 rest\n",
		"1 (systemd) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0",
		"7 () Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0",
		"", "(", ")(", "1 (x) S",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		st, ok := parse(7, line)
		if !ok {
			return
		}
		if st.PID != 7 || !strings.Contains(line, "("+st.Comm+")") || st.State == 0 {
			t.Fatalf("parse(%q) = %+v", line, st)
		}
	})
}
