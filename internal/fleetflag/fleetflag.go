// Package fleetflag makes a Relay program a member of a fleet: instances behind a load
// balancer with no affinity, sharing their state on Redis (package fleet). It declares
// --redis URL (or the environment variable RELAY_REDIS_URL, never both) and sets the options
// of the program's MCP server and HTTP handler from the connection.
package fleetflag

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/relayrt/relay/fleet"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
)

// Env is the environment variable that names the fleet's Redis.
const Env = fleet.EnvURL

// FlagName is the flag that names the fleet's Redis.
const FlagName = "redis"

// Usage is the flag's help text.
const Usage = "the `URL` of the Redis this instance shares its state through with the other instances of its fleet " +
	"(redis://[user:password@]host:port[/db], rediss:// for TLS; ?prefix=NAME: to share one Redis between fleets), " +
	"so that any instance serves any request; or set $" + Env + ", not both. Default: none, this instance alone"

// Flag is the --redis flag of a flag set.
type Flag struct{ url *string }

// AddFlag declares --redis on fs, its help saying first what it goes with in that program
// (such as "with -http").
func AddFlag(fs *flag.FlagSet, with string) *Flag {
	return &Flag{url: fs.String(FlagName, "", with+": "+Usage)}
}

// URL returns the fleet's Redis URL from the flag or from $RELAY_REDIS_URL: "" when neither
// gives one, an error when both do.
func (f *Flag) URL() (string, error) {
	env := os.Getenv(Env)
	if *f.url != "" && env != "" {
		return "", fmt.Errorf("the fleet's Redis is given twice, by --%s and by $%s: give it one way (unset %s, or drop --%s)",
			FlagName, Env, Env, FlagName)
	}
	if *f.url != "" {
		return *f.url, nil
	}
	return env, nil
}

// Given reports whether --redis was on the command line (rather than $RELAY_REDIS_URL, or
// neither).
func (f *Flag) Given() bool { return *f.url != "" }

// Export sets $RELAY_REDIS_URL to url in this process's environment ("" takes it out), for
// the children a program starts: Relay's servers keep their tasks and tell their changes
// through the fleet's Redis when they find it there (Member.Server).
func Export(url string) error {
	if url == "" {
		return os.Unsetenv(Env)
	}
	return os.Setenv(Env, url)
}

// Member is an instance's membership of its fleet: its connection to Redis.
type Member struct{ Redis *fleet.Redis }

// Join connects to the fleet's Redis the flag names: nil, and no error, when none is named.
// It does not wait for Redis (fleet.Options.Lazy): an instance starts while Redis is down,
// serves what needs no Redis, and what needs it fails with a retryable error until Redis is
// up.
func (f *Flag) Join(ctx context.Context) (*Member, error) {
	u, err := f.URL()
	if err != nil || u == "" {
		return nil, err
	}
	r, err := fleet.Open(ctx, u, &fleet.Options{Lazy: true})
	if err != nil {
		return nil, err
	}
	return &Member{Redis: r}, nil
}

// Server sets what an MCP server of the fleet shares: its changes (so that a listener on
// one instance hears what changed through another) and its tasks (so that any instance
// answers tasks/get). A nil Member leaves o as it is.
func (m *Member) Server(o *mcp.ServerOptions) {
	if m == nil {
		return
	}
	o.Bus = m.Redis.Bus()
	o.TaskStore = m.Redis.TaskStore(nil)
}

// Handler sets what an HTTP handler of the fleet shares: initialize-generation sessions,
// their SSE events, and the messages between the instances that serve them. A nil Member
// leaves o as it is.
func (m *Member) Handler(o *httpx.MCPOptions) {
	if m == nil {
		return
	}
	o.SessionStore = m.Redis.SessionStore()
	o.EventStore = m.Redis.EventStore()
	o.Bus = m.Redis.Bus()
}

// Close closes the connection; nil does nothing.
func (m *Member) Close() error {
	if m == nil {
		return nil
	}
	return m.Redis.Close()
}
