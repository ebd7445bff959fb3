package bridge

import (
	"errors"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
)

// health watches the pool: when the supervisor of every child has given up (each was
// restarted as often as its Spec allows, and still exited), nothing will serve a 2026-07-28
// request again, and the bridge says so: GaveUp is closed, and requests are answered with an
// error that is not retryable. One request cannot bring this about by itself: each child's
// proxy answers a request that crashes its child each time with an error after the third
// death, and sends it no more (supervise's poison detection).
type health struct {
	gaveUp  chan struct{} // closed once every child of the pool has given up
	up      atomic.Int64  // children of the pool still up
	closing chan struct{} // closed by Close: the children's ends are not give-ups
}

// watch starts a watcher per child of the pool; each ends when its child's client does.
func (b *Bridge) watch() {
	b.health.gaveUp, b.health.closing = make(chan struct{}), make(chan struct{})
	b.health.up.Store(int64(len(b.clients)))
	for i, c := range b.clients {
		b.watchers.Go(func() {
			<-c.Done()
			select {
			case <-b.health.closing:
				return
			default:
			}
			b.log.Error("the supervisor of a child of the pool gave up: the child is not restarted again", zap.Int("child", i))
			if b.health.up.Add(-1) == 0 {
				b.log.Error("every child of the pool has given up: requests are answered with an error, and /readyz with 503")
				close(b.health.gaveUp)
			}
		})
	}
}

// GaveUp is closed once the supervisor of every child of the pool has given up: the bridge
// will not serve 2026-07-28 requests (nor initialize-generation ones on 2026-07-28 children)
// again. relay bridge then answers /readyz with 503, and exits with --exit-on-give-up.
func (b *Bridge) GaveUp() <-chan struct{} { return b.health.gaveUp }

// unavailable answers a request for which no child of the pool is up: the supervisors gave
// up, or the bridge is closing. Neither is worth a retry.
func (b *Bridge) unavailable() *jsonrpc.Error {
	select {
	case <-b.health.closing:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the bridge is shutting down",
			Data: map[string]any{"reason": "stopping", "retryable": false}}
	default:
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: "Internal error: the server keeps exiting, and relay stopped restarting it; see relay's log for the server's last lines on stderr",
		Data:    map[string]any{"reason": "gave up", "retryable": false}}
}

// callError turns a failure of a call to a child of the pool into the client's answer.
func (b *Bridge) callError(err error) error {
	if errors.Is(err, errChildGone) {
		return b.unavailable()
	}
	return err
}
