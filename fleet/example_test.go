package fleet_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/relayrt/relay/fleet"
)

// An instance opens the fleet's Redis once and takes its stores and bus from it. A
// subscriber keeps its subscription: when the channel closes while its context lives, the
// subscription was lost (Redis went away), and it subscribes again, retrying while Redis is
// unavailable, and treats the gap as a change it may have missed.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := fleet.Open(ctx, "redis://127.0.0.1:6379", &fleet.Options{Prefix: "relay:prod:"})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	_, _ = r.EventStore(), r.TaskStore(nil) // an httpx.EventStore and an mcp.TaskStore
	bus := r.Bus()
	for ctx.Err() == nil {
		ch, err := bus.Subscribe(ctx, "tools/list_changed")
		if errors.Is(err, fleet.ErrUnavailable) {
			time.Sleep(time.Second)
			continue
		} else if err != nil {
			log.Print(err)
			return
		}
		refresh() // what was published while unsubscribed is lost: catch up
		for range ch {
			refresh()
		}
	}
}

func refresh() {}
