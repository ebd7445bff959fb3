// Package e2e holds Relay's end-to-end tests: real binaries over real pipes.
package e2e
