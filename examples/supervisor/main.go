// Command supervisor shows the supervise package embedded in a Go program: it keeps a stdio
// server running, restarting it with backoff when it dies, and reports every lifecycle
// event. Run it with the server's command after --:
//
//	go run ./examples/supervisor -- go run ./examples/echo
//
// Stop it with Ctrl-C: the child is stopped with the full sequence (close stdin, wait,
// SIGTERM, SIGKILL).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/relayrt/relay/supervise"
)

func main() {
	supervise.GuardMain() // first: this program may be started as one of its children's guards
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: supervisor -- CMD [ARGS...]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	sup := supervise.New(supervise.Spec{
		Command:    supervise.Command{Path: args[0], Args: args[1:]},
		Restart:    supervise.OnFailure,
		MinBackoff: 200 * time.Millisecond,
		MaxBackoff: 5 * time.Second,
		Intensity:  5, Window: time.Minute, // then give up
	})
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	for e := range sup.Events() {
		switch e.Kind {
		case supervise.EventStarted:
			fmt.Fprintf(os.Stderr, "started %s (pid %d)\n", e.Child.Name(), e.Child.PID())
		case supervise.EventExited:
			fmt.Fprintf(os.Stderr, "exited: %s\n", e.Exit)
		case supervise.EventRestarting:
			fmt.Fprintf(os.Stderr, "restarting in %s (%d restarts this minute)\n", e.Delay.Round(time.Millisecond), e.Restarts)
		case supervise.EventGaveUp:
			fmt.Fprintf(os.Stderr, "gave up: %v\n", e.Err)
		}
	}
	if err := <-done; errors.Is(err, supervise.ErrGaveUp) {
		os.Exit(1)
	}
}
