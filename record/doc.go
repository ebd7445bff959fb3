// Package record owns Relay's recording format: the frames a host and a stdio server
// exchanged, both directions, one JSON object per line (NDJSON), so that real traffic can
// be replayed later as a regression test (`relay replay FILE -- CMD`) or served back to a
// host as a mock server (`relay replay --serve FILE`).
//
// # Format
//
// Each line is one frame:
//
//		{"t":"2026-12-01T19:53:34.123456789Z","dir":"in","msg":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}
//
//	  - t: when Relay saw the frame, RFC 3339 with nanoseconds, UTC.
//	  - dir: "in" for host → server, "out" for server → host.
//	  - msg: the JSON-RPC message as it crossed the wire, or, with redaction, with the values
//	    at the chosen JSON pointers (RFC 6901) replaced by "[redacted]".
//	  - raw: instead of msg, a line that was not JSON, as a string (a malformed frame is traffic
//	    too, and replay sends it again).
//	  - skipped: instead of msg, the length of a line longer than the recorder's limit, which
//	    is not kept.
//
// A reader ignores fields it does not know, so the format can grow.
//
// # Files
//
// A Recorder creates its file with mode 0600 (recordings hold what users typed) and
// appends to it. Past its size cap it rotates once: FILE becomes FILE.1 (replacing an older
// FILE.1) and a new FILE is begun, so a recording never takes more than about twice the cap.
//
// # Comparing
//
// Compare and Matches decide what counts when traffic is replayed: ids never count (a replay
// may number its requests differently), nor does _meta anywhere in a message (trace
// context, progress tokens and timings change from run to run), nor any pointer the caller
// adds. To a recorded server (Matches), a recorded "[redacted]" stands for any value.
package record
