package httpx

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/relayrt/relay/jsonrpc"
)

// admission is what a request must be granted before it runs, so that no client, however
// slow or however many, can hold what others need:
//
//   - its body must arrive within BodyTimeout (a read deadline on the connection; 408 after
//     it), no longer than MaxBody (a Content-Length over it is 413 before a byte is read);
//   - the bytes of the bodies being read or served, across all clients, stay within
//     BodyBudget: each body takes its share as its bytes arrive, and a body that would go
//     past it is refused with 503 and Retry-After before more of it is read;
//   - an in-flight slot, of MaxInFlight, is taken only once the body is in, so that clients
//     that send their bodies slowly hold no slot while they do.
//
// Connections themselves are bounded by ServerOptions.MaxConns, in Serve.
type admission struct {
	maxInFlight int64
	maxResponse int
	inFlight    atomic.Int64
	bodyBudget  int64
	bodies      atomic.Int64 // bytes held by bodies being read or served
}

func newAdmission(maxInFlight, maxResponse int, bodyBudget int64) admission {
	return admission{maxInFlight: int64(maxInFlight), maxResponse: maxResponse, bodyBudget: bodyBudget}
}

// enter takes an in-flight slot; false when the server is at its limit (the caller answers
// 503 with Retry-After). Every true must be paired with leave.
func (a *admission) enter() bool {
	if a.inFlight.Add(1) > a.maxInFlight {
		a.inFlight.Add(-1)
		return false
	}
	return true
}

func (a *admission) leave() { a.inFlight.Add(-1) }

// take reserves n bytes of the body budget; false when they do not fit.
func (a *admission) take(n int64) bool {
	if a.bodies.Add(n) > a.bodyBudget {
		a.bodies.Add(-n)
		return false
	}
	return true
}

// releaseBody gives back what a body held of the budget.
func (a *admission) releaseBody(held int64) {
	if held != 0 {
		a.bodies.Add(-held)
	}
}

// firstRead is the buffer a body starts with; it doubles as bytes arrive, each step taken
// from the budget first, so that what a body holds is what its client has sent (at most
// twice over), never what its Content-Length promises.
const firstRead = 512

// readBody reads a POST's body under admission (see admission). It returns the body and the
// bytes it holds of the budget, which the caller gives back with releaseBody when the request
// is over, or why the body is refused and a message that says so. A refused body's
// connection is closed after the answer: what is left of the body is not read.
func (d *door) readBody(w http.ResponseWriter, r *http.Request) (body []byte, held int64, why refusal, message string) {
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(d.o.bodyTimeout)) == nil // not every ResponseWriter has a connection
	refuse := func(why refusal, message string) ([]byte, int64, refusal, string) {
		// The connection is not reused; net/http reads what is left of the body only within
		// the deadline, which stays, so a refusal never waits on a stalled client for long.
		w.Header().Set("Connection", "close")
		return nil, held, why, message
	}
	want := r.ContentLength // -1: unknown (chunked)
	if want > d.o.maxBody {
		return refuse(refusedTooLarge, fmt.Sprintf("Payload too large: the body is %d bytes, over the %d-byte limit; send a smaller message", want, d.o.maxBody))
	}
	limit := d.o.maxBody
	if want >= 0 {
		limit = want
	}
	src := http.MaxBytesReader(w, r.Body, d.o.maxBody)
	for int64(len(body)) != want { // a known length ends the body: no read waits for the EOF it tells
		into := body[len(body):cap(body)]
		switch {
		case len(into) > 0:
		case int64(len(body)) == limit:
			into = make([]byte, 1) // a chunked body at MaxBody: one byte more says whether it goes past
		default:
			next := min(max(2*int64(cap(body)), firstRead), limit)
			if !d.take(next - int64(cap(body))) {
				w.Header().Set("Retry-After", "1")
				return refuse(refusedBusy, "Server busy: request bodies in flight are at the server's limit; retry shortly")
			}
			held += next - int64(cap(body))
			body = append(make([]byte, 0, next), body...)
			into = body[len(body):next]
		}
		n, err := src.Read(into)
		if n > 0 && cap(into) == 1 && int64(len(body)) == limit {
			err = &http.MaxBytesError{Limit: d.o.maxBody}
		} else {
			body = body[:len(body)+n]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			var timeout net.Error
			switch {
			case errors.As(err, &tooBig):
				return refuse(refusedTooLarge, fmt.Sprintf("Payload too large: the body exceeds %d bytes; send a smaller message", d.o.maxBody))
			case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &timeout) && timeout.Timeout():
				return refuse(refusedSlow, fmt.Sprintf("Request timeout: the body did not arrive within %s", d.o.bodyTimeout))
			}
			return refuse(refusedBody, "Bad request: the body could not be read")
		}
	}
	if deadline {
		rc.SetReadDeadline(time.Time{}) // the body is in: reads from now on watch for the client going away
	}
	return body, held, 0, ""
}

// capAnswer replaces an answer over the response limit with an internal error that says so,
// keeping its id; nil for a notification over the limit (it is dropped).
func (a *admission) capAnswer(frame []byte, final bool) []byte {
	if len(frame) <= a.maxResponse {
		return frame
	}
	if !final {
		return nil
	}
	return jsonrpc.AppendError(nil, jsonrpc.Field(frame, "id"), &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("Internal error: the response is %d bytes, over the server's %d-byte limit", len(frame), a.maxResponse)})
}
