package httpx

import (
	"net/http"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// reply is one request's way back to its client: the frames its dispatcher sends for it, what
// to do if the client goes away first, and how the protocol shapes the final answer.
type reply struct {
	frames <-chan runtime.Outbound
	gone   func()              // the client went away before the final frame
	final  func([]byte) []byte // shapes the final answer (nil: as it is)
	// inBand: every JSON-RPC answer, an error too, travels in HTTP 200, as an
	// initialize-generation session's must (MCP 2025-11-25, Transports › Streamable HTTP;
	// a 404 there would tell the client that its session is gone).
	inBand bool
	// id is the request's: when the frames end with no answer (it was cancelled, or its
	// session ended) and the client takes no stream, it is told so in a JSON error for id.
	id jsonrpc.ID
	// start, for a request whose stream is resumable, starts the stream before any frame of
	// it and returns the id to prime it with ("": it has been answered meanwhile), so that
	// PollAfter can close a POST that is still waiting without a stream.
	start func() string
	// head, when set, is called once, just before the response's headers are written, with
	// the final answer when it is known then (a JSON body) and nil when a stream starts:
	// initialize names its session only in an answer that is not an error.
	head func(final []byte)
}

// writeHead calls rp.head, once.
func (rp *reply) writeHead(final []byte) {
	if rp.head != nil {
		rp.head(final)
		rp.head = nil
	}
}

// respond writes a request's frames to its client, for both protocols: one JSON body when
// the final answer comes first, or an SSE stream from the first frame before it, when the
// client may have one (protocol.sse). Only frames of the request itself go on its stream
// (MCP 2026-07-28, Transports › Streamable HTTP; RCP/1 §5.2). When the frames end with no
// answer (nothing is owed, or the session ended) and nothing was written, the request's POST
// still ends as a client expects a request's to: with a stream that closes, empty, or, for a
// client that takes no stream, a JSON error that says no answer will come.
// It returns the final answer, and whether the request finished; false means the client went
// away first, and reply.gone has run.
func (d *door) respond(w http.ResponseWriter, r *http.Request, rp reply) (final []byte, finished bool) {
	sseOK := d.p.sse(r)
	var sse *sseWriter
	var keepAlive, poll <-chan time.Time
	if sseOK && rp.start != nil && d.o.pollAfter > 0 {
		t := time.NewTimer(d.o.pollAfter)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-r.Context().Done():
			observationOf(r).cancelled()
			rp.gone()
			return nil, false
		case <-poll:
			// The request has waited PollAfter without its answer: close its stream (opened
			// and primed now if nothing was sent yet). Its events are kept, and the client
			// resumes it with Last-Event-ID after the retry interval.
			if sse == nil {
				id := rp.start()
				if id == "" {
					poll = nil // answered meanwhile: the answer is coming
					continue
				}
				rp.writeHead(nil)
				sse = startSSE(w)
				sse.prime(id)
			}
			rp.gone()
			return nil, false
		case <-keepAlive:
			if sse.comment("keep-alive") != nil {
				rp.gone()
				return nil, false
			}
		case o, ok := <-rp.frames:
			if !ok {
				switch {
				case sse != nil:
				case sseOK:
					rp.writeHead(nil)
					startSSE(w) // and its end: the stream closes with nothing on it
				default:
					e := jsonrpc.Errorf(jsonrpc.CodeInternalError, "Internal error: this request will not be answered: it was cancelled, or its session ended")
					if rp.id == nil {
						rp.id = jsonrpc.Null
					}
					answer := jsonrpc.AppendError(nil, rp.id, e)
					rp.writeHead(answer)
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusOK)
					w.Write(answer)
				}
				return nil, true
			}
			if !o.Final {
				frame := d.capAnswer(o.Frame, false)
				if frame == nil || !sseOK || o.Request == nil {
					continue // over the limit, a JSON-only client, or not this request's
				}
				if sse == nil {
					rp.writeHead(nil)
					sse = startSSE(w)
					d.o.ops.stream(d.name, 1)
					defer d.o.ops.stream(d.name, -1)
					if d.o.keepAlive > 0 {
						t := time.NewTicker(d.o.keepAlive)
						defer t.Stop()
						keepAlive = t.C
					}
					if stream, seq, ok := parseEventID(o.Event); ok && seq > 0 { // resumable: prime it
						if sse.prime(eventID(stream, seq-1)) != nil {
							rp.gone()
							return nil, false
						}
					}
				}
				if sse.eventWithID(frame, o.Event) != nil {
					rp.gone()
					return nil, false
				}
				continue
			}
			answer := d.capAnswer(o.Frame, true)
			if rp.final != nil {
				answer = rp.final(answer)
			}
			observationOf(r).answered(answer)
			if sse != nil {
				sse.eventWithID(answer, o.Event)
				return answer, true
			}
			rp.writeHead(answer)
			w.Header().Set("Content-Type", "application/json")
			status, retry := d.p.status(answer)
			if rp.inBand {
				status = http.StatusOK
			}
			if retry {
				w.Header().Set("Retry-After", "1")
			}
			w.WriteHeader(status)
			w.Write(answer)
			return answer, true
		}
	}
}

// alone runs one frame in a dispatcher of its own, for a request that belongs to no session
// (MCP 2026-07-28, RCP stateless). id is the request's, nil for a notification or a batch:
// then input ends at once and the dispatcher drains. gone cancels the request (closing the
// stream is cancellation in both protocols over HTTP); end, which the caller defers, ends the
// input and waits for the dispatcher to stop.
func (d *door) alone(r *http.Request, frame []byte, id jsonrpc.ID) (frames <-chan runtime.Outbound, gone, end func()) {
	in := make(chan runtime.Inbound, 2) // the frame, and perhaps its cancel: sends never block
	// respond takes each frame as it comes: a few of buffer let the dispatcher go on while it
	// writes one.
	out := make(chan runtime.Outbound, 4)
	go d.rt.ServeRequest(requestContext(d.sessions.base, r), in, out) // ends when in closes and it drains
	in <- runtime.Inbound{Frame: frame}
	if id == nil {
		close(in)
	}
	gone = func() {
		if id != nil {
			in <- runtime.Inbound{Frame: d.p.cancel(id)}
		}
	}
	end = func() {
		if id != nil {
			close(in)
		}
		for range out {
		}
	}
	return out, gone, end
}
