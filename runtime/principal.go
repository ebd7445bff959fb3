package runtime

import "context"

// Principal is who a transport authenticated a request as. Handlers read it with
// PrincipalFrom; Relay never derives it from anything the peer says about itself.
type Principal struct {
	// ID names the principal, e.g. a token's subject.
	ID string
	// Attributes holds whatever else the authenticator learned (scopes, tenant, ...).
	Attributes map[string]string
}

type principalKey struct{}

// WithPrincipal returns a context that carries p; a transport calls it after authenticating.
// Request contexts are derived from the context a connection is served with, so a principal
// placed there reaches every handler of that connection.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal the request was authenticated as, or nil.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
