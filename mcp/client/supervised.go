package client

import (
	"context"
	"sync"
	"time"

	"github.com/relayrt/relay/supervise"
)

// SupervisedTransport starts a stdio server as a supervised child, with the core of relay
// supervise in the same process (supervise.ServeFrames): a child that dies is started
// again with backoff, the handshake is replayed to it, the calls in flight that are safe to
// send again (read-only tools, lists, reads) are, the others are answered with an error
// that says the server restarted, and a call that kills the child each time it is sent is
// found and answered with an error instead of being sent again. Close stops the child in
// the spec's order, after the calls in flight have had ProxyOptions.Drain to end.
type SupervisedTransport struct {
	// Spec says what to run and how to restart it (Spec.Command; zero fields are
	// supervise's defaults: restart always, backoff 100 ms to 30 s, give up after 5
	// restarts in a minute).
	Spec supervise.Spec
	// Options tune the proxy core (replay, queue, timeouts, probes, drain; nil: defaults).
	Options *supervise.ProxyOptions

	mu  sync.Mutex
	sup *supervise.Supervisor // the running one, once dialled
}

// Upgrade replaces the running child with a new one without dropping the client
// (supervise.Supervisor.Upgrade: the new child is brought to the old one's state and takes
// the new requests; the old one finishes what it has in flight), and returns once the new
// child serves, or why the old one still does. It returns ErrClosed before the transport
// is dialled.
func (t *SupervisedTransport) Upgrade(ctx context.Context, reason string) error {
	t.mu.Lock()
	sup := t.sup
	t.mu.Unlock()
	if sup == nil {
		return ErrClosed
	}
	return sup.Upgrade(ctx, reason)
}

// Supervised returns a transport that runs name with args as a supervised child.
func Supervised(name string, args ...string) *SupervisedTransport {
	return &SupervisedTransport{Spec: supervise.Spec{Command: supervise.Command{Path: name, Args: args}}}
}

func (t *SupervisedTransport) dial(ctx context.Context, in *inbox) (conn, error) {
	var opts supervise.ProxyOptions
	if t.Options != nil {
		opts = *t.Options
	}
	fromClient := make(chan []byte, 64)
	toClient := make(chan []byte, 64)
	life, end := context.WithCancel(context.Background())
	sup := supervise.New(t.Spec)
	t.mu.Lock()
	t.sup = sup
	t.mu.Unlock()
	proxied := make(chan error, 1)
	go func() { // the proxy core, which runs the supervisor; its output ends when it returns
		err := supervise.ServeFrames(life, sup, fromClient, toClient, &opts)
		close(toClient)
		proxied <- err
	}()
	s := newStream(toClient, in)
	writerDone := make(chan struct{})
	go func() { // the writer actor: its end is the end of the core's input
		defer close(writerDone)
		defer close(fromClient)
		for f := range s.out {
			select {
			case fromClient <- f:
			case <-life.Done():
			}
		}
	}()
	drain := opts.Drain
	if drain <= 0 {
		drain = 5 * time.Second
	}
	s.stop = func() error {
		<-writerDone
		// The core drains what is in flight, then stops the child; past that, give up on it.
		timer := time.NewTimer(drain + 15*time.Second)
		defer timer.Stop()
		var err error
		select {
		case err = <-proxied:
		case <-timer.C:
			end()
			err = <-proxied
		}
		end()
		return err
	}
	return s, nil
}
