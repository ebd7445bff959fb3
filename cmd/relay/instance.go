package main

import (
	"flag"
	"fmt"
)

// instanceFlag declares --instance, the name of an HTTP server of relay's among several
// behind a load balancer (httpx.MCPOptions.Instance).
func instanceFlag(fs *flag.FlagSet) *string {
	return fs.String("instance", "", "with --listen: this instance's `NAME` behind a load balancer (letters and digits): every answer carries it in a Relay-Instance header, and its session ids start with it")
}

// checkInstance refuses a name that httpx cannot use: letters and digits only.
func checkInstance(name string) error {
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return fmt.Errorf("--instance %q: use letters and digits only", name)
		}
	}
	return nil
}
