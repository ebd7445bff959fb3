// Package stdio is Relay's newline-delimited JSON transport: a Reader that frames bytes into
// lines, a writer actor that owns the output, and Serve functions that join them to a runtime
// dispatcher over the process's stdin and stdout, any io.Reader and io.Writer, or every
// connection of a net.Listener (Unix or TCP sockets use the same framing).
//
// Framing rules (MCP stdio, RCP/1 §5.1): one JSON-RPC message per line, ended by "\n"; a
// trailing "\r" is accepted; blank lines are skipped; a reader never assumes one message per
// read. A line longer than the limit (default 16 MiB) is discarded up to its newline without
// being held in memory, reported to the dispatcher (which answers it as the profile says), and
// reading goes on. Every frame written is exactly one line: a frame that contains a newline is
// compacted first, and nothing but frames is ever written.
//
// The reader queues at most 64 frames for the dispatcher. The dispatcher never waits for a
// handler (see the runtime package's admission budgets), only for the writer: when the peer
// stops reading its answers, the writer blocks, the dispatcher waits, the queue fills, and the
// reader stops reading until the peer reads again.
//
// ServeStdio protects the protocol stream: it keeps a private duplicate of file descriptor 1
// for frames and points descriptor 1 at stderr (on Windows: a duplicate of the standard
// output handle, and the handle and os.Stdout pointed at stderr), so a stray fmt.Println in a
// handler (or, on Unix, in C code) lands in the log instead of corrupting the stream. EOF on
// stdin, SIGTERM and SIGINT (on Windows: Ctrl-C, or closing the console) each start a
// graceful drain.
package stdio
