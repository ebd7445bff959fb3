package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/gateway"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/fleetflag"
	"github.com/relayrt/relay/internal/statekey"
	"github.com/relayrt/relay/mcp/client"
	relayrt "github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/stdio"
	"github.com/relayrt/relay/telemetry"
)

const gatewayUsage = `Usage: relay gateway --config FILE [--listen ADDR] [flags]
       relay gateway --status URL

Serves many MCP servers as one: the tools, prompts, resources and resource templates of
every server of FILE, merged, each call routed to the server that owns what it names. FILE
is the configuration hosts already have: {"mcpServers": {NAME: {"command", "args", "env",
"cwd"} | {"url", "headers"}}} (Claude Desktop, Cursor) or VS Code's {"servers": {...}};
"disabled": true leaves a server out, and keys Relay has no use for are ignored. Local
commands run as supervised children (restarted with backoff, safe calls replayed); remote
URLs are reached over Streamable HTTP. Tools and prompts are named PREFIX__NAME (PREFIX
defaults to the server's name; names are made to match ^[a-zA-Z0-9_-]{1,64}$, long ones
shortened with a hash suffix and the mapping logged). Resource URIs are kept; a URI two
servers list is served by the first in FILE. A server that is down leaves the lists
(list_changed) and its calls get an error that names it.

Relay's options for a server go in its "relay" object:
  "relay": {"prefix": "gh", "tools": {"allow": ["get_*"], "deny": ["*delete*"]},
            "prompts": {"deny": ["*"]},
            "oauth": {"clientId": "gw", "clientSecret": "${GH_SECRET}", "issuer": "https://..."},
            "restart": {"policy": "always", "limit": "5/1m", "backoff": "100ms..30s",
                        "replay": "annotated", "timeout": "0s", "probe": "0s",
                        "stopWait": "2s", "drain": "5s", "watch": "/path/to/server"}}

"watch" names the server's binary or script: when it changes, the child is upgraded
without downtime (a new child takes the new requests, the old one finishes its own).

Without --listen the merged server is served on stdio: a host runs relay gateway as its one
server. With --listen it is served over Streamable HTTP (endpoint /mcp, both protocol
generations, with Origin and Host checks, limits, /metrics, /healthz, and /readyz, which is
ready once every server has been tried and one is up).

SIGHUP or a change of FILE (checked every --reload-check) reloads it: servers added,
removed or changed start and stop one by one, and the host sees list_changed, never a
disconnect. Sampling, elicitation and roots requests of a server go to the host whose
request it answers; tasks follow their id to the server that runs them. The resource
relay-gateway://status says each server's state, restarts and last error; relay gateway
--status URL prints it for a gateway serving at URL. A remote server's "headers" and
"oauth" clientSecret may name environment variables (${VAR}); "oauth" uses the client
credentials grant (relay has no browser to send a user to). The standard OTEL_* variables
turn on OpenTelemetry: a server span per request, a client span per request passed on to a
server (which gets its trace context in _meta.traceparent), and a span per restart and
upgrade of a server's child. Not yet: an upstream's task notifications on listen streams.

Behind a load balancer, give every instance the same key with --state-key-file PATH or
$RELAY_STATE_KEY (not both), so that a 2026-07-28 host's retry of a call that asked for
input (input_required) may reach any of them: the gateway signs with it the requestState of
the questions it asks for servers of the initialize generation, and hands it to its local
servers in $RELAY_STATE_KEY, for the requestState a server of 2026-07-28 signs itself.
With --listen, --redis URL (or $RELAY_REDIS_URL) makes the instances a fleet that needs no
affinity: the sessions of hosts of the initialize generation, their SSE events and the
answers to their servers' questions are shared through that Redis, so any instance serves
any of their requests. Each instance runs servers of its own; the gateway hands each local
server the URL in $RELAY_REDIS_URL, under a key prefix named after the server, where Relay's
servers keep their tasks (so that, with one state key for all, a task is followed through
any instance) and tell their changes to the same server on the other instances. A local
server that keeps its tasks to itself answers a poll that reaches another instance that it
has no such task (the tasks extension asks for task ids no one can guess, so no other task
answers to it). A server's children then share one task quota: 256 tasks at once (they see
one caller, relay).

Flags:
`

func runGateway(args []string) int {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), gatewayUsage); fs.PrintDefaults() }
	config := fs.String("config", "", "the host configuration file to serve (required)")
	listen := fs.String("listen", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:8080) instead of stdio")
	separator := fs.String("separator", gateway.DefaultSeparator, "what joins a server's prefix and its own tool or prompt name")
	origins := fs.String("allow-origin", "", "with --listen: a browser origin to allow besides loopback ones")
	verbose := fs.Bool("v", false, "log upstreams' lifecycle and renamed tools at info level (default: warnings)")
	status := fs.String("status", "", "print the state of each server of the relay gateway --listen serving at this URL (e.g. http://127.0.0.1:8080/mcp), and exit: 0 when all are up, 1 otherwise")
	reloadEvery := fs.Duration("reload-check", 2*time.Second, "how often FILE is checked for a change, which reloads it as SIGHUP does (0: only SIGHUP)")
	quietChild := fs.Bool("quiet-child", false, "drop the local servers' stderr (default: each line is passed on to relay's stderr, prefixed with the server's name)")
	stateKey := statekey.AddFlag(fs, "the local servers get it in $"+statekey.Env+", so that those of 2026-07-28 sign theirs with it too")
	redis := fleetflag.AddFlag(fs, "with --listen")
	instance := instanceFlag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *status != "" {
		return printStatus(*status)
	}
	if *config == "" || len(fs.Args()) > 0 {
		fmt.Fprintln(os.Stderr, "relay gateway: give the host configuration with --config FILE (and no other arguments)")
		return 2
	}
	err := httpx.CheckInstance(*instance)
	if err == nil && redis.Given() && *listen == "" {
		err = errors.New("--redis shares HTTP sessions: it goes with --listen")
	}
	var key []byte
	if err == nil {
		key, err = stateKey.Key()
	}
	if err == nil {
		err = statekey.Export(key) // for the children: a 2026-07-28 upstream signs its own requestState
	}
	// Joined now, so that a bad URL is told before anything starts; on stdio,
	// $RELAY_REDIS_URL is not this instance's.
	var member *fleetflag.Member
	var redisURL string
	if err == nil && *listen != "" {
		member, err = redis.Join(context.Background())
		redisURL, _ = redis.URL()
	}
	if err == nil {
		err = fleetflag.Export("") // gateway.Options.Redis hands each local server a URL of its own
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay gateway:", err)
		return 2
	}
	defer member.Close()
	data, err := os.ReadFile(*config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay gateway:", err)
		return 2
	}
	cfg, err := gateway.ParseConfig(data)
	if err != nil {
		fmt.Fprintf(os.Stderr, "relay gateway: %s: %v\n", *config, err)
		return 2
	}
	log, childErr := childLog(*verbose, *quietChild)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// SIGHUP reloads FILE from now on (it waits in hup until the watcher runs): it never
	// ends relay, not even while the servers start.
	hup, stopHup := hangups()
	defer stopHup()
	tel, err := telemetry.FromEnv(ctx, "relay-gateway")
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay gateway:", err)
		return 2
	}
	defer tel.Shutdown(context.Background())
	ops := httpx.NewOps(nil)
	ops.SetReady(false)
	var ready atomic.Pointer[gateway.Gateway] // set once New has returned
	gopts := &gateway.Options{Separator: *separator, Logger: log, ChildStderr: childErr, Telemetry: tel, StateKey: key, Redis: redisURL,
		StateChanged: func() {
			if g := ready.Load(); g != nil {
				ops.SetReady(g.Ready())
			}
		}}
	g, err := gateway.New(ctx, cfg, gopts)
	if err == nil {
		ready.Store(g)
		ops.SetReady(g.Ready()) // what changed before the Store
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay gateway:", err)
		return 2
	}
	defer g.Close()
	// SIGHUP, or a change of FILE, reloads it: the servers added, removed or changed start
	// and stop one by one, and the host stays connected.
	stopReloads := askedOn(ctx, hup, *config, *reloadEvery, func(context.Context, string) { reloadConfig(*config, g, log) })
	defer stopReloads() // before g is closed
	// Served once every server has started or failed to (a minute at most): hosts list the
	// tools right after their handshake, and some never heed list_changed.
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	g.Started(sctx)
	cancel()
	if *listen == "" {
		if err := stdio.ServeStdio(ctx, g.Server().Runtime(tel.Option(telemetry.MCP))); err != nil {
			log.Error("relay gateway is exiting", zap.Error(err))
			return 1
		}
		return 0
	}
	opts := &httpx.MCPOptions{Ops: ops, Logger: log, Runtime: []relayrt.Option{tel.Option(telemetry.MCP)}, Instance: *instance}
	if *origins != "" {
		opts.AllowedOrigins = []string{*origins}
	}
	// Only the sessions are shared (not the gateway's changes, Member.Server): every instance
	// hears its own servers' list changes and resource updates (Relay's servers hear each
	// other's through the fleet's Redis, gateway.Options.Redis).
	member.Handler(opts)
	h := httpx.NewMCPHandler(g.Server(), opts)
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle("/", ops.Handler())
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay gateway:", err)
		return 1
	}
	// Said once the port is open, so that whoever waits for this line can connect at once.
	fmt.Fprintf(os.Stderr, "relay gateway: serving MCP on http://%s/mcp with %d servers\n", ln.Addr(), len(cfg.Servers))
	if err := httpx.Serve(ctx, ln, mux, &httpx.ServerOptions{Ops: ops, Drain: []io.Closer{h}}); err != nil {
		log.Error("relay gateway is exiting", zap.Error(err))
		return 1
	}
	return 0
}

// reloadConfig reloads the gateway's configuration from path. A file that cannot be read or
// is not a valid configuration is logged, and the gateway keeps the configuration it has.
func reloadConfig(path string, g *gateway.Gateway, log *zap.Logger) {
	data, err := os.ReadFile(path)
	if err == nil {
		var cfg *gateway.Config
		if cfg, err = gateway.ParseConfig(data); err == nil {
			err = g.Reload(cfg)
		}
	}
	if err != nil {
		log.Error("relay gateway cannot reload its configuration; it keeps the one it has", zap.String("config", path), zap.Error(err))
	}
}

// printStatus reads the status resource of the gateway at url and prints a line per server.
func printStatus(url string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, client.HTTP(url))
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay gateway --status:", err)
		return 2
	}
	defer c.Close()
	res, err := c.ReadResource(ctx, gateway.StatusURI)
	if err != nil || len(res.Contents) != 1 {
		fmt.Fprintf(os.Stderr, "relay gateway --status: %s does not serve %s (is it a relay gateway?): %v\n", url, gateway.StatusURI, err)
		return 2
	}
	var st struct{ Servers []gateway.UpstreamStatus }
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &st); err != nil {
		fmt.Fprintln(os.Stderr, "relay gateway --status: the status does not decode:", err)
		return 2
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SERVER\tSTATE\tRESTARTS\tTOOLS\tPROMPTS\tRESOURCES\tLAST ERROR")
	code := 0
	for _, s := range st.Servers {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", s.Name, s.State, s.Restarts, s.Tools, s.Prompts, s.Resources+s.Templates, s.LastError)
		if s.State != "up" {
			code = 1
		}
	}
	w.Flush()
	return code
}
