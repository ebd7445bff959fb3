// Package httpx serves Relay's protocols over HTTP: MCP's Streamable HTTP, both generations,
// and RCP/1's HTTP binding, as thin adapters over the same runtime dispatcher stdio uses.
//
//   - MCP 2026-07-28 (stateless): every POST is a connection of its own. Its one request runs
//     in a fresh dispatcher; frames that belong to the request (progress, logs) switch the
//     reply from one JSON object to an SSE stream when the client accepts one; the final
//     response ends the reply. Closing the stream cancels the request (a cancel message to
//     the dispatcher, as on stdio). No session is minted, echoed or required.
//   - MCP's initialize generation (2025-03-26, 2025-06-18, 2025-11-25): initialize mints a
//     random Mcp-Session-Id, and that session's requests share one long-lived dispatcher, so
//     legacy state (log level, subscriptions, server-to-client requests and the client's
//     POSTed answers) lives exactly where it does on stdio.
//   - RCP/1 (POST <base>/<method>): stateless by default, every request in a dispatcher of
//     its own; in session mode, initialize opens a session as MCP's does.
//
// Both protocols enter through one door (entry.go): the endpoint, Host and Origin, CORS,
// authentication, the rate limit, the body, the in-flight slot, then the protocol's dispatch,
// whose answer goes back through one streaming loop (respond.go). What differs between them
// is a small protocol interface.
//
// Security is on by default: Origin is checked on every request (absent, or a loopback origin
// on any port, is allowed; others only when configured), Host must name a loopback address
// unless other hosts are configured, and an Authenticator, when set, runs before the body is
// read and puts the principal in the request's context.
//
// Admission is bounded everywhere a client could hold what others need (admission.go):
// connections (ServerOptions.MaxConns, in Serve), the time a body may take (BodyTimeout), its
// size (MaxBody, refused from its Content-Length before it is read), the bytes of all bodies
// held at once (BodyBudget, and an eighth of it per client), the requests served at once (MaxInFlight, a slot taken only once
// the body is in), and sessions, in all and per client (MaxSessions, MaxSessionsPerClient).
// When the session table is full, the session that has waited longest on its client (idle,
// or holding a server-to-client request unanswered) is evicted; sessions are never locked up
// by clients that do not answer. Each limit and its default is documented on its option.
//
// A handler owns its sessions: each is an actor (session.go) that a handler's Close ends and
// waits for, those evicted, expired or deleted before included.
//
// Instances of a fleet (MCPOptions.SessionStore and Bus; package fleet's on Redis) serve each
// other's initialize-generation sessions behind a balancer with no affinity (fleet.go): each
// instance runs a replica of a session whose requests reach it, started from the session's
// record and handed the state another instance saved; what only one replica can act on (an
// answer to a request of the server's, a cancel, a resumed stream) goes to it on the bus.
package httpx
