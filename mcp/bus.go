package mcp

import "context"

// Bus carries messages between the instances of a fleet (several processes serving as one
// server behind a load balancer): what one instance publishes on a topic, every instance
// subscribed to that topic receives, the publisher included. Delivery is at most once, in the
// order one publisher published; a subscriber that falls behind loses messages rather than
// holding publishers up. A Bus therefore carries what can be told again (a list changed, a
// resource or a task was updated), never what must not be lost.
//
// A single process needs no Bus. A shared one (package fleet's, on Redis) lets a client
// listening on one instance hear of changes made through another.
type Bus interface {
	// Publish sends msg to topic's subscribers; it returns once the bus has taken it, or
	// with an error saying why it could not.
	Publish(ctx context.Context, topic string, msg []byte) error
	// Subscribe returns once the subscription is in force: every message published on topic
	// after it returns is delivered on the channel, until ctx ends. The channel is closed
	// then, and when the bus loses the subscription (the subscriber subscribes again, and
	// knows it may have missed messages meanwhile).
	Subscribe(ctx context.Context, topic string) (<-chan []byte, error)
}
