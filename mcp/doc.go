// Package mcp serves the Model Context Protocol on Relay's runtime, for both generations a
// host may speak: the current stateless revision, 2026-07-28, where every request names its
// version and capabilities in params._meta and server/discover replaces the handshake; and
// the initialize generation (2025-03-26, 2025-06-18, 2025-11-25) that every host in use today
// still speaks.
//
// A Server holds what it serves (tools, prompts, resources and their templates, completions,
// and skills, with the Skills extension) and no protocol state; Profile turns it into a
// runtime.Profile, whose per-connection Session decides each request's era:
//
//   - params._meta carries io.modelcontextprotocol/protocolVersion: the request is 2026-07-28
//     and is served from that request alone;
//   - otherwise an initialize opens a legacy session for the connection, and while it is open
//     requests without that _meta are legacy;
//   - otherwise the request is refused with -32602 (legacy ping, answered {}, excepted).
//
// Checks run in the order shape, _meta, version (-32022 naming the supported versions),
// method (-32601, which is also the answer to methods the 2026-07-28 revision removed), then
// the capabilities the request declared. A cancelled request is never answered
// (notifications/cancelled); progress is sent only for requests that carry a progressToken.
//
// A tool registered with AsTask (or StartsTask) may answer a 2026-07-28 client that declares
// the io.modelcontextprotocol/tasks extension with a task instead of its result: the tool runs
// on a goroutine the Server owns, its state kept in a TaskStore, and the client polls
// tasks/get (tasks/update answers its questions, tasks/cancel stops it) or follows it with
// subscriptions/listen (notifications/tasks). Close stops the tasks still running.
//
// Handlers run on the runtime's reused workers. A tool's calls do too until 16 of them wait in
// the tool at once; from then on its next calls decode their arguments on a worker and run the
// tool itself on a goroutine of their own (a runtime.Continuation), which keeps a 2 KiB stack
// while it waits where a worker that decoded arguments has grown to 4 KiB. With middleware,
// which must see the whole call, every call runs on its worker.
package mcp
