// Package httpx serves Relay's protocols over HTTP. This file set holds MCP's Streamable
// HTTP for both generations, as a thin adapter over the same runtime dispatcher stdio uses:
//
//   - 2026-07-28 (stateless): every POST is a connection of its own. Its one request runs in a
//     fresh dispatcher; frames that belong to the request (progress, logs) switch the reply
//     from one JSON object to an SSE stream when the client accepts one; the final response
//     ends the reply. Closing the stream cancels the request (a cancel message to the
//     dispatcher, as on stdio). No session is minted, echoed or required.
//   - the initialize generation (2025-03-26, 2025-06-18, 2025-11-25): initialize mints a
//     random Mcp-Session-Id, and that session's requests share one long-lived dispatcher, so
//     legacy state (log level, subscriptions, server-to-client requests and the client's
//     POSTed answers) lives exactly where it does on stdio. Sessions are bounded, expire when
//     idle, and the least recently used idle one is evicted first.
//
// Security is on by default: Origin is checked on every request (absent, or a loopback origin
// on any port, is allowed; others only when configured), Host must name a loopback address
// unless other hosts are configured, bodies are limited while they are read, and an
// Authenticator, when set, runs before anything reaches the dispatcher and puts the principal
// in the request's context.
package httpx
