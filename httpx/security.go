package httpx

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/relayrt/relay/internal/oauthmeta"
	"github.com/relayrt/relay/runtime"
)

// Authenticator decides who a request is from. It returns the principal, or an error to
// refuse the request with 401. It runs before the body is read.
type Authenticator func(r *http.Request) (*runtime.Principal, error)

// Call is one call a request makes: its method, and for tools/call and prompts/get the
// name it calls, for resources/read the URI.
type Call struct {
	Method, Name string
}

// Authorizer decides whether the principal an Authenticator found may make a call: nil, or
// an error to refuse the whole request (an *InsufficientScopeError is 403, others 401). It
// runs once the body is in and before the request takes an in-flight slot, once for each
// call of a batch.
type Authorizer func(r *http.Request, p *runtime.Principal, c Call) error

// BearerTokens returns an Authenticator that accepts the given tokens (token → principal id)
// in an Authorization: Bearer header.
func BearerTokens(tokens map[string]string) Authenticator {
	return func(r *http.Request) (*runtime.Principal, error) {
		h := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return nil, errNoCredentials
		}
		id, ok := tokens[strings.TrimSpace(tok)]
		if !ok {
			return nil, errBadCredentials
		}
		return &runtime.Principal{ID: id}, nil
	}
}

type authError string

func (e authError) Error() string { return string(e) }

const (
	errNoCredentials  = authError("no bearer token; send Authorization: Bearer <token>")
	errBadCredentials = authError("the bearer token is not valid")
)

// originAllowed: no Origin (a non-browser client) or a loopback origin on any port is always
// allowed; any other origin only when listed.
func originAllowed(origin string, allowed []string) bool {
	if origin == "" {
		return true
	}
	if slices.Contains(allowed, origin) || slices.Contains(allowed, "*") {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return oauthmeta.IsLoopback(u.Hostname())
}

// hostAllowed protects loopback servers from DNS rebinding: the Host header must name a
// loopback address (any port) or a host listed in allowed.
func hostAllowed(host string, allowed []string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	return oauthmeta.IsLoopback(name) || slices.Contains(allowed, name) || slices.Contains(allowed, "*")
}

// requestContext is the context a request's dispatcher runs under: the handler's base (so
// that closing the handler drains it), with the request's principal and its W3C trace context
// from the traceparent header, when it has them.
func requestContext(base context.Context, r *http.Request) context.Context {
	ctx := withPrincipal(base, runtime.PrincipalFrom(r.Context()))
	if tp := r.Header.Get("traceparent"); tp != "" {
		ctx = runtime.WithTrace(ctx, runtime.TraceContext{Parent: tp, State: r.Header.Get("tracestate")})
	}
	return ctx
}

func withPrincipal(ctx context.Context, p *runtime.Principal) context.Context {
	if p == nil {
		return ctx
	}
	return runtime.WithPrincipal(ctx, p)
}
