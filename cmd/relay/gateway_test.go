package main

import (
	"strings"
	"testing"
)

// relay gateway --help explains the configuration, the "relay" options, the fleet and what
// is not done yet; without --config, or with --redis on stdio, it refuses to start, with
// exit status 2.
func TestGatewayHelpAndMissingConfig(t *testing.T) {
	code, out, errOut := rtRunOnce(t, "gateway", "--help")
	if code != 0 {
		t.Errorf("relay gateway --help exited %d, want 0", code)
	}
	usage := out + errOut
	for _, want := range []string{"Usage: relay gateway --config FILE", "mcpServers", `"relay"`, "PREFIX__NAME", "-listen", "-separator", "Not yet",
		"-state-key-file PATH", "RELAY_STATE_KEY", "at least 32 bytes", "-redis URL", "RELAY_REDIS_URL", "-instance NAME"} {
		if !strings.Contains(usage, want) {
			t.Errorf("relay gateway --help does not mention %q:\n%s", want, usage)
		}
	}
	if code, _, errOut := rtRunOnce(t, "gateway"); code != 2 || !strings.Contains(errOut, "--config") {
		t.Errorf("relay gateway without --config: exit %d, %q; want 2 and a word on --config", code, errOut)
	}
	if code, _, errOut := rtRunOnce(t, "gateway", "--config", "servers.json", "--redis", "redis://127.0.0.1:1"); code != 2 || !strings.Contains(errOut, "goes with --listen") {
		t.Errorf("relay gateway --redis on stdio: exit %d, %q; want 2 and a word on --listen", code, errOut)
	}
	// $RELAY_REDIS_URL is not a stdio gateway's: it goes on to read its configuration.
	t.Setenv("RELAY_REDIS_URL", "redis://127.0.0.1:1")
	if code, _, errOut := rtRunOnce(t, "gateway", "--config", "no-such-file.json"); code != 2 || !strings.Contains(errOut, "no-such-file.json") {
		t.Errorf("relay gateway on stdio with $RELAY_REDIS_URL set: exit %d, %q; want it to read its configuration", code, errOut)
	}
}
