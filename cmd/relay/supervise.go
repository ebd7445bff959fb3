package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/rcp"
	"github.com/relayrt/relay/record"
	"github.com/relayrt/relay/stdio"
	"github.com/relayrt/relay/supervise"
	"github.com/relayrt/relay/telemetry"
)

const superviseUsage = `Usage: relay supervise [flags] -- CMD [ARGS...]

Runs CMD, a stdio MCP (or RCP/1) server, as a child, and proxies the host's stdin and stdout
to it. When the child crashes it is restarted with backoff; requests safe to repeat are sent
again to the new child, the others are answered with an error that says the server
restarted. EOF on stdin, SIGTERM and SIGINT end it: the requests in flight have --drain to
be answered (then each gets an error that says relay is stopping), the child is stopped
(close stdin, wait, SIGTERM, SIGKILL) and relay exits. A command that cannot run is not
retried: every request is answered with why, and relay exits 1 at EOF. relay's logs go to
stderr, and so does the child's stderr, each line prefixed with the child's name (unless
--quiet-child). The standard OTEL_* variables turn on OpenTelemetry: a client span per request
passed on, in the caller's trace (from _meta.traceparent) and handed on to the child in
_meta.traceparent, an event on it per replay, and a span per restart of the child.
--record FILE appends every frame, both directions, to FILE (created 0600) for
"relay replay": see "relay replay --help".

Zero-downtime upgrade: on SIGHUP (Unix), and on every OS when the file named by --watch
changes, relay starts CMD again beside the child that serves, brings it to the same state
(a legacy host's initialize, log level and subscriptions), then sends it every new request
and re-opens the host's listens on it; the old child answers what it has in flight, within
--drain, and is stopped. The host hears list_changed only for the lists that differ. A new
child that cannot start or answer is stopped, and the old one keeps serving.

Flags:
`

// childFlags are the flags that say how children are supervised, shared by supervise and
// bridge.
type childFlags struct {
	restart, limit, backoff, replay *string
	probe, timeout, stopWait, drain *time.Duration
	rcp, verbose, quietChild        *bool
}

func addChildFlags(fs *flag.FlagSet) *childFlags {
	return &childFlags{
		restart:    fs.String("restart", "always", "restart policy: always, on-failure or never"),
		limit:      fs.String("restart-limit", "5/1m", "give up after N restarts within DURATION (N/DURATION); 0 never gives up"),
		backoff:    fs.String("backoff", "100ms..30s", "delay before a restart, doubling from MIN to MAX (MIN..MAX)"),
		replay:     fs.String("replay", "annotated", "requests re-sent to a restarted child: safe, annotated or none"),
		probe:      fs.Duration("probe", 0, "probe a child silent this long while requests are pending, and restart it if it does not answer (0: off)"),
		timeout:    fs.Duration("timeout", 0, "per-request timeout; the child is sent notifications/cancelled (0: none)"),
		stopWait:   fs.Duration("stop-wait", 2*time.Second, "how long to wait after closing the child's stdin, and again after SIGTERM"),
		drain:      fs.Duration("drain", 5*time.Second, "at EOF or SIGTERM, how long the requests in flight have to be answered before the child is stopped"),
		rcp:        fs.Bool("rcp", false, "the child speaks RCP/1 (its rules for replay, cancels and errors: -32010 when it cannot answer)"),
		verbose:    fs.Bool("v", false, "log the child's lifecycle at info level (default: warnings)"),
		quietChild: fs.Bool("quiet-child", false, "drop the child's stderr (default: each line is passed on to relay's stderr, prefixed with the child's name)"),
	}
}

// build turns the flags into a supervision spec and proxy options; the error says which
// flag is wrong.
func (f *childFlags) build(cmdArgs []string) (supervise.Spec, supervise.ProxyOptions, *zap.Logger, error) {
	spec := supervise.Spec{
		Command: supervise.Command{Path: cmdArgs[0], Args: cmdArgs[1:]},
		Restart: supervise.Policy(*f.restart),
	}
	var none supervise.ProxyOptions
	switch spec.Restart {
	case supervise.Always, supervise.OnFailure, supervise.Never:
	default:
		return spec, none, nil, fmt.Errorf("-restart %q: want always, on-failure or never", *f.restart)
	}
	if *f.limit == "0" {
		spec.Unlimited = true
	} else {
		n, d, ok := strings.Cut(*f.limit, "/")
		count, err1 := strconv.Atoi(n)
		window, err2 := time.ParseDuration(d)
		if !ok || err1 != nil || err2 != nil || count < 1 {
			return spec, none, nil, fmt.Errorf("-restart-limit %q: want N/DURATION (e.g. 5/1m) or 0", *f.limit)
		}
		spec.Intensity, spec.Window = count, window
	}
	lo, hi, ok := strings.Cut(*f.backoff, "..")
	minB, err1 := time.ParseDuration(lo)
	maxB, err2 := time.ParseDuration(hi)
	if !ok || err1 != nil || err2 != nil || minB <= 0 || maxB < minB {
		return spec, none, nil, fmt.Errorf("-backoff %q: want MIN..MAX (e.g. 100ms..30s)", *f.backoff)
	}
	spec.MinBackoff, spec.MaxBackoff = minB, maxB
	switch supervise.Replay(*f.replay) {
	case supervise.ReplaySafe, supervise.ReplayAnnotated, supervise.ReplayNone:
	default:
		return spec, none, nil, fmt.Errorf("-replay %q: want safe, annotated or none", *f.replay)
	}
	log, childErr := childLog(*f.verbose, *f.quietChild)
	spec.Child = supervise.ChildOptions{StopWait: *f.stopWait, Logger: log, Stderr: childErr}
	proto := supervise.ProtocolOf(mcp.Rules())
	if *f.rcp {
		proto = supervise.ProtocolOf(rcp.Rules())
	}
	return spec, supervise.ProxyOptions{Replay: supervise.Replay(*f.replay), ProbeAfter: *f.probe,
		Timeout: *f.timeout, Drain: *f.drain, Protocol: proto, Logger: log}, log, nil
}

// childLog returns relay's log (JSON on stderr, warnings and above unless verbose) and where
// children's stderr goes: stderr too, under the same lock, so that their lines never mix,
// or nowhere when quiet.
func childLog(verbose, quiet bool) (*zap.Logger, io.Writer) {
	level := zapcore.WarnLevel
	if verbose {
		level = zapcore.InfoLevel
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	errOut := zapcore.Lock(os.Stderr)
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), errOut, level))
	if quiet {
		return log, io.Discard
	}
	return log, errOut
}

func runSupervise(args []string) int {
	fs := flag.NewFlagSet("supervise", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), superviseUsage); fs.PrintDefaults() }
	flags := addChildFlags(fs)
	rec := addRecordFlags(fs, "append every frame, both directions, to this file (NDJSON, created 0600), for relay replay")
	watch := fs.String("watch", "", "upgrade the child without downtime when this file (the server's binary or script) changes")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	recOpts, err := rec.options()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay supervise:", err)
		return 2
	}
	cmdArgs := fs.Args()
	if len(cmdArgs) == 0 {
		fmt.Fprintln(os.Stderr, "relay supervise: no command; put it after --, e.g. relay supervise -- ./server --stdio")
		return 2
	}
	spec, proxyOpts, log, err := flags.build(cmdArgs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay supervise:", err)
		return 2
	}
	proto, restore, err := stdio.ProtectStdout()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay supervise:", err)
		return 1
	}
	defer restore()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	tel, err := telemetry.FromEnv(ctx, "relay-supervise")
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay supervise:", err)
		return 2
	}
	defer tel.Shutdown(context.Background())
	if !*flags.rcp { // the spans follow MCP's conventions
		proxyOpts.Observer = tel.Proxy()
	}
	var hostIn io.Reader = stdio.Stdin()
	var hostOut io.Writer = proto
	if *rec.path != "" {
		// The host's side is teed, line by line: the proxy sees the same streams.
		r, err := record.Create(*rec.path, recOpts)
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay supervise: --record:", err)
			return 2
		}
		defer func() {
			if err := errors.Join(r.Err(), r.Close()); err != nil {
				log.Error("the recording is incomplete", zap.String("file", r.Path()), zap.Error(err))
			}
		}()
		hostIn, hostOut = r.Reader(record.In, hostIn), r.Writer(record.Out, hostOut)
	}
	sup := supervise.New(spec)
	stopUpgrades := upgradeOn(ctx, sup.Upgrade, *watch, log)
	defer stopUpgrades()
	if err := supervise.Proxy(ctx, sup, hostIn, hostOut, &proxyOpts); err != nil {
		log.Error("relay supervise is exiting", zap.Error(err))
		return 1
	}
	return 0
}
