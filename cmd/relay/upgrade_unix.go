//go:build unix

package main

import (
	"os"
	"syscall"
)

// upgradeSignals ask relay supervise and relay bridge for a zero-downtime upgrade.
var upgradeSignals = []os.Signal{syscall.SIGHUP}
