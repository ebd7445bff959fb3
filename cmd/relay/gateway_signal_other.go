//go:build !unix

package main

import "os"

// notifyReload does nothing where there is no SIGHUP: a changed configuration file is
// noticed by polling.
func notifyReload(chan<- os.Signal) (stop func()) { return func() {} }
