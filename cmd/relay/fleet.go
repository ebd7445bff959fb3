package main

import (
	"cmp"
	"flag"

	"github.com/relayrt/relay/fleet"
	"github.com/relayrt/relay/internal/fleetflag"
)

// instanceFlag declares --instance, the name of an HTTP server of relay's among several
// behind a load balancer (httpx.MCPOptions.Instance, checked by httpx.CheckInstance).
func instanceFlag(fs *flag.FlagSet) *string {
	return fs.String("instance", "", "with --listen: this instance's `NAME` behind a load balancer (letters and digits): every answer carries it in a Relay-Instance header, and its session ids start with it")
}

// exportFleet hands the fleet's Redis named by redis to this process's children in
// $RELAY_REDIS_URL, under a key prefix of their own (scope), or takes the variable out when
// there is no fleet.
func exportFleet(redis *fleetflag.Flag, scope string) error {
	url, err := redis.URL()
	if err != nil || url == "" {
		return cmp.Or(err, fleetflag.Export(""))
	}
	if url, err = fleet.ScopedURL(url, scope); err != nil {
		return err
	}
	return fleetflag.Export(url)
}
