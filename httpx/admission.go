package httpx

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
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
//     BodyBudget, and those of one client (see clientKey) within its share of it, an eighth
//     and at least MaxBody, so that no client alone can spend it: each body takes its bytes
//     as they arrive, and a body that would go past either is refused with 503 and
//     Retry-After before more of it is read;
//   - an in-flight slot, of MaxInFlight, is taken only once the body is in, so that clients
//     that send their bodies slowly hold no slot while they do.
//
// Connections themselves are bounded by ServerOptions.MaxConns, in Serve.
type admission struct {
	maxInFlight int64
	maxResponse int
	inFlight    atomic.Int64
	bodyBudget  int64
	bodyShare   int64        // of one client
	bodies      atomic.Int64 // bytes held by bodies being read or served

	mu       sync.Mutex
	byClient map[string]int64 // bytes held, of clients that hold some
}

func newAdmission(maxInFlight, maxResponse int, bodyBudget, maxBody int64) *admission {
	return &admission{maxInFlight: int64(maxInFlight), maxResponse: maxResponse, bodyBudget: bodyBudget,
		bodyShare: max(bodyBudget/8, min(maxBody, bodyBudget)), byClient: map[string]int64{}}
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

// take reserves n bytes of the body budget for client; false when they do not fit in the
// budget or in the client's share of it.
func (a *admission) take(client string, n int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byClient[client]+n > a.bodyShare {
		return false
	}
	if a.bodies.Add(n) > a.bodyBudget {
		a.bodies.Add(-n)
		return false
	}
	a.byClient[client] += n
	return true
}

// releaseBody gives back what a body of client held of the budget.
func (a *admission) releaseBody(client string, held int64) {
	if held == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bodies.Add(-held)
	if left := a.byClient[client] - held; left > 0 {
		a.byClient[client] = left
	} else {
		delete(a.byClient, client)
	}
}

// A body is read into chunks that start at firstChunk bytes and double up to maxChunk, each
// taken from the budget before it is allocated, so that what a body holds is about what its
// client has sent, never what its Content-Length promises; the chunks are joined once the
// body is in. Growing one buffer instead would leave a copy of the body behind at every step.
const (
	firstChunk = 512
	maxChunk   = 1 << 20
)

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
	client := clientKey(r)
	var chunks [][]byte
	total, size := int64(0), int64(firstChunk)
	for total != want { // a known length ends the body: no read waits for the EOF it tells
		var into []byte
		switch last := len(chunks) - 1; {
		case last >= 0 && len(chunks[last]) < cap(chunks[last]):
			into = chunks[last][len(chunks[last]):cap(chunks[last])]
		case total == limit:
			into = make([]byte, 1) // a chunked body at MaxBody: one byte more says whether it goes past
		default:
			next := min(size, limit-total)
			if !d.take(client, next) {
				w.Header().Set("Retry-After", "1")
				return refuse(refusedBusy, "Server busy: request bodies in flight are at the server's limit; retry shortly")
			}
			held += next
			size = min(2*size, maxChunk)
			chunks = append(chunks, make([]byte, 0, next))
			into = chunks[len(chunks)-1][:next]
		}
		n, err := src.Read(into)
		if total == limit && len(into) == 1 {
			if n > 0 {
				err = &http.MaxBytesError{Limit: d.o.maxBody}
			}
		} else if n > 0 {
			last := len(chunks) - 1
			chunks[last] = chunks[last][:len(chunks[last])+n]
			total += int64(n)
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
	switch len(chunks) {
	case 0:
	case 1:
		body = chunks[0]
	default:
		body = make([]byte, 0, total)
		for _, c := range chunks {
			body = append(body, c...)
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
