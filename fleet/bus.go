package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/relayrt/relay/mcp"
)

// Bus is an mcp.Bus on Redis pub/sub: what any instance of the fleet publishes on a topic
// reaches the subscribers of every instance. Redis keeps nothing: a message reaches those
// subscribed when it is published, at most once.
//
// Each subscription has a connection of its own and one goroutine that reads it, hands
// messages to the channel without waiting (dropping them for a subscriber whose buffer is
// full), and checks the connection with a PING when it has been quiet for five times
// Options.Timeout (10 s by default).
// Subscriptions are meant to be few per instance (one per kind of change, fanned out in the
// process), not one per client.
type Bus struct{ r *Redis }

var _ mcp.Bus = (*Bus)(nil)

// busHealth is how many Options.Timeout a subscription's connection may be quiet before it
// is checked with a PING; a PING unanswered as long again means the subscription is lost (a
// Redis that hangs, or a network that drops the connection without a word).
const busHealth = 5

// Bus returns the fleet's bus.
func (r *Redis) Bus() *Bus { return &Bus{r} }

func (b *Bus) channel(topic string) string { return b.r.opts.Prefix + "bus:" + topic }

// Publish implements mcp.Bus.
func (b *Bus) Publish(ctx context.Context, topic string, msg []byte) error {
	return b.r.wrap(ctx, "publishing on the bus", b.r.client.Publish(ctx, b.channel(topic), msg).Err())
}

// Subscribe implements mcp.Bus. It returns once Redis has confirmed the subscription. The
// channel is closed when ctx ends, when the subscription is lost (Redis went away: an error
// of Subscribe then wraps ErrUnavailable until it is back), and on Close.
func (b *Bus) Subscribe(ctx context.Context, topic string) (<-chan []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fleet: subscribing on the bus: %w", err)
	}
	r := b.r
	ps := r.client.Subscribe(ctx) // no channel yet: the error of subscribing comes next
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		ps.Close()
		return nil, errors.New("fleet: subscribing on the bus: the Redis connection was closed (Close); open another")
	}
	r.subs[ps] = struct{}{}
	r.wg.Add(1) // under mu, so that Close, once it has set closed, waits for every one
	r.mu.Unlock()
	fail := func(err error) (<-chan []byte, error) {
		b.release(ps)
		r.wg.Done()
		return nil, r.wrap(ctx, "subscribing on the bus", err)
	}
	if err := ps.Subscribe(ctx, b.channel(topic)); err != nil {
		return fail(err)
	}
	confirm, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	reply, err := ps.ReceiveTimeout(confirm, r.opts.Timeout)
	if err != nil {
		return fail(err)
	}
	if s, ok := reply.(*redis.Subscription); !ok || s.Kind != "subscribe" {
		return fail(fmt.Errorf("Redis answered SUBSCRIBE with %v", reply))
	}
	out := make(chan []byte, r.opts.BusBuffer)
	go b.read(ctx, ps, out)
	return out, nil
}

// read hands the subscription's messages to out until ctx ends or the connection fails,
// then closes out.
func (b *Bus) read(ctx context.Context, ps *redis.PubSub, out chan<- []byte) {
	defer b.r.wg.Done()
	defer close(out)
	defer b.release(ps)
	// A read does not end with ctx: closing the connection ends it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(context.Background(), busHealth*b.r.opts.Timeout)
		var ne net.Error
		switch {
		case err == nil:
			pinged = false
		case errors.As(err, &ne) && ne.Timeout() && !pinged && ctx.Err() == nil:
			if ps.Ping(context.Background()) != nil {
				return
			}
			pinged = true
			continue
		default:
			return // closed, ctx ended, or the connection is lost
		}
		if m, ok := msg.(*redis.Message); ok {
			select {
			case out <- []byte(m.Payload):
			default: // a subscriber behind loses the message rather than hold up the rest
			}
		}
	}
}

// release closes a subscription's connection and forgets it.
func (b *Bus) release(ps *redis.PubSub) {
	b.r.mu.Lock()
	delete(b.r.subs, ps)
	b.r.mu.Unlock()
	ps.Close()
}
