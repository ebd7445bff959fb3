// Package gateway puts many MCP servers behind one: its one job is to merge the tools,
// prompts, resources and resource templates of several upstream servers into a single MCP
// server, and to route every call to the upstream that owns what it names.
//
// # Configuration
//
// The configuration is the file hosts already have (Claude Desktop, Cursor: "mcpServers";
// VS Code: "servers"): each entry is a local command ({"command","args","env","cwd"}), run
// as a supervised child (package supervise: restart with backoff, the handshake replayed,
// safe calls replayed), or a remote server ({"url","headers"}) reached with mcp/client over
// Streamable HTTP. Keys hosts write that the gateway has no use for ("type",
// "autoApprove", "timeout", top-level settings) are ignored; "disabled": true leaves the
// entry out. Relay's own options live in one object per entry, "relay", so that they never
// collide with a host's; an unknown key there is an error that names it (see ParseConfig).
//
// # Names
//
// A tool or prompt NAME of the server PREFIX is exposed as PREFIX__NAME (the separator is
// an option). Hosts enforce ^[a-zA-Z0-9_-]{1,64}$ on tool names, so every exposed name is
// made to match it: other characters become '_', and a name longer than 64 characters is
// cut and given a stable hash suffix (the mapping is logged). Resource URIs are not
// rewritten: a resource routes to the upstream that listed it, and a URI that two upstreams
// list is served by the first in config order, with a warning.
//
// # Lists and routing
//
// The gateway is an mcp.Server, so it serves both protocol generations over stdio and over
// Streamable HTTP (package httpx) with their sessions kept apart (log level and
// subscriptions are each session's). It mirrors each upstream's lists into its own
// registry: the lists are the gateway's, with its own pagination cursors over the merged
// snapshot (each upstream is read to its end), and a change of any upstream's list (its
// list_changed, a child restarted, an upstream down or back) is one list_changed of the
// gateway's per list. tools/call, prompts/get and resources/read are passed on raw to the
// upstream that owns the name, with progress, log messages and cancellation carried
// across; completions go to the owner of the prompt or template. The host's capabilities
// are declared on each call to the upstream, and what an upstream asks of its client
// (elicitation, sampling, roots) is asked of the host whose request it answers: a
// server-to-client request for a host of the initialize generation; for a 2026-07-28
// host, the upstream's input_required result as it is, or, when the upstream is of the
// initialize generation, an input_required result of the gateway's (the upstream's call
// is given up, and sent again with the host's answers). A 2026-07-28 upstream is asked,
// on each call, for the log level of the host whose call it is (none when the host asked
// for none); an upstream of the initialize generation, whose level is its session's, is
// told the lowest level any host asked for of the calls in flight to it, and each host gets
// only what its own level asks for. Over stdio (and the old HTTP+SSE transport) nothing
// ties an upstream's question or log message to a call: it is the call's while that call is
// the one tools/call, prompts/get or resources/read in flight to the upstream, and refused
// (a question) or dropped (a message) otherwise. Resource updates of
// every resource an upstream lists are subscribed to, and reach only the hosts that
// subscribed. An upstream that is down drops out of the lists; a call that names it is
// answered with an error that names it.
//
// # Reload
//
// Reload brings a running gateway to a new configuration: servers added, removed or changed
// start and stop one by one, the others are left alone, and the hosts hear list_changed
// (relay gateway reloads on SIGHUP and when its file changes).
//
// A local upstream whose "relay"."restart"."watch" file changes is upgraded without
// downtime: supervise starts a new child, brings it to the old one's state, and the old one
// finishes what it has in flight.
//
// # Status
//
// Each upstream's state, restarts and last error are Gateway.Status, and the gateway's own
// resource relay-gateway://status (StatusURI), which relay gateway --status URL prints.
//
// # Tasks
//
// Tasks (io.modelcontextprotocol/tasks) follow their id: a 2026-07-28 host that declared the
// extension gets an upstream's task under an id of the gateway's that names the upstream,
// and its tasks/get, tasks/update and tasks/cancel go to that upstream; for a host of the
// initialize generation the gateway waits for the task and answers with its result. A task
// id is bound to the principal it was handed out to (mcp.TaskPrincipal: the authenticated
// principal, else the session), by a keyed hash in the id: to any other it is unknown,
// although every host reaches the upstream as the gateway. Hosts with neither (stdio, and
// unauthenticated 2026-07-28 requests over HTTP) share the empty principal, and their task
// ids, as at a server. The key is the process's: ids do not outlive it, nor work at another
// instance of the gateway. A
// host's subscriptions/listen that names tasks follows them at their upstreams (of the
// 2026-07-28 generation), with a listen of the gateway's own for each, and hears their
// notifications/tasks under the gateway's ids.
//
// # Caching
//
// The gateway declares tools, prompts and resources whatever its upstreams offer now, so
// that a host that listens before the first one is up hears of it. Its lists may be reused
// (ttlMs, cacheScope) for as long as the least reusable of the upstreams' lists allows, and
// by the user alone if one of them says private; a resource read keeps what its upstream
// said. Its other results say not to reuse them.
//
// # Not yet
//
// Not yet: an interactive OAuth flow for remote upstreams (a gateway has no user at a browser: the
// client credentials grant, "relay": {"oauth": ...}, or a token in "headers").
package gateway
