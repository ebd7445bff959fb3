package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// URL-mode elicitation (2025-11-25 Client Features › Elicitation › URL mode; 2026-07-28 keeps
// the mode without its id and completion notification): the server sends the user to a URL
// for what must not pass through the client, a credential or a payment, and learns the
// outcome out of band, at that URL.

// Elicitation modes.
const (
	ElicitForm = "form" // structured input through the client (the default)
	ElicitURL  = "url"  // the user visits a URL
)

// CodeURLElicitationRequired is the error of a request that cannot go on until the user has
// visited a URL (2025-11-25 only; 2026-07-28 must not send it).
const CodeURLElicitationRequired = -32042

// NewElicitationID returns a random id for a URL-mode elicitation: 128 bits, in hex.
func NewElicitationID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("mcp: no randomness for an elicitation id: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// URLElicitationRequiredError is what a handler returns when its request cannot go on until
// the user has visited one or more URLs: say, an authorization the server needs from a third
// party. Under 2025-11-25 the client gets error -32042 listing them, and retries once the user
// is done (CompleteElicitation tells it when); under 2026-07-28, where that error does not
// exist, it gets an input_required result asking the same of it, and the handler runs again
// on the retry. Make it with URLElicitationRequired.
type URLElicitationRequiredError struct {
	Message      string
	Elicitations []*ElicitParams
}

// URLElicitationRequired returns the error a handler returns when the user must first visit
// the URLs of elicitations (each of mode url, with Message and URL; an empty ElicitationID is
// filled in with NewElicitationID). message says why, in one sentence.
func URLElicitationRequired(message string, elicitations ...*ElicitParams) error {
	e := &URLElicitationRequiredError{Message: message}
	for _, p := range elicitations {
		c := *p
		c.Mode = ElicitURL
		if c.ElicitationID == "" {
			c.ElicitationID = NewElicitationID()
		}
		e.Elicitations = append(e.Elicitations, &c)
	}
	return e
}

// Error says what the handler needs: the user at a URL first.
func (e *URLElicitationRequiredError) Error() string {
	return "mcp: URL elicitation required: " + e.Message
}

// checkElicit checks a question against the client's capabilities and returns it as the
// client of this request gets it. Form mode needs elicitation.form, or an elicitation
// capability that names no mode (which means form, for clients older than 2025-11-25); URL
// mode needs elicitation.url, an absolute http or https URL, and a client of 2025-11-25 or
// later. Under the initialize generation a URL-mode question gets an id (p's, or a new one
// written to p.ElicitationID, so the handler can complete it) and its client is remembered
// for CompleteElicitation; under 2026-07-28 it is sent without one, as that revision has no
// completion notification.
func (r *Request) checkElicit(p *ElicitParams) (*ElicitParams, error) {
	caps := r.meta.clientCaps
	switch p.Mode {
	case "", ElicitForm:
		if !hasCapability(caps, "elicitation") {
			return nil, r.missingCapability("elicitation", "")
		}
		if !hasSubCapability(caps, "elicitation", "form") && hasSubCapability(caps, "elicitation", "url") {
			return nil, r.missingCapability("elicitation", "form")
		}
		return p, nil
	case ElicitURL:
	default:
		return nil, fmt.Errorf("mcp: elicitation mode %q is neither %q nor %q", p.Mode, ElicitForm, ElicitURL)
	}
	if u, err := url.Parse(p.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("mcp: a URL-mode elicitation needs an absolute http or https URL, not %q", p.URL)
	}
	if !r.meta.modern && r.meta.version.String() < Version20251125 {
		return nil, fmt.Errorf("mcp: URL-mode elicitation needs protocol 2025-11-25 or later; this client speaks %s", r.meta.version.String())
	}
	if !hasSubCapability(caps, "elicitation", "url") {
		return nil, r.missingCapability("elicitation", "url")
	}
	c := *p
	if r.meta.modern {
		c.ElicitationID = ""
		return &c, nil
	}
	if p.ElicitationID == "" {
		p.ElicitationID = NewElicitationID()
	}
	c.ElicitationID = p.ElicitationID
	r.s.elicits.wait(c.ElicitationID, r.meta.peer)
	return &c, nil
}

// urlRequired turns a handler's URLElicitationRequiredError into the answer its client can
// read: -32042 under 2025-11-25 for a client that declared elicitation.url, an input_required
// result's questions under 2026-07-28 (the error is returned as ErrInputRequired with the
// questions asked), and an error saying what is missing otherwise. Any other err is returned
// as it is.
func (s *Server) urlRequired(req *Request, err error) error {
	var ue *URLElicitationRequiredError
	if err == nil || !errors.As(err, &ue) {
		return err
	}
	caps := req.meta.clientCaps
	if req.meta.modern {
		if !hasSubCapability(caps, "elicitation", "url") {
			return req.missingCapability("elicitation", "url")
		}
		in := req.rounds()
		in.mu.Lock()
		defer in.mu.Unlock()
		if in.asked == nil {
			in.asked = map[string]inputRequest{}
		}
		for i, e := range ue.Elicitations {
			key := e.ElicitationID
			if key == "" {
				key = fmt.Sprintf("url-elicitation-%d", i)
			}
			c := *e
			c.ElicitationID = ""
			in.asked[key] = inputRequest{Method: "elicitation/create", Params: &c}
		}
		return ErrInputRequired
	}
	if req.meta.version.String() < Version20251125 || !hasSubCapability(caps, "elicitation", "url") {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "Internal error: this request needs the user to visit a URL first (URL-mode elicitation), and the client did not declare capabilities.elicitation.url in initialize; use a client of 2025-11-25 that supports it"}
	}
	for _, e := range ue.Elicitations {
		s.elicits.wait(e.ElicitationID, req.meta.peer)
	}
	return &jsonrpc.Error{Code: CodeURLElicitationRequired, Message: ue.Message,
		Data: map[string]any{"elicitations": ue.Elicitations}}
}

// CompleteElicitation tells the client that was sent the URL-mode elicitation id (by Elicit or
// in a URLElicitationRequiredError) that the user has finished at its URL, with
// notifications/elicitation/complete (2025-11-25 only). Call it from wherever the server
// learns that, typically the handler of that URL, after the request that asked may long have
// been answered. It fails for an id that no connected client of the initialize generation is
// waiting on: completed already, never sent, expired (after an hour), or its client gone.
func (s *Server) CompleteElicitation(id string) error {
	peer := s.elicits.take(id)
	if peer == nil {
		return fmt.Errorf("mcp: no client is waiting on URL elicitation %q: it was completed already, never sent to a client of the initialize generation, expired, or its client disconnected", id)
	}
	return peer.Notify("notifications/elicitation/complete", map[string]string{"elicitationId": id})
}

// Bounds of the URL elicitations a server remembers.
const (
	maxWaitingElicitations = 4096
	elicitationWait        = time.Hour
)

// urlElicitations remembers which client each URL-mode elicitation was sent to, so that only
// that client is told of its completion. It holds at most maxWaitingElicitations, each for at
// most elicitationWait; past that the oldest is forgotten.
type urlElicitations struct {
	mu      sync.Mutex
	waiting map[string]waitingElicitation
}

type waitingElicitation struct {
	peer  *runtime.Peer
	since time.Time
}

func (u *urlElicitations) wait(id string, peer *runtime.Peer) {
	if peer == nil {
		return
	}
	now := time.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.waiting == nil {
		u.waiting = map[string]waitingElicitation{}
	}
	if len(u.waiting) >= maxWaitingElicitations {
		oldest, at := "", now
		for k, w := range u.waiting {
			if gone(w, now) {
				delete(u.waiting, k)
			} else if w.since.Before(at) {
				oldest, at = k, w.since
			}
		}
		if len(u.waiting) >= maxWaitingElicitations {
			delete(u.waiting, oldest)
		}
	}
	u.waiting[id] = waitingElicitation{peer: peer, since: now}
}

func (u *urlElicitations) take(id string) *runtime.Peer {
	u.mu.Lock()
	defer u.mu.Unlock()
	w, ok := u.waiting[id]
	delete(u.waiting, id)
	if !ok || gone(w, time.Now()) {
		return nil
	}
	return w.peer
}

// gone reports whether a waiting elicitation has expired or lost its client.
func gone(w waitingElicitation, now time.Time) bool {
	if now.Sub(w.since) > elicitationWait {
		return true
	}
	select {
	case <-w.peer.Done():
		return true
	default:
		return false
	}
}
