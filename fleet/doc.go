// Package fleet keeps the state that a fleet of Relay instances shares, on Redis, so that any
// instance serves any request: the SSE events of sessions, for resumption on any instance
// (EventStore, an httpx.EventStore), tasks (TaskStore, an mcp.TaskStore), and the messages
// the instances tell each other (Bus, an mcp.Bus).
//
// Open connects; every key and channel begins with Options.Prefix. While Redis is down,
// calls fail, within Options.Timeout, with an error wrapping ErrUnavailable, and succeed
// again once it is back: the client reconnects by itself. A Bus subscription does not
// survive the loss: its channel closes, and the subscriber subscribes again.
//
// The tests run against a real redis-server (internal/redistest); the stores pass the same
// suites as the memory ones (internal/storetest).
package fleet
