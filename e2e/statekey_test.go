package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// echo -help names -state-key-file and $RELAY_STATE_KEY, and a key shorter than 32 bytes is
// refused at start with exit status 2 and a word on how to make one.
func TestEchoStateKeyFlag(t *testing.T) {
	out, _ := exec.Command(echoBin, "-help").CombinedOutput()
	for _, want := range []string{"-state-key-file PATH", "RELAY_STATE_KEY", "at least 32 bytes"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("echo -help does not say %q:\n%s", want, out)
		}
	}
	short := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(short, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(echoBin, "-http", "127.0.0.1:0", "-state-key-file", short)
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "head -c 32 /dev/urandom") {
		t.Errorf("echo with a 5-byte key: exit %d, %q; want 2 and how to make a key", cmd.ProcessState.ExitCode(), out)
	}
}
