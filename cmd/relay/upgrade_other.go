//go:build !unix

package main

import "os"

// upgradeSignals: none outside Unix; --watch works everywhere.
var upgradeSignals []os.Signal
