package actors_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/relayrt/relay/actors"
)

// A group runs a reader and a writer together: when the reader meets the end of its input,
// the writer's context is cancelled, and Run returns once both have stopped.
func ExampleGroup() {
	lines := actors.NewMailbox[string](8)
	var g actors.Group
	g.Add(func(ctx context.Context) error { // reader
		for _, l := range []string{"one", "two"} {
			if err := lines.Send(ctx, l); err != nil {
				return err
			}
		}
		return errors.New("end of input")
	})
	g.Add(func(ctx context.Context) error { // writer
		for {
			select {
			case l := <-lines.Receive():
				fmt.Println("wrote", l)
			case <-ctx.Done():
				for lines.Len() > 0 { // drain what is left before stopping
					fmt.Println("wrote", <-lines.Receive())
				}
				fmt.Println("writer stopped:", ctx.Err())
				return nil
			}
		}
	})
	fmt.Println("Run:", g.Run(context.Background()))
	// Output:
	// wrote one
	// wrote two
	// writer stopped: context canceled
	// Run: end of input
}

// A full mailbox never grows: TrySend refuses at once, Send waits until its context is done.
func ExampleMailbox() {
	m := actors.NewMailbox[string](1)
	fmt.Println(m.TrySend("first"))
	fmt.Println(m.TrySend("second"))

	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("caller gave up"))
	fmt.Println(m.Send(ctx, "third"))

	fmt.Println(m.Len(), <-m.Receive())
	// Output:
	// <nil>
	// actors: mailbox full
	// caller gave up
	// 1 first
}
