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

// A message that names no request goes to the one call in flight that may be asked for: not
// to a listen or a ping beside it, not when there are two, and not to a call that was in
// flight beside one given up a moment ago (the message may be the one given up's); a call
// made after it was given up gets it.
func TestOnlyCall_WhoseMessageItIs(t *testing.T) {
	now := time.Now()
	tool := &streamCall{asks: true, since: now.Add(-time.Second)}
	other := map[string]*streamCall{"listen": {since: now}, "ping": {since: now}}
	s := &stream{}
	calls := map[string]*streamCall{"tool": tool}
	for k, v := range other {
		calls[k] = v
	}
	if got := s.onlyCall(calls); got != tool {
		t.Errorf("one tool call beside a listen and a ping: %v, want the tool call", got)
	}
	calls["second"] = &streamCall{asks: true, since: now}
	if got := s.onlyCall(calls); got != nil {
		t.Errorf("two calls that may be asked for: %v, want none", got)
	}
	delete(calls, "second")
	s.forgot = now // "second" was given up just now, while tool was in flight
	if got := s.onlyCall(calls); got != nil {
		t.Errorf("the call beside one given up a moment ago: %v, want none", got)
	}
	later := &streamCall{asks: true, since: now.Add(time.Millisecond)}
	if got := s.onlyCall(map[string]*streamCall{"later": later}); got != later {
		t.Errorf("a call made after the one given up: %v, want it", got)
	}
	s.forgot = now.Add(-forgetGrace - time.Second)
	if got := s.onlyCall(calls); got != tool {
		t.Errorf("long after: %v, want the tool call", got)
	}
}
