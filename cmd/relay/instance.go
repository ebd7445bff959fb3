package main

import "flag"

// instanceFlag declares --instance, the name of an HTTP server of relay's among several
// behind a load balancer (httpx.MCPOptions.Instance, checked by httpx.CheckInstance).
func instanceFlag(fs *flag.FlagSet) *string {
	return fs.String("instance", "", "with --listen: this instance's `NAME` behind a load balancer (letters and digits): every answer carries it in a Relay-Instance header, and its session ids start with it")
}
