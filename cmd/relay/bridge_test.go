package main

import (
	"os"
	"os/exec"
	"path/filepath"
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
		"-exit-on-give-up", "-pool", "a child process of its own", "-auth-issuer", "-auth-audience",
		"-state-key-file PATH", "RELAY_STATE_KEY", "at least 32 bytes", "-redis URL", "RELAY_REDIS_URL", "-instance NAME",
		"affinity on Mcp-Session-Id"} {
		if !strings.Contains(usage, want) {
			t.Errorf("relay bridge --help does not mention %q:\n%s", want, usage)
		}
	}
}

// relay bridge --redis over a CMD of the initialize generation is refused, with exit status
// 2: each session lives in a child of its own, in one instance, and no other can serve it.
// (Redis is never reached: an instance joins its fleet without waiting for it.) So are an
// instance name that is not one and a Redis URL that is not one.
func TestBridgeRefusesRedisForChildrenOfTheInitializeGeneration(t *testing.T) {
	t.Setenv(rtChildEnv, "legacy")
	code, _, errOut := rtRunOnce(t, append([]string{"bridge", "--listen", "127.0.0.1:0", "--redis", "redis://127.0.0.1:1", "--"}, rtSelf(t)...)...)
	if code != 2 || !strings.Contains(errOut, "affinity on Mcp-Session-Id") {
		t.Errorf("relay bridge --redis over a child of the initialize generation: exit %d, %q; want 2 and a word on affinity", code, errOut)
	}
	if code, _, errOut := rtRunOnce(t, "bridge", "--instance", "a.b", "--", "true"); code != 2 || !strings.Contains(errOut, "letters and digits") {
		t.Errorf("relay bridge --instance a.b: exit %d, %q; want 2 and a word on the name", code, errOut)
	}
	// A Redis URL that cannot be one is told before any child starts.
	if code, _, errOut := rtRunOnce(t, "bridge", "--redis", "http://127.0.0.1:1", "--", "no-such-command"); code != 2 || !strings.Contains(errOut, "Redis URL") {
		t.Errorf("relay bridge --redis http://…: exit %d, %q; want 2 and a word on the URL", code, errOut)
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

// A state key that is too short, or given both by --state-key-file and $RELAY_STATE_KEY, is
// refused before anything starts, with exit status 2 and an error that says what to do.
func TestBridgeAndGatewayRefuseABadStateKey(t *testing.T) {
	dir := t.TempDir()
	short, good := filepath.Join(dir, "short"), filepath.Join(dir, "good")
	os.WriteFile(short, []byte("sixteen-byte-key\n"), 0o600)
	os.WriteFile(good, []byte(strings.Repeat("0123456789abcdef", 4)+"\n"), 0o600)
	config := filepath.Join(dir, "servers.json")
	os.WriteFile(config, []byte(`{"mcpServers": {"echo": {"command": "true"}}}`), 0o600)
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"bridge", "--listen", "127.0.0.1:0", "--state-key-file", short, "--", "true"}, "", "head -c 32 /dev/urandom"},
		{[]string{"bridge", "--listen", "127.0.0.1:0", "--", "true"}, "too short", "head -c 32 /dev/urandom"},
		{[]string{"bridge", "--listen", "127.0.0.1:0", "--state-key-file", good, "--", "true"}, strings.Repeat("k", 40), "one way"},
		{[]string{"gateway", "--config", config, "--state-key-file", filepath.Join(dir, "none")}, "", "does not exist"},
		{[]string{"gateway", "--config", config, "--state-key-file", good}, strings.Repeat("k", 40), "one way"},
	} {
		cmd := exec.Command(rtBin, tc.args...)
		cmd.Env = append(os.Environ(), "RELAY_STATE_KEY="+tc.env)
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "relay "+tc.args[0]+": ") ||
			!strings.Contains(string(out), tc.want) {
			t.Errorf("relay %v with RELAY_STATE_KEY=%q: exit %d, %q; want 2 and an error saying %q", tc.args, tc.env, code, out, tc.want)
		}
	}
}
