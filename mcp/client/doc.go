// Package client is a typed MCP client for both protocol generations: the stateless
// 2026-07-28 revision and the initialize generation (2025-11-25, 2025-06-18, 2025-03-26).
//
// Connect opens a Transport, learns which generation the server speaks, and returns a
// Client whose calls (ListTools, CallTool, ListResources, ListResourceTemplates,
// ReadResource, ListPrompts, GetPrompt, Complete, SetLogLevel, Listen, Ping) are typed
// with package mcp's types.
//
// # Transports
//
//   - CommandTransport starts a server as a child process and speaks NDJSON on its stdin
//     and stdout (MCP 2026-07-28, Transports › stdio); its stderr is passed through. One
//     reader actor (stdio.ReadFrames) and one writer actor (stdio.WriteFrames) move the
//     frames; a router actor owns the table of calls in flight. Close ends the child in the
//     spec's order: close its stdin, wait, SIGTERM, wait, SIGKILL.
//   - HTTPTransport speaks Streamable HTTP to a URL: one POST per message, answered with
//     JSON or an SSE stream, the session id of the initialize generation, and for
//     2026-07-28 the mirrored headers MCP-Protocol-Version, Mcp-Method, Mcp-Name and
//     Mcp-Param-* (MCP 2026-07-28, Transports › Streamable HTTP). Mcp-Param-* needs the
//     tool's input schema: ListTools remembers it. A session the server ended (404) is
//     replaced by a new one and the request sent again. A server of the deprecated
//     HTTP+SSE transport (2024-11-05), which refuses the POST of initialize with 400, 404
//     or 405, is spoken to on that transport instead: GET the URL, POST to the endpoint
//     its first event names, read every answer from the GET's event stream.
//   - SupervisedTransport starts a server as a supervised child, with relay supervise's
//     core in the same process (supervise.ServeFrames): a child that dies is started
//     again, the handshake replayed to it, and the calls safe to replay sent again.
//   - MemoryTransport talks to a runtime.Server in the same process, for tests.
//
// # Authorization
//
// HTTPTransport.OAuth authorizes the requests with OAuth 2.1 once the server answers 401
// (MCP 2025-11-25, Basic › Authorization): protected resource and authorization server
// discovery, registration, the authorization code flow with PKCE, the resource indicator
// and iss checks, refresh and scope step-up; OAuth.Grant replaces the browser where no
// user is present, and OAuth.DPoPKey binds tokens to a key. The deprecated HTTP+SSE
// transport's GET and POSTs go through the same authorized client (no test covers a
// protected server of that transport yet).
//
// # Generations
//
// Unless WithVersion pins one, Connect probes with server/discover carrying the 2026-07-28
// _meta (MCP 2026-07-28, Versioning › backward compatibility): a DiscoverResult, or a
// recognised modern error, means a modern server; any other error, or no answer within
// the discover timeout, means a server of the initialize generation, which then gets
// initialize and notifications/initialized. Under 2026-07-28 every request carries the
// protocol version, client capabilities and client info in its _meta.
//
// # Cancellation and progress
//
// Every call takes a context. When it ends before the answer, the call returns its error
// and the server is told: notifications/cancelled on a stream transport and on legacy
// HTTP, and for 2026-07-28 over HTTP the request's response stream is closed, which the
// server takes as the cancellation. WithProgress receives a call's notifications/progress;
// WithNotifications receives the other notifications the server ties to a call (logs).
//
// # What a server asks of its client
//
// WithElicitation, WithURLElicitation, WithSampling and WithRoots give the client handlers for what a server
// asks (elicitation/create, sampling/createMessage, roots/list) and declare the matching
// capabilities. Under the initialize generation the server sends them as requests: each is
// answered by a goroutine of its own (at most 64 at once), on a stdio or in-memory stream,
// on a POST's event stream, or on the session's own event stream, which the client opens
// with GET after initialize; notifications/cancelled from the server ends the handler's
// context on a stream transport. Under 2026-07-28 the server answers input_required
// instead: the client asks its handlers, then sends the request again with a new id, the
// answers as inputResponses and the requestState untouched, for at most 16 rounds (MCP
// 2026-07-28, Basic › Patterns › Multi-round-trip requests). A question no handler
// answers ends the call with ErrInputRequired, or is answered "method not found".
// WithElicitationComplete hears notifications/elicitation/complete, by which a server of
// the initialize generation says the user is done at a URL-mode elicitation's URL.
//
// # Subscriptions, completions, logging
//
// Listen hears of the changes a mcp.SubscriptionFilter names: one subscriptions/listen
// request under 2026-07-28, resources/subscribe (and the list_changed notifications a
// server sends unasked) under the initialize generation. Complete asks for completion
// values; SetLogLevel sets the level of the server's log messages for later calls.
package client
