package runtime

// A Continuation is the rest of a handler, for handlers that may wait a long time (a tool that
// sleeps, polls, or waits on another system). A Handler that returns one as its result has
// done its first part on a worker; the runtime calls the continuation on a goroutine of its
// own, and the worker goes back to its pool at once. The continuation keeps what it needs of
// the handler (its context, its request) itself.
//
// It changes what a waiting request holds, not what it does. A worker's stack is as large as
// the deepest point any request it ran has reached (decoding arguments through reflection
// is enough for 4 KiB), and a request that waits on a worker keeps all of it; a goroutine that
// only calls the continuation and waits keeps the smallest stack, 2 KiB, as long as what the
// continuation itself calls under its wait fits in it (a little over 1 KiB of frames, the
// runtime's under a select included). So the first part should do the deep work (decoding,
// validation) and the continuation little more than wait; the result is encoded after it has
// returned, when depth no longer matters. Everything else is as for a handler: the request
// keeps its place in the budget until the continuation returns, its result is encoded and
// sent in the same way (a Continuation that it returns is called in turn, on the same
// goroutine), a panic in it is the request's error, and the request's context is cancelled
// in the same way.
type Continuation func() (result any, err error)
