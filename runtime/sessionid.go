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
