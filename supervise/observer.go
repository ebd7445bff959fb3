package supervise

import (
	"encoding/json"

	"github.com/relayrt/relay/jsonrpc"
)

// Observer is told by a proxy what becomes of each host request and of its children: what
// telemetry needs (telemetry.Telemetry.Proxy returns one that makes OpenTelemetry spans). The
// proxy calls it on its own actor, one call at a time: its methods must return quickly.
type Observer interface {
	// Request is called when the proxy takes a host request to pass on. It returns the
	// params to send to the child instead (carrying a client span's trace context in _meta,
	// say), and the Call that follows the request.
	Request(method string, params json.RawMessage) (json.RawMessage, Call)
	// Restarting is called when a child has exited (exit says how) and the supervisor will
	// start another, the restarts-th; Started when a child has started. The time between
	// them is a restart.
	Restarting(exit string, restarts int)
	Started()
	// Stopped is called when the proxy is done with children: the supervisor gave up (err
	// says why) or the proxy ended (err nil). A restart under way ends there.
	Stopped(err error)
	// Upgrade is called when an upgrade starts (see Supervisor.Upgrade), with the reason it
	// was asked for; the proxy calls the function it returns once, when the upgrade ends (err
	// nil: the new child serves; else why the old one still does).
	Upgrade(reason string) (end func(err error))
}

// Call follows one host request through a proxy.
type Call interface {
	// Replayed is called each time the request is sent again, to a new child.
	Replayed()
	// Ended is called once, when the proxy is done with the request: the host was answered
	// (answer is the JSON-RPC error it was given, nil for a result), or it cancelled the
	// request (cancelled true; MCP answers nothing then).
	Ended(answer *jsonrpc.Error, cancelled bool)
}
