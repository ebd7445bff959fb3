package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/bridge"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/fleetflag"
	"github.com/relayrt/relay/internal/statekey"
	"github.com/relayrt/relay/record"
	relayrt "github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/telemetry"
)

const bridgeUsage = `Usage: relay bridge [flags] -- CMD [ARGS...]

Serves CMD, a stdio MCP server, over Streamable HTTP (endpoint /mcp) from supervised
children: 2026-07-28 requests go to the least-loaded child of a shared pool (--pool), and
initialize-generation clients are served too. When CMD speaks only the initialize
generation, each such HTTP session gets a child process of its own, initialized with the
client's own initialize: a warm spare (--spares) when one is left, so that the session does
not wait for a spawn; at most --max-sessions of them; a session's end (DELETE, --session-idle,
eviction) stops its child. Requests safe to repeat survive a child's crash, and everything an
HTTP server of Relay's has (Origin and Host checks, limits, /metrics, /healthz, /readyz,
graceful shutdown on SIGTERM) applies. The supervise flags below tune the children.
The standard OTEL_* variables turn on OpenTelemetry: a server span per request, a client
span per request passed on to a child (which gets its trace context in _meta.traceparent).
--record DIR records the frames between the bridge and each child, a file per child (so a
file per session with a server of the initialize generation), for "relay replay".
SIGHUP (Unix), and on every OS a change of the file named by --watch, upgrade every child
without downtime, one at a time: each is started again beside the old one and brought to its
state (a session's initialize replayed); it then takes every new request, and the old one
answers what it has in flight, within --drain. Sessions move to the new version at once,
and never end for it. A child whose upgrade fails keeps serving.
Behind a load balancer, give every instance the same key with --state-key-file PATH or
$RELAY_STATE_KEY (not both): the bridge hands it to its children in $RELAY_STATE_KEY, and
children that sign their input_required requestState with it (as Relay's examples do) take a
retry that reaches another instance, at the child of the same index in its pool. A question
of a child of the initialize generation waits in the instance that asked it: its retry must
reach that instance.
--redis URL (or $RELAY_REDIS_URL) makes the instances a fleet that needs no affinity when
CMD speaks 2026-07-28: the sessions of clients of the initialize generation, their SSE
events and the answers to the questions asked of them are shared through that Redis, and
any instance serves any of their requests from a child of its own pool. The bridge hands
the URL to its children in $RELAY_REDIS_URL (under a key prefix of their own): Relay's
servers keep their tasks there and tell their changes to the other children, and, with one
state key for all, a task is followed through any instance. Only give --redis over a CMD
that keeps its tasks in a store the fleet shares, under ids unique across it, as Relay's
servers do: a child is asked for the tasks other instances started. The children then
share one task quota: 256 tasks at once (they see one caller, relay). A CMD of the
initialize generation keeps each
session in a child of its own, on one instance: --redis is refused for it; put the
instances behind a balancer with affinity on Mcp-Session-Id instead.

Flags:
`

func runBridge(args []string) int {
	fs := flag.NewFlagSet("bridge", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), bridgeUsage); fs.PrintDefaults() }
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve HTTP on (loopback unless you choose otherwise)")
	pool := fs.Int("pool", runtime.NumCPU(), "number of children shared by 2026-07-28 requests (stateless)")
	maxSessions := fs.Int("max-sessions", 100, "initialize-generation sessions at most; with a CMD of that generation, each has a child of its own. A new one takes the place of the one idle longest, or is refused (503) when all are busy")
	spares := fs.Int("spares", 1, "children of the initialize generation kept spawned, not yet initialized, for the next sessions")
	exitOnGiveUp := fs.Bool("exit-on-give-up", false, "exit with status 1 once the supervisor of every child of the pool has given up (--restart-limit), so that an orchestrator restarts relay; without it relay stays up, /readyz answers 503 and requests get an error that is not retryable")
	sessionIdle := fs.Duration("session-idle", 10*time.Minute, "an initialize-generation session unused this long ends, and its child is stopped")
	origins := fs.String("allow-origin", "", "a browser origin to allow besides loopback ones")
	authIssuer := fs.String("auth-issuer", "", "require OAuth 2.1 access tokens from this authorization server (its issuer URL: https, or http on loopback); with --auth-audience")
	authAudience := fs.String("auth-audience", "", "this server's canonical resource URI, which every token must be issued for (e.g. https://mcp.example.com/mcp)")
	authScopes := fs.String("auth-scopes", "", "comma-separated scopes every request's token must hold (403 insufficient_scope otherwise)")
	authClient := fs.String("auth-introspection-client", "", "client id to introspect opaque tokens with (RFC 7662); its secret comes from $RELAY_AUTH_INTROSPECTION_SECRET")
	watch := fs.String("watch", "", "upgrade every child without downtime when this file (the server's binary or script) changes")
	stateKey := statekey.AddFlag(fs, "the bridge hands it to its children in $"+statekey.Env+": they sign the requestState it passes on")
	redis := fleetflag.AddFlag(fs, "for a CMD of 2026-07-28")
	instance := instanceFlag(fs)
	flags := addChildFlags(fs)
	rec := addRecordFlags(fs, "record the frames between the bridge and each child in this directory, a file per child (NDJSON, created 0600), for relay replay")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	recOpts, err := rec.options()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay bridge:", err)
		return 2
	}
	err = httpx.CheckInstance(*instance)
	var key []byte
	if err == nil {
		key, err = stateKey.Key()
	}
	if err == nil {
		err = statekey.Export(key) // the children sign the requestState the bridge passes on
	}
	var member *fleetflag.Member // joined now, so that a bad URL is told before anything starts
	if err == nil {
		member, err = redis.Join(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay bridge:", err)
		return 2
	}
	defer member.Close()
	if len(fs.Args()) == 0 {
		fmt.Fprintln(os.Stderr, "relay bridge: no command; put it after --, e.g. relay bridge -- ./server --stdio")
		return 2
	}
	spec, proxyOpts, log, err := flags.build(fs.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay bridge:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	tel, err := telemetry.FromEnv(ctx, "relay-bridge")
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay bridge:", err)
		return 2
	}
	defer tel.Shutdown(context.Background())
	if *maxSessions < 1 || *spares < 0 || *sessionIdle <= 0 {
		fmt.Fprintln(os.Stderr, "relay bridge: --max-sessions must be at least 1, --spares at least 0, --session-idle positive")
		return 2
	}
	bopts := bridge.Options{Pool: *pool, MaxSessions: *maxSessions, Spares: *spares,
		Spec: spec, Proxy: proxyOpts, Logger: log, Telemetry: tel, StateKey: key}
	bopts.Redis, _ = redis.URL() // the children keep their tasks in the fleet's Redis
	if *rec.path != "" {
		if bopts.Record, err = recordDir(*rec.path, recOpts, log); err != nil {
			fmt.Fprintln(os.Stderr, "relay bridge: --record:", err)
			return 2
		}
	}
	b, err := bridge.New(ctx, bopts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay bridge:", err)
		return 1
	}
	defer b.Close()
	if member != nil && b.SessionsLiveInChildren() {
		fmt.Fprintln(os.Stderr, "relay bridge: --redis: CMD speaks only the initialize generation, so each session lives in a child of its own, on one instance, and cannot be shared; "+
			"run the instances without --redis, behind a balancer with affinity on Mcp-Session-Id")
		return 2
	}
	stopUpgrades := upgradeOn(ctx, b.Upgrade, *watch, log)
	defer stopUpgrades()
	ops := httpx.NewOps(nil)
	opts := &httpx.MCPOptions{Ops: ops, Logger: log, Runtime: []relayrt.Option{tel.Option(telemetry.MCP)},
		MaxSessions: *maxSessions, SessionIdle: *sessionIdle, Instance: *instance}
	if *origins != "" {
		opts.AllowedOrigins = []string{*origins}
	}
	if *authIssuer != "" || *authAudience != "" {
		if *authIssuer == "" || *authAudience == "" {
			fmt.Fprintln(os.Stderr, "relay bridge: --auth-issuer and --auth-audience go together")
			return 2
		}
		var scopes []string
		for sc := range strings.SplitSeq(*authScopes, ",") {
			if sc = strings.TrimSpace(sc); sc != "" {
				scopes = append(scopes, sc)
			}
		}
		vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		v, err := httpx.NewTokenVerifier(vctx, httpx.TokenVerifierOptions{Issuer: *authIssuer, Audience: *authAudience, Scopes: scopes,
			IntrospectionClientID: *authClient, IntrospectionSecret: os.Getenv("RELAY_AUTH_INTROSPECTION_SECRET")})
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay bridge:", err)
			return 1
		}
		// The token stays here: children get requests, never the client's credentials.
		opts.Authenticator = v.Authenticate
		opts.ProtectedResource = &httpx.ProtectedResourceMetadata{Resource: *authAudience,
			AuthorizationServers: []string{*authIssuer}, ScopesSupported: scopes}
	}
	member.Handler(opts) // the sessions' state, events and answers, shared by the fleet
	h := httpx.NewMCPProfileHandler(b.Profile(), b.ToolHeaders, opts)
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	if opts.ProtectedResource != nil {
		mux.Handle("/.well-known/oauth-protected-resource", h) // RFC 9728, named by every 401's challenge
	}
	mux.Handle("/", ops.Handler())
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay bridge:", err)
		return 1
	}
	// Said once the port is open, so that whoever waits for this line can connect at once.
	fmt.Fprintf(os.Stderr, "relay bridge: serving MCP on http://%s/mcp with %d children\n", ln.Addr(), *pool)
	// When every child of the pool has given up, the bridge is not ready, and will not be
	// again: /readyz says so, and --exit-on-give-up ends relay (a graceful shutdown) with 1.
	serveCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	gaveUp := make(chan bool, 1)
	go func() { // ends with serveCtx, cancelled once Serve returns, and is waited for then
		select {
		case <-b.GaveUp():
			ops.SetReady(false)
			gaveUp <- true
			if *exitOnGiveUp {
				fmt.Fprintln(os.Stderr, "relay bridge: every child of the pool has given up (--restart-limit); exiting (--exit-on-give-up)")
				giveUp()
			}
		case <-serveCtx.Done():
			gaveUp <- false
		}
	}()
	err = httpx.Serve(serveCtx, ln, mux, &httpx.ServerOptions{Ops: ops, Drain: []io.Closer{h}})
	giveUp()
	gave := <-gaveUp // the watcher has ended
	if err != nil {
		log.Error("relay bridge is exiting", zap.Error(err))
		return 1
	}
	if gave && *exitOnGiveUp {
		return 1
	}
	return 0
}

// recordDir makes dir (0700) and returns the bridge's recorder maker: a file per child,
// named by the bridge's start and the child's name, so that no run appends to another's.
func recordDir(dir string, opts *record.Options, log *zap.Logger) (func(string) bridge.FrameRecorder, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	start := time.Now().UTC().Format("20060102T150405")
	clean := strings.NewReplacer("/", "-", "#", "-", "\\", "-", ":", "-", " ", "-")
	return func(child string) bridge.FrameRecorder {
		r, err := record.Create(filepath.Join(dir, start+"-"+clean.Replace(child)+".ndjson"), opts)
		if err != nil {
			log.Error("cannot record a child; it runs unrecorded", zap.String("child", child), zap.Error(err))
			return nil
		}
		return r
	}, nil
}
