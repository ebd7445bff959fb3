//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyReload sends on c at each SIGHUP, until stop is called.
func notifyReload(c chan<- os.Signal) (stop func()) {
	signal.Notify(c, syscall.SIGHUP)
	return func() { signal.Stop(c) }
}
