// Package runtime is Relay's server core: a dispatcher actor per connection that owns the
// table of requests in flight, and one request actor per request, each with its own context,
// run on reused worker goroutines.
//
// A transport hands the dispatcher frames on a channel (Inbound) and takes the frames to send
// from another (the dispatcher is that channel's only sender and closes it when the connection
// is done). Between the two, everything is a message to the dispatcher: a request actor's
// result, a notification it sends, a question it asks the peer, a cancel from the peer, the end
// of input, the drain deadline. No lock guards the in-flight table; only the dispatcher touches it.
//
// What differs between protocols built on JSON-RPC is declared by a Profile: the id of an
// answer to an unreadable request, whether batches are allowed, the cancel notification and
// whether a cancelled request is still answered, the errors for overload, oversize frames and
// shutdown, and a Session that routes each request on the dispatcher's goroutine. The
// dispatcher itself has no protocol in it.
//
// Life of a request: the dispatcher decodes the envelope (ids and params stay raw bytes), asks
// the Session for a Route, and either answers at once or hands the route's Handler to a
// worker, a goroutine that runs requests one after another (it is reused so that its grown
// stack is not copied again for every request; each request still runs alone, with its own
// context, and reports to the dispatcher as an actor). A handler that may wait long can return
// a Continuation: its first part ran on the worker, which goes back to its pool, and the rest
// runs on a goroutine of its own that keeps only a small stack while it waits (MCP's tools do,
// once a tool's calls pile up). A request actor's output goes back through the dispatcher,
// which drops it if the request was cancelled and the profile says a cancelled request is not
// answered: no frame for a cancelled request can slip out after the cancel was read.
//
// Admission is a budget per connection, not a queue (WithBudget): a request starts at once if
// the requests in flight stay within their count (default 131,072) and the frames they hold
// within their bytes (default 64 MiB); otherwise it is refused at once with the profile's
// overload error. No request waits for another, so a quick one is never held up behind slow
// ones, and 100,000 requests parked in handlers are ordinary load: a new request is still
// answered. What requests in flight hold is bounded by the two budgets (see WithBudget).
//
// Backpressure comes from the output only. The dispatcher never waits for a handler; it waits
// when the transport takes frames more slowly than they are made (a peer that does not read
// its answers), and while it waits it takes no input, so the transport stops reading too.
//
// Shutdown flows one way: input ends (EOF, a shutdown route, or the Serve context), the
// dispatcher stops taking requests, closes every request's Draining channel so that long-lived
// streams can end themselves, lets the rest finish, and after the drain timeout cancels what is
// left. It closes the output channel last, so the transport's writer can flush everything.
package runtime
