package client

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
)

// TestParamHeadersMirrorIntegersExactly: an integer argument is mirrored in plain decimal when
// that is exact, and as written otherwise, never rounded through float64 (MCP 2026-07-28,
// Transports › Streamable HTTP: the server compares the header with the argument exactly).
func TestParamHeadersMirrorIntegersExactly(t *testing.T) {
	hp := []mcp.HeaderParam{{Header: "Count", Path: []string{"count"}, Type: "integer"}}
	for body, want := range map[string]string{
		`{"count":42}`:                 "42",
		`{"count":42.0}`:               "42",
		`{"count":0E0000}`:             "0",
		`{"count":-7e1}`:               "-70",
		`{"count":9007199254740993}`:   "9007199254740993",
		`{"count":9007199254740993.0}`: "9007199254740993.0",
	} {
		if got := paramHeaders(hp, json.RawMessage(body))["Mcp-Param-Count"]; got != want {
			t.Errorf("%s: Mcp-Param-Count = %q, want %q", body, got, want)
		}
	}
}

// TestReconnectDelayIsBounded: the retry a server gives is held within bounds (HTML,
// Server-sent events: the reconnection time is the server's to set, and the client's to
// bound): 0 is no tight loop, a year no stall.
func TestReconnectDelayIsBounded(t *testing.T) {
	for retry, want := range map[time.Duration]time.Duration{
		0: minReconnect, time.Millisecond: minReconnect, 500 * time.Millisecond: 500 * time.Millisecond,
		time.Minute: time.Minute, 365 * 24 * time.Hour: maxReconnect, -time.Second: minReconnect,
	} {
		if got := reconnectDelay(retry); got != want {
			t.Errorf("reconnectDelay(%s) = %s, want %s", retry, got, want)
		}
	}
}
