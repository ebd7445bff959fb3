package httpx

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/relayrt/relay/jsonrpc"
)

// admission is what a request must be granted before it runs: an in-flight slot, taken once
// its body is in. Answers are capped at maxResponse.
type admission struct {
	maxInFlight int64
	maxResponse int
	inFlight    atomic.Int64
}

func newAdmission(maxInFlight, maxResponse int, bodyBudget int64) admission {
	return admission{maxInFlight: int64(maxInFlight), maxResponse: maxResponse}
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

// readBody reads a POST's body. It returns the body, or why it is refused and a message that
// says so.
func (d *door) readBody(w http.ResponseWriter, r *http.Request) (body []byte, held int64, why refusal, message string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, d.o.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, 0, refusedTooLarge, fmt.Sprintf("Payload too large: the body exceeds %d bytes; send a smaller message", d.o.maxBody)
		}
		return nil, 0, refusedBody, "Bad request: the body could not be read"
	}
	return body, 0, 0, ""
}

// releaseBody gives back what a body held of the budget.
func (d *door) releaseBody(held int64) {}

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
