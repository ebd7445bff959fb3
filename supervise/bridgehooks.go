package supervise

import "context"

// ServeFrames runs the proxy's core (the one Proxy and Client stand on: id mapping, replay,
// poison detection, the legacy handshake replayed on every new child, the drain and the stop
// sequence) between a host given as channels of frames and the children sup runs. It reads
// fromHost until it is closed (the host's input has ended), sends the host's frames on toHost,
// which the caller owns and closes once ServeFrames returns, and returns as Proxy does.
//
// Unlike a Client, the caller sees every frame the child sends: notifications that belong to
// no request, and the child's own requests to its client (their ids renamed by the core; the
// caller answers them on fromHost with the same ids). relay bridge gives each
// initialize-generation HTTP session a child of its own this way.
func ServeFrames(ctx context.Context, sup *Supervisor, fromHost <-chan []byte, toHost chan<- []byte, opts *ProxyOptions) error {
	return serveFrames(ctx, sup, fromHost, toHost, opts.withDefaults())
}
