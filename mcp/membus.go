package mcp

import (
	"bytes"
	"context"
	"errors"
	"sync"
)

// memoryBusBuffer is how many messages a MemoryBus subscriber may fall behind before it
// loses them.
const memoryBusBuffer = 256

// MemoryBus is a Bus within one process: for several Servers in one process, and for tests
// of what a fleet does. It keeps the Bus interface's promises and no more: a message reaches
// the subscriptions in force when it is published, each gets its own copy, and a subscriber
// more than a buffer behind loses messages rather than holding Publish up. Its zero value is
// not ready: use NewMemoryBus.
type MemoryBus struct {
	mu     sync.Mutex
	topics map[string]map[*memorySub]struct{}
}

type memorySub struct {
	ch chan []byte
}

// NewMemoryBus returns an empty in-process Bus.
func NewMemoryBus() *MemoryBus {
	return &MemoryBus{topics: map[string]map[*memorySub]struct{}{}}
}

var errNoMemoryBus = errors.New("mcp: MemoryBus used without NewMemoryBus; make it with NewMemoryBus")

// Publish delivers msg to topic's subscribers as they are now, without waiting for any: a
// subscriber whose buffer is full does not get it. It fails only when ctx has ended.
func (b *MemoryBus) Publish(ctx context.Context, topic string, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.topics == nil {
		return errNoMemoryBus
	}
	for sub := range b.topics[topic] {
		select {
		case sub.ch <- bytes.Clone(msg): // its own copy: a subscriber may keep or change it
		default:
		}
	}
	return nil
}

// Subscribe subscribes to topic: the subscription is in force when it returns, and its
// channel is closed when ctx ends. It fails only when ctx has ended already.
func (b *MemoryBus) Subscribe(ctx context.Context, topic string) (<-chan []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub := &memorySub{ch: make(chan []byte, memoryBusBuffer)}
	b.mu.Lock()
	if b.topics == nil {
		b.mu.Unlock()
		return nil, errNoMemoryBus
	}
	if b.topics[topic] == nil {
		b.topics[topic] = map[*memorySub]struct{}{}
	}
	b.topics[topic][sub] = struct{}{}
	b.mu.Unlock()
	// Closed under the lock that Publish sends under, so no send meets a closed channel.
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.topics[topic], sub)
		if len(b.topics[topic]) == 0 {
			delete(b.topics, topic)
		}
		close(sub.ch)
	})
	return sub.ch, nil
}
