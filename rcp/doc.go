// Package rcp serves RCP/1, the Retrieval Context Protocol, on Relay's runtime. It is a
// second profile on the same dispatcher as MCP, and the rules where the two differ live here,
// as data the dispatcher consults:
//
//   - an integer protocol version, negotiated as min(client, server) by initialize, which is
//     required: before a successful initialize every method but info, ping and shutdown gets
//     -32001; a failed initialize (-32002) leaves the connection uninitialised and may be
//     retried; a second successful one gets -32600;
//   - classification: a method RCP does not define is -32004, one it defines but the server
//     did not advertise is -32003, an unsupported option of an advertised method is -32005
//     with data.option, malformed params are -32602 with data.field;
//   - notifications/cancel still owes exactly one response: the result, or -32006;
//   - batches are allowed; an unreadable request is answered with "id": null; an oversized
//     frame is -32013; every request has a deadline (-32014);
//   - progress (0 to 1) only with a progressToken and the streaming capability; logs as
//     notifications/log on the protocol stream, only when the server advertises log, at or
//     above the level the client asked for in initialize.
//
// The capability set is fixed for a connection once initialize succeeds, so a Server's
// advertisements and handlers are registered before it serves.
package rcp
