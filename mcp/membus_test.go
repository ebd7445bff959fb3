package mcp_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
)

var _ mcp.Bus = mcp.NewMemoryBus()

// receive returns the next message of ch, failing the test if none comes in time.
func receive(t *testing.T, ch <-chan []byte, what string) []byte {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the channel closed", what)
		}
		return msg
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: nothing came", what)
	}
	return nil
}

// silent fails the test if ch delivers a message within a moment.
func silent(t *testing.T, ch <-chan []byte, what string) {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if ok {
			t.Fatalf("%s: got %q, want nothing", what, msg)
		}
	case <-time.After(50 * time.Millisecond):
	}
}

// Every subscriber of a topic gets what is published on it once Subscribe has returned, in
// the order one publisher published (the Bus contract), and no other topic's.
func TestMemoryBus_DeliversToEverySubscriberInOrder(t *testing.T) {
	b := mcp.NewMemoryBus()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	one, err := b.Subscribe(ctx, "changes")
	if err != nil {
		t.Fatal(err)
	}
	two, err := b.Subscribe(ctx, "changes")
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.Subscribe(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := b.Publish(ctx, "changes", fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, ch := range []<-chan []byte{one, two} {
		for i := range 3 {
			if got, want := string(receive(t, ch, "a subscriber")), fmt.Sprintf("m%d", i); got != want {
				t.Fatalf("got %q, want %q: in publishing order", got, want)
			}
		}
	}
	silent(t, other, "another topic's subscriber")
}

// Each subscriber gets its own copy: the publisher may reuse its buffer once Publish has
// returned, and one subscriber's changes do not reach another.
func TestMemoryBus_EachSubscriberGetsItsOwnCopy(t *testing.T) {
	b := mcp.NewMemoryBus()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	one, _ := b.Subscribe(ctx, "t")
	two, _ := b.Subscribe(ctx, "t")
	msg := []byte("abc")
	if err := b.Publish(ctx, "t", msg); err != nil {
		t.Fatal(err)
	}
	msg[0] = 'X'
	first := receive(t, one, "one")
	first[1] = 'Y'
	if got := string(receive(t, two, "two")); got != "abc" {
		t.Fatalf("second subscriber got %q, want abc", got)
	}
	if string(first) != "aYc" {
		t.Fatalf("first subscriber's copy %q", first)
	}
}

// A subscriber that falls behind loses messages; Publish never waits for it.
func TestMemoryBus_ASubscriberBehindLosesMessagesAndHoldsNobodyUp(t *testing.T) {
	b := mcp.NewMemoryBus()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow, _ := b.Subscribe(ctx, "t")
	const n = 1000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			b.Publish(ctx, "t", fmt.Appendf(nil, "%d", i))
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish waited for a subscriber that does not read")
	}
	got := 0
	for len(slow) > 0 {
		if want := fmt.Sprint(got); string(<-slow) != want {
			t.Fatalf("message %d is not %s: the first ones are kept, the rest lost", got, want)
		}
		got++
	}
	if got == 0 || got >= n {
		t.Fatalf("the subscriber kept %d of %d messages: want some lost, not all", got, n)
	}
}

// The channel closes when the subscription's ctx ends; the bus then forgets it, and a
// Subscribe or Publish with an ended ctx fails.
func TestMemoryBus_ChannelClosesWhenCtxEnds(t *testing.T) {
	b := mcp.NewMemoryBus()
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.Subscribe(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("a message on a subscription whose ctx ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the channel stayed open after ctx ended")
	}
	if err := b.Publish(context.Background(), "t", []byte("after")); err != nil {
		t.Fatalf("Publish with nobody subscribed: %v", err)
	}
	if _, err := b.Subscribe(ctx, "t"); err == nil {
		t.Fatal("Subscribe with an ended ctx succeeded")
	}
	if err := b.Publish(ctx, "t", nil); err == nil {
		t.Fatal("Publish with an ended ctx succeeded")
	}
}

// Publishing while subscriptions come and go neither panics (a send on a closed channel) nor
// races.
func TestMemoryBus_PublishWhileSubscriptionsEnd(t *testing.T) {
	b := mcp.NewMemoryBus()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				b.Publish(context.Background(), "t", []byte("m"))
			}
		}
	})
	for range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := b.Subscribe(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		for range ch { // drains until the close
		}
	}
	close(stop)
	wg.Wait()
}

func TestMemoryBus_ZeroValueSaysToUseNewMemoryBus(t *testing.T) {
	var b mcp.MemoryBus
	if err := b.Publish(context.Background(), "t", nil); err == nil {
		t.Fatal("Publish on a zero MemoryBus succeeded")
	}
	if _, err := b.Subscribe(context.Background(), "t"); err == nil {
		t.Fatal("Subscribe on a zero MemoryBus succeeded")
	}
}
