package main

import (
	"strings"
	"testing"
)

// relay bridge --help names and explains the session flags and --exit-on-give-up.
func TestBridgeHelpNamesTheSessionFlags(t *testing.T) {
	code, out, errOut := rtRunOnce(t, "bridge", "--help")
	if code != 0 {
		t.Errorf("relay bridge --help exited %d, want 0", code)
	}
	usage := out + errOut
	for _, want := range []string{"Usage: relay bridge [flags] -- CMD", "-max-sessions", "-spares", "-session-idle",
		"-exit-on-give-up", "-pool", "a child process of its own", "-auth-issuer", "-auth-audience"} {
		if !strings.Contains(usage, want) {
			t.Errorf("relay bridge --help does not mention %q:\n%s", want, usage)
		}
	}
}

// Session flags out of range are refused before anything starts, with exit status 2.
func TestBridgeRefusesBadSessionFlags(t *testing.T) {
	for _, flags := range [][]string{{"--max-sessions", "0"}, {"--spares", "-1"}, {"--session-idle", "0s"}} {
		args := append(append([]string{"bridge", "--listen", "127.0.0.1:0"}, flags...), "--", "true")
		code, _, errOut := rtRunOnce(t, args...)
		if code != 2 || !strings.Contains(errOut, "relay bridge: ") {
			t.Errorf("relay bridge %v: exit %d, %q; want 2 and an error", flags, code, errOut)
		}
	}
}
