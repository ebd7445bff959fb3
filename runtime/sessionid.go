package runtime

import "context"

type sessionIDKey struct{}

// WithSessionID returns a context carrying the id of the transport session a connection
// serves (the Mcp-Session-Id of a Streamable HTTP session, say), so that what watches its
// requests (an Observer, a handler's logs) can name it.
func WithSessionID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sessionIDKey{}, id)
}

// SessionIDFrom returns the session id WithSessionID put in ctx; ok is false when there is
// none.
func SessionIDFrom(ctx context.Context) (id string, ok bool) {
	id, ok = ctx.Value(sessionIDKey{}).(string)
	return id, ok
}

type sessionStateKey struct{}

// SessionState lets a transport keep a session's protocol state (what an MCP initialize
// negotiated, its log level, its subscriptions) outside the process, so that several
// processes serve one session: each runs a connection of its own for it, started from the
// state saved last, and handed the state the others save (Inbound.State, StateTaker) before
// the frames that should see it.
type SessionState struct {
	// Restore is the state to start the connection from; nil starts a new session.
	Restore []byte
	// Save keeps the session's state. The protocol's Session calls it on the dispatcher's
	// goroutine whenever the state changed, before the request that changed it is answered;
	// an error fails that request (a state that only this process knows would be lost), and
	// the Session goes on with the state it had. A state is a JSON object whose "rev" member
	// numbers it: a Session saves one more than the state it has, and takes (Restore,
	// StateTaker) only a state numbered above its own, so that the transport keeps a state
	// only over the one it was made from, and a state that arrives late is never taken.
	Save func(state []byte) error
}

// StateTaker is implemented by a Session whose state a transport may keep (SessionState):
// TakeState, called on the dispatcher's goroutine, takes the state another connection of
// the session saved, delivered in order with the frames (Inbound.State).
type StateTaker interface {
	TakeState(state []byte)
}

// WithSessionState returns a context for a connection (ServeOutbound's) whose protocol state
// st keeps.
func WithSessionState(ctx context.Context, st *SessionState) context.Context {
	return context.WithValue(ctx, sessionStateKey{}, st)
}

// SessionState returns the SessionState of the peer's connection, or nil when its transport
// keeps none (stdio, a session of one process).
func (p *Peer) SessionState() *SessionState {
	st, _ := p.d.base.Value(sessionStateKey{}).(*SessionState)
	return st
}
