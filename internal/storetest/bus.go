package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
)

// waitBus bounds every wait on a bus; a wait that reaches it is a failure.
const waitBus = 5 * time.Second

// Bus runs the Bus suite. open returns two buses of one fleet, as two instances would have:
// what one publishes, subscribers of both receive. Each subtest opens its own pair.
func Bus(t *testing.T, open func(t *testing.T) (a, b mcp.Bus)) {
	t.Run("ReachesEveryInstance", func(t *testing.T) { busReachesEveryInstance(t, open) })
	t.Run("HearsEveryLaterPublishInOrder", func(t *testing.T) { busHearsEveryLaterPublish(t, open) })
	t.Run("TopicsApart", func(t *testing.T) { busTopicsApart(t, open) })
	t.Run("CancelClosesTheChannel", func(t *testing.T) { busCancelCloses(t, open) })
	t.Run("ASlowSubscriberBlocksNobody", func(t *testing.T) { busSlowSubscriber(t, open) })
}

func subscribe(t *testing.T, ctx context.Context, b mcp.Bus, topic string) <-chan []byte {
	t.Helper()
	ch, err := b.Subscribe(ctx, topic)
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", topic, err)
	}
	return ch
}

func publish(t *testing.T, b mcp.Bus, topic, msg string) {
	t.Helper()
	if err := b.Publish(context.Background(), topic, []byte(msg)); err != nil {
		t.Fatalf("Publish(%q): %v", topic, err)
	}
}

// receive waits for the next message on ch.
func receive(t *testing.T, ch <-chan []byte, who string) string {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the channel closed", who)
		}
		return string(msg)
	case <-time.After(waitBus):
		t.Fatalf("%s: nothing received in %v", who, waitBus)
	}
	return ""
}

// quiet checks that nothing arrives on ch for a little while.
func quiet(t *testing.T, ch <-chan []byte, who string) {
	t.Helper()
	select {
	case msg := <-ch:
		t.Errorf("%s received %q, want nothing", who, msg)
	case <-time.After(100 * time.Millisecond):
	}
}

func busReachesEveryInstance(t *testing.T, open func(*testing.T) (mcp.Bus, mcp.Bus)) {
	a, b := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	onA, onB := subscribe(t, ctx, a, "tools"), subscribe(t, ctx, b, "tools")
	publish(t, a, "tools", "from a")
	if got := receive(t, onA, "a's subscriber"); got != "from a" {
		t.Errorf("a's subscriber got %q of a's publish", got)
	}
	if got := receive(t, onB, "b's subscriber"); got != "from a" {
		t.Errorf("b's subscriber got %q of a's publish", got)
	}
	publish(t, b, "tools", "from b")
	for who, ch := range map[string]<-chan []byte{"a's subscriber": onA, "b's subscriber": onB} {
		if got := receive(t, ch, who); got != "from b" {
			t.Errorf("%s got %q of b's publish", who, got)
		}
	}
	// Two subscriptions to one topic on one instance both hear it.
	again := subscribe(t, ctx, a, "tools")
	publish(t, b, "tools", "twice")
	for who, ch := range map[string]<-chan []byte{"a's first": onA, "a's second": again, "b's": onB} {
		if got := receive(t, ch, who); got != "twice" {
			t.Errorf("%s subscriber got %q", who, got)
		}
	}
}

// busHearsEveryLaterPublish: a Subscribe that has returned hears everything published after,
// without a pause between them, in the order one publisher published.
func busHearsEveryLaterPublish(t *testing.T, open func(*testing.T) (mcp.Bus, mcp.Bus)) {
	a, b := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for round := range 20 {
		topic := fmt.Sprintf("round-%d", round)
		ch := subscribe(t, ctx, b, topic)
		publish(t, a, topic, "first")
		if got := receive(t, ch, topic); got != "first" {
			t.Fatalf("%s: got %q, want the first publish after Subscribe returned", topic, got)
		}
	}
	ch := subscribe(t, ctx, b, "ordered")
	const n = 50
	for i := range n {
		publish(t, a, "ordered", fmt.Sprint(i))
	}
	for i := range n {
		if got := receive(t, ch, "ordered"); got != fmt.Sprint(i) {
			t.Fatalf("message %d is %q: out of order or lost", i, got)
		}
	}
}

func busTopicsApart(t *testing.T, open func(*testing.T) (mcp.Bus, mcp.Bus)) {
	a, b := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x, xy := subscribe(t, ctx, b, "x"), subscribe(t, ctx, b, "x.y")
	star := subscribe(t, ctx, b, "*") // a topic is a name, not a pattern
	publish(t, a, "x.y", "to x.y")
	if got := receive(t, xy, "x.y"); got != "to x.y" {
		t.Errorf("x.y got %q", got)
	}
	quiet(t, x, "x")
	quiet(t, star, "*")
}

func busCancelCloses(t *testing.T, open func(*testing.T) (mcp.Bus, mcp.Bus)) {
	a, _ := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := subscribe(t, ctx, a, "t")
	cancel()
	deadline := time.After(waitBus)
	for more := true; more; {
		select {
		case _, more = <-ch: // messages published before the cancel may still come first
		case <-deadline:
			t.Fatalf("the channel is still open %v after its context ended", waitBus)
		}
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if ch, err := a.Subscribe(done, "t"); err == nil {
		t.Errorf("Subscribe with an ended context succeeded (channel %v)", ch)
	}
	// The bus still works for others.
	live, cancelLive := context.WithCancel(context.Background())
	defer cancelLive()
	other := subscribe(t, live, a, "t")
	publish(t, a, "t", "still here")
	if got := receive(t, other, "a later subscriber"); got != "still here" {
		t.Errorf("a later subscriber got %q", got)
	}
}

// busSlowSubscriber: a subscriber that does not read loses messages; the publisher and the
// other subscribers go on as if it were not there.
func busSlowSubscriber(t *testing.T, open func(*testing.T) (mcp.Bus, mcp.Bus)) {
	a, b := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := subscribe(t, ctx, b, "busy") // never read until the end
	fast := subscribe(t, ctx, b, "busy")
	const n = 5000
	last := fmt.Sprint(n - 1)
	got := make(chan int, 1)
	go func() {
		count := 0
		defer func() { got <- count }()
		timeout := time.After(waitBus * 2)
		for {
			select {
			case msg, ok := <-fast:
				if !ok {
					return
				}
				if count++; string(msg) == last {
					return
				}
			case <-timeout:
				return
			}
		}
	}()
	start := time.Now()
	for i := range n {
		publish(t, a, "busy", fmt.Sprint(i))
	}
	if took := time.Since(start); took > waitBus*2 {
		t.Errorf("publishing %d messages past a subscriber that does not read took %v", n, took)
	}
	// The one that reads hears to the end. It may lose a few itself if the machine stalls
	// it for longer than its buffer lasts, which says nothing of the slow one: only most
	// are required.
	if count := <-got; count < n/2 {
		t.Errorf("a subscriber that reads got %d of %d messages (not the last, or not most) beside one that does not", count, n)
	}
	// The slow one kept some, from the start, and lost the rest.
	kept := 0
	for {
		select {
		case msg := <-slow:
			if kept == 0 && string(msg) != "0" {
				t.Errorf("the slow subscriber's first message is %q, want the first published", msg)
			}
			kept++
			continue
		case <-time.After(100 * time.Millisecond):
		}
		break
	}
	if kept == 0 || kept >= n {
		t.Errorf("the slow subscriber kept %d of %d messages: want some, not all", kept, n)
	}
	publish(t, a, "busy", "after")
	if got := receive(t, slow, "the slow subscriber, once it reads"); got != "after" {
		t.Errorf("the slow subscriber, once it reads, got %q", got)
	}
}
