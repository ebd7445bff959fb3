package supervise

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/actors"
	"github.com/relayrt/relay/internal/ratelog"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/stdio"
)

// Replay says which requests in flight when a child dies are sent again to its successor.
type Replay string

// The replay policies.
const (
	// ReplaySafe re-sends the methods that only read (MCP: lists, reads, gets, discover,
	// ping, completions; RCP/1: info, retrieve, rerank, embed...), and re-opens subscription
	// streams: the protocol's runtime.ProxyRules.ReadOnly.
	ReplaySafe Replay = "safe"
	// ReplayAnnotated (the default) also re-sends tools/call of tools that the child itself
	// annotated readOnlyHint or idempotentHint in its tools/list.
	ReplayAnnotated Replay = "annotated"
	// ReplayNone answers every request in flight with the restart error.
	ReplayNone Replay = "none"
)

// ProxyOptions tunes Proxy. The zero value is ready to use.
type ProxyOptions struct {
	Replay Replay // default ReplayAnnotated
	// Queue bounds the requests that wait while the child restarts (default 1,024); past
	// it a request is answered at once with an error that says to retry.
	Queue int
	// Timeout, when set, bounds every request: past it the child is sent
	// notifications/cancelled and the host gets an error.
	Timeout time.Duration
	// ProbeAfter, when set, probes a child that has been silent that long while requests
	// are pending (server/discover for a 2026-07-28 host, ping for a legacy one); no answer
	// within ProbeTimeout (default 5 s) restarts it.
	ProbeAfter, ProbeTimeout time.Duration
	// Drain bounds the end (default 5 s): once the host's input has ended or Proxy's context
	// is done, the requests in flight have this long to be answered; then each is answered
	// with an error that says the proxy is stopping, and the child is stopped. Proxy's
	// clock is its Supervisor's (Spec.Clock).
	Drain time.Duration
	// Protocol is the protocol carried (default MCP, ProtocolOf(mcp.Rules())); for RCP/1,
	// ProtocolOf(rcp.Rules()).
	Protocol *Protocol
	// Observer, when set, is told what becomes of each request and child (telemetry).
	Observer Observer
	Logger   *zap.Logger

	// settle is how long a child must have been answering before suspects are sent to it
	// one at a time (default 250 ms); the chaos test, whose killer is not a poison, waits
	// longer, so that it never looks like one.
	settle time.Duration
}

// pending is a host request the child owes an answer.
type pending struct {
	hostID    jsonrpc.ID
	method    string
	params    json.RawMessage // as the host sent them
	frame     []byte          // the host's frame, when it goes to the child as it is but for its id
	hostToken json.RawMessage // the host's progressToken, if any
	seen      float64         // the highest progress the host has seen
	sent      time.Time
	internal  bool // the proxy's own request (replayed initialize, probe, tools/list)
	listen    bool // a subscriptions/listen stream: its acknowledgement is swallowed on replay
	replayed  bool
	waiting   bool                  // to be sent again: the child it was sent to died, or never took it
	unsent    bool                  // the child it was sent to had closed its input: it never reached a child
	suspect   bool                  // in flight at two deaths: sent again one at a time, alone
	deaths    int                   // how many children died while it was in flight on them
	sends     int                   // how many times it was sent to a child
	call      Call                  // what the Observer follows of it, if any
	to        *Child                // the child it was sent to (nil: none yet)
	then      func(jsonrpc.Message) // an internal request's continuation, given its answer
	changed   map[string]bool       // a stream re-opened by an upgrade: the lists that differ
}

// proxy is the actor between a host and a supervised child.
type proxy struct {
	sup   *Supervisor
	proto *Protocol
	clock Clock
	opts  ProxyOptions
	log   *zap.Logger
	bad   *ratelog.Limiter // the child's malformed frames: 10 entries a second, then a count
	host  chan<- []byte    // to the host's writer actor

	hostIn    <-chan []byte // the host's frames; nil once its input has ended
	child     *Child
	childOut  <-chan []byte
	nextID    int64
	pend      map[string]*pending  // child id → request
	free      []*pending           // answered requests' records, for the next ones (recycle)
	byHost    map[string]string    // host id → child id
	queue     [][]byte             // host frames waiting for a child, or for the suspects
	suspects  []string             // ids of the suspects waiting to be sent again, one at a time
	suspectID string               // the child id of the suspect in flight, alone
	annotated map[string]bool      // tools safe to repeat, from the child's tools/list
	listing   bool                 // the proxy's own tools/list of the child is under way
	calls     map[string]childCall // our id for a child's request to the host → the child and its id
	nextCall  int64

	initParams json.RawMessage            // the host's handshake, replayed on every new child
	restate    map[string]json.RawMessage // the latest params of each method the protocol restates
	subscribed map[string]bool
	modernMeta json.RawMessage // _meta of the host's first request that names its version, for probes
	listParams json.RawMessage // params of the proxy's own tools/list, once the host's era is known
	caps       json.RawMessage // the capabilities the child declared (initialize, server/discover)
	ready      bool            // the child may take host requests (its initialize is done)
	gaveUp     bool
	gaveUpWhy  error            // the supervisor's reason
	cannotRun  *StartError      // why the supervisor gave up at once: the command cannot run
	supDone    bool             // the supervisor's Run has returned
	hostDone   bool             // the host's input has ended
	stopping   bool             // Proxy's context is done: new requests are refused
	drained    bool             // the drain deadline has passed
	answered   bool             // the current child has answered a request
	upAt       time.Time        // when it first did
	settled    <-chan time.Time // fires once it has been up for settle
	silent     int              // children in a row that exited before answering any request
	lastTail   []string         // the stderr tail of the last child that exited
	lastExit   string           // and how it exited
	lastHeard  time.Time
	probeID    string

	up       *upgrading          // the upgrade under way (upgrade.go)
	upAgain  []upgrade           // asked for while one was under way: served by one more
	adopting *Child              // handed to the supervisor, which has not said it took it
	retiring map[*Child]*retiree // upgraded-away children finishing what they have in flight
	retired  chan retiredFrame   // their frames, from one forwarder each
	workers  sync.WaitGroup      // the forwarders and stoppers of retiring children
}

// childCall is a child's request to the host, by the child's own id.
type childCall struct {
	child *Child
	id    []byte
}

// Proxy serves a host over hostIn and hostOut (stdio framing: Relay's reader and writer
// actors) with the children that sup
// runs, as a transparent MCP (or RCP/1) proxy that survives crashes: it owns the id space
// towards the child and maps every id back, replays what is safe to repeat on a new child,
// answers the rest with an error that says the server restarted, replays a legacy initialize
// with its setLevel and subscriptions, and re-opens subscription streams.
//
// Requests replayed after a crash go again at once. Those in flight at a second death are
// suspects: once the new child has answered something and stayed up for a quarter of a
// second, they are sent one at a time, each alone in flight, the host's new requests waiting
// meanwhile. A suspect that is alone in flight when its child dies is answered with an error
// that says it crashes the server, and never sent again; the others are answered as usual.
// A child that dies with no suspect in flight died of something else: the suspects waiting
// then go again at once with the other replays, instead of waiting for the crashes to end.
//
// Supervisor.Upgrade replaces the child without dropping the host: a new child is started
// beside the old one and brought to its state (the handshake, the restated state and the
// subscriptions replayed), and both are listed; then the new one takes every new request and
// the host's streams, the host is told list_changed only for the lists that differ, and the
// old one is stopped once it has answered what it had in flight, or after Drain (what it
// still owed is then replayed on the new child when safe, or answered with an error). A new
// child that fails to start or to answer within 30 s is stopped; the old one keeps serving.
//
// When the host's input ends or ctx ends (a SIGTERM, say), the requests in flight have
// ProxyOptions.Drain to be answered (requests that arrive after ctx ended are refused at
// once); then each is answered with an error that says the proxy is stopping, the child is
// stopped with the full sequence, and Proxy returns nil. When the supervisor gives up,
// everything pending is answered first and the error is ErrGaveUp; when the command cannot
// run at all, every request is answered with why until the host's input ends, and the error
// is also a *StartError.
func Proxy(ctx context.Context, sup *Supervisor, hostIn io.Reader, hostOut io.Writer, opts *ProxyOptions) error {
	o := opts.withDefaults()
	// The host's input is read until Proxy returns, not until ctx ends: a request that comes
	// while the proxy drains is answered with the stopping error.
	readCtx, stopReading := context.WithCancel(context.WithoutCancel(ctx))
	defer stopReading()

	hostFrames := make(chan []byte, 64)
	read := make(chan struct{})
	go func() { // the host reader actor; it ends at EOF, or when Proxy returns and closes hostIn
		defer close(read)
		defer close(hostFrames)
		err := stdio.ReadFrames(readCtx, hostIn, 0, func(msg runtime.Inbound) bool {
			return actors.Deliver(hostFrames, msg.Frame, readCtx.Done()) // nil for a line over the limit
		})
		if err != nil && readCtx.Err() == nil {
			o.Logger.Error("cannot read the host's input; treating it as its end", zap.Error(err))
		}
	}()
	if _, ok := hostIn.(io.Closer); ok { // closed when reading stops: the reader ends, and is waited for
		defer func() {
			select {
			case <-read:
			case <-time.After(time.Second):
				// A terminal is not interrupted by Close: its read ends with the next line, or
				// never. Proxy does not wait for that; the reader ends with the process.
			}
		}()
	}
	toHost := make(chan []byte, 256)
	wrote := make(chan struct{})
	go func() { // the host writer actor: the only owner of hostOut
		defer close(wrote)
		stdio.WriteFrames(hostOut, toHost, o.Logger)
	}()
	err := serveFrames(ctx, sup, hostFrames, toHost, o)
	close(toHost)
	<-wrote
	stopReading()
	return err
}

// ServeFrames runs the proxy's core (the one Proxy stands on: id mapping, replay, poison
// detection, the handshake replayed on every new child, the drain and the stop sequence)
// between a host given as channels of frames and the children sup runs. It reads fromHost
// until it is closed (the host's input has ended; a nil frame stands for a line of the
// host's that was too long, and is answered so), sends the frames for the host on toHost,
// which the caller owns and closes once ServeFrames returns, and returns as Proxy does.
//
// The caller sees every frame the child sends: notifications that belong to no request, and
// the child's own requests to its client (their ids renamed by the core; the caller answers
// them on fromHost with the same ids). relay bridge serves its HTTP sessions so. The core
// waits for room on toHost: drain it independently of feeding fromHost.
func ServeFrames(ctx context.Context, sup *Supervisor, fromHost <-chan []byte, toHost chan<- []byte, opts *ProxyOptions) error {
	return serveFrames(ctx, sup, fromHost, toHost, opts.withDefaults())
}

// withDefaults returns the options with their zero fields set to the defaults.
func (opts *ProxyOptions) withDefaults() ProxyOptions {
	var o ProxyOptions
	if opts != nil {
		o = *opts
	}
	if o.Replay == "" {
		o.Replay = ReplayAnnotated
	}
	if o.Queue <= 0 {
		o.Queue = 1024
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 5 * time.Second
	}
	if o.Drain <= 0 {
		o.Drain = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.settle <= 0 {
		o.settle = defaultSettle
	}
	if o.Protocol == nil {
		o.Protocol = mcpProtocol
	}
	return o
}

// defaultSettle is how long a child must have been answering before suspects are sent to
// it one at a time.
const defaultSettle = 250 * time.Millisecond

// serveFrames is the proxy's core, on frames: it takes the host's frames from hostFrames
// (closed: the host's input has ended) and sends the frames for the host on toHost, which
// its caller owns and closes after it returns. A nil frame stands for a line of the host's
// that was over stdio.DefaultMaxFrame and discarded: it is answered with the protocol's
// error. Proxy puts Relay's stdio reader and writer actors around it; ServeFrames is it.
func serveFrames(ctx context.Context, sup *Supervisor, hostFrames <-chan []byte, toHost chan<- []byte, o ProxyOptions) error {
	supErr := make(chan error, 1)
	// The supervisor ends when the proxy says, not with ctx: the requests in flight are
	// drained first.
	supCtx, stopSup := context.WithCancel(context.WithoutCancel(ctx))
	go func() { supErr <- sup.run(supCtx) }() // upgrades are the proxy's to serve

	p := newProxy(sup, toHost, o)
	err := p.run(ctx, hostFrames, sup.Events(), stopSup)
	p.bad.Flush()
	stopSup()
	for range sup.Events() { // let Run finish its last events
	}
	if serr := <-supErr; err == nil && serr != nil {
		err = serr
	}
	p.endUpgrades()
	if o.Observer != nil {
		o.Observer.Stopped(nil)
	}
	return err
}

// newProxy returns the proxy's actor state, before its first event.
func newProxy(sup *Supervisor, toHost chan<- []byte, o ProxyOptions) *proxy {
	return &proxy{sup: sup, proto: o.Protocol, clock: sup.spec.Clock, opts: o, log: o.Logger, bad: ratelog.New(o.Logger, nil), host: toHost, pend: map[string]*pending{},
		byHost: map[string]string{}, annotated: map[string]bool{}, calls: map[string]childCall{},
		subscribed: map[string]bool{}, restate: map[string]json.RawMessage{},
		retiring: map[*Child]*retiree{}, retired: make(chan retiredFrame), free: make([]*pending, 0, 256)}
}

func (p *proxy) run(ctx context.Context, hostFrames <-chan []byte, events <-chan Event, stopSup func()) error {
	var tick, drain <-chan time.Time // timeouts and probes; the end of the drain
	p.hostIn = hostFrames
	timed := p.opts.Timeout > 0 || p.opts.ProbeAfter > 0
	if timed {
		tick = p.clock.After(tickEvery)
	}
	for fast := 0; ; fast++ {
		// Under load a frame from the host or the child is nearly always waiting: take it
		// with a single-channel receive, much cheaper than the select below, which locks
		// every channel it waits on (a sixth of the proxy's CPU, by profile). The child's
		// come first, as a dispatcher's completions do: answers leave before more requests
		// go in. Every so often the full select runs anyway, so that frames never delay the
		// supervisor's events, an upgrade, the timers or ctx.
		if fast%32 != 31 {
			select {
			case f, ok := <-p.childOut:
				p.childFrame(f, ok)
				goto served
			default:
			}
			select {
			case f, ok := <-p.hostIn:
				p.hostFrame(f, ok)
				goto served
			default:
			}
		}
		select {
		case f, ok := <-p.hostIn:
			p.hostFrame(f, ok)
		case f, ok := <-p.childOut:
			p.childFrame(f, ok)
		case f, ok := <-p.candidateFrames():
			p.fromCandidate(f, ok)
		case rf := <-p.retired:
			p.fromRetiring(rf)
		case u := <-p.sup.upgrades:
			p.askUpgrade(u)
		case <-p.upgradeDeadline():
			p.upgradeTimedOut()
		case e, ok := <-events:
			if !ok {
				events, p.supDone = nil, true
				break
			}
			p.event(e)
		case <-tick:
			p.timers()
			tick = p.clock.After(tickEvery)
		case <-drain:
			p.drained = true
			p.stopAll()
		case <-p.settled:
			p.settled = nil // pump, below, sends the suspects
		case <-ctx.Done(): // SIGTERM, say: refuse new requests, drain the others
			p.stopping = true
			if p.supDone {
				return p.result()
			}
			ctx = context.Background() // keep draining events until the supervisor is done
		}
	served:
		p.pump()
		p.nextUpgrade() // one asked for during a restart waits for the new child
		// A command that cannot run is said to every request the host sends until it closes
		// its input: a host's first request usually comes after the start has failed.
		if p.supDone && (p.cannotRun == nil || p.hostDone || p.stopping) {
			return p.result()
		}
		if p.hostDone || p.stopping {
			if drain == nil && !p.drained {
				drain = p.clock.After(p.opts.Drain)
			}
			if len(p.queue) == 0 && !p.owesHost() {
				stopSup() // the supervisor stops the child: close stdin, wait, SIGTERM, SIGKILL
			}
		}
	}
}

// hostFrame handles what the host's reader sent: a frame, a line it discarded (nil), or the
// end of the host's input (!ok).
func (p *proxy) hostFrame(f []byte, ok bool) {
	switch {
	case !ok: // EOF from the host: finish what it asked, within Drain, then stop the child
		p.hostIn, p.hostDone = nil, true
	case f == nil: // a line the reader discarded: its id is unknown
		p.toHost(jsonrpc.AppendError(nil, jsonrpc.Null, p.proto.tooLarge(stdio.DefaultMaxFrame)))
	default:
		p.fromHost(f)
	}
}

// childFrame handles what the current child's reader sent: a frame, or the end of its
// output (!ok).
func (p *proxy) childFrame(f []byte, ok bool) {
	if !ok {
		p.childOut = nil
		return
	}
	p.lastHeard = p.clock.Now()
	p.fromChild(f)
}

// tickEvery is how often the proxy checks per-request timeouts and its probe.
const tickEvery = 100 * time.Millisecond

// stopAll answers every host request still pending or queued with the stopping error: the
// drain deadline has passed.
func (p *proxy) stopAll() {
	for _, f := range p.queue {
		if m, err := jsonrpc.Decode(f); err == nil && m.Kind == jsonrpc.KindRequest {
			p.refuse(m.ID, p.stoppingError())
		}
	}
	p.queue, p.suspects, p.suspectID = nil, nil, ""
	n := 0
	for id, r := range p.pend {
		switch {
		case r.internal:
			continue
		case r.listen: // a stream, not owed an answer: it ends with the proxy
			if r.call != nil {
				r.call.Ended(nil, false)
				r.call = nil
			}
			continue
		}
		n++
		p.fail(id, r, p.stoppingError())
	}
	if n > 0 {
		p.log.Warn("stopping: requests the child did not answer within the drain deadline were answered with an error",
			zap.Int("requests", n), zap.Duration("drain", p.opts.Drain))
	}
}

// stoppingError answers a request the proxy can no longer wait for: it is stopping.
func (p *proxy) stoppingError() *jsonrpc.Error {
	why := "the proxy is stopping (its host closed its input, or it was asked to end) and the server did not answer in time"
	return p.unavailable(why, map[string]any{"reason": "proxy stopping", "retryable": false})
}

// unavailable is the error for a request the server cannot answer: the protocol's (MCP:
// internal error; RCP: -32010, backend unavailable), saying why, with data.
func (p *proxy) unavailable(why string, data map[string]any) *jsonrpc.Error {
	return p.proto.rules.Unavailable(why, data)
}

// refuse answers a host request that the proxy never passed on (id nil: null) with e.
func (p *proxy) refuse(id jsonrpc.ID, e *jsonrpc.Error) {
	if id == nil {
		id = jsonrpc.Null
	}
	p.toHost(jsonrpc.AppendError(nil, id, e))
}

// fail answers the pending host request r (the child's id for it: id) with e, and forgets it.
func (p *proxy) fail(id string, r *pending, e *jsonrpc.Error) {
	p.refuse(r.hostID, e)
	p.forget(id)
	if r.call != nil {
		r.call.Ended(e, false)
	}
}

// result is Proxy's error once the supervisor is done.
func (p *proxy) result() error {
	switch {
	case p.cannotRun != nil:
		return fmt.Errorf("%w: %w", ErrGaveUp, p.cannotRun)
	case p.gaveUp:
		return ErrGaveUp
	}
	return nil
}

// silentLimit is how many children in a row may exit before answering any request before
// the proxy reports their stderr: such a child fails at its start, and its stderr says why.
const silentLimit = 3

// owesHost reports whether any host request still waits for its answer.
func (p *proxy) owesHost() bool {
	for _, r := range p.pend {
		if !r.internal && !r.listen {
			return true
		}
	}
	return false
}

// event handles the supervisor's reports.
func (p *proxy) event(e Event) {
	switch e.Kind {
	case EventStarted:
		if p.opts.Observer != nil {
			p.opts.Observer.Started()
		}
		p.child, p.childOut, p.lastHeard, p.probeID = e.Child, e.Child.Frames(), p.clock.Now(), ""
		p.answered, p.settled = false, nil
		for id, c := range p.calls { // the dead child's; an upgraded-away one's are still owed
			if _, retiring := p.retiring[c.child]; !retiring {
				delete(p.calls, id)
			}
		}
		p.ready = p.initParams == nil
		if p.initParams != nil {
			p.internal(p.proto.rules.Handshake, p.initParams)
		}
		if p.ready {
			p.learnChild()
			p.replay()
		}
	case EventExited:
		if e.Child != nil && e.Child != p.child {
			return // an upgraded-away child: its forwarder tells its end
		}
		p.retryUpgrade("the child exited during the upgrade, which starts again once it has restarted")
		if p.childOut != nil { // answers written before the exit are still buffered: deliver them
			for f := range p.childOut {
				p.fromChild(f)
			}
		}
		if e.Exit.Failed() && !p.hostDone {
			p.log.Warn("the child exited", zap.String("exit", e.Exit.String()))
		} else {
			p.log.Info("the child exited", zap.String("exit", e.Exit.String()))
		}
		if p.child != nil {
			p.lastTail = p.child.StderrTail()
			p.lastExit = e.Exit.String()
		}
		p.silent++
		if p.answered {
			p.silent = 0
		}
		if p.silent == silentLimit {
			p.log.Error("the child exited "+strconv.Itoa(silentLimit)+" times in a row before answering any request (initialize, server/discover or other); its last lines on stderr say why",
				zap.String("exit", e.Exit.String()), zap.Strings("stderr", p.lastTail))
		}
		dead := p.child
		p.child, p.childOut, p.ready = nil, nil, false
		p.restarted(dead)
	case EventRestarting:
		p.log.Info("restarting the child", zap.Duration("delay", e.Delay), zap.Int("restarts", e.Restarts))
		if p.opts.Observer != nil {
			p.opts.Observer.Restarting(p.lastExit, e.Restarts)
		}
	case EventUpgraded:
		if e.Child == p.adopting {
			p.adopting = nil
			p.nextUpgrade()
		}
	case EventGaveUp:
		p.gaveUp, p.gaveUpWhy = true, e.Err
		if p.opts.Observer != nil {
			p.opts.Observer.Stopped(e.Err)
		}
		if errors.As(e.Err, &p.cannotRun) {
			p.log.Error("relay cannot start the child: every request will be answered with this error until the host closes its input",
				zap.String("command", p.cannotRun.Command), zap.NamedError("cause", p.cannotRun.Err))
		} else {
			p.log.Error("gave up restarting the child", zap.Error(e.Err), zap.Strings("stderr", p.lastTail))
		}
		for _, f := range p.queue {
			if m, err := jsonrpc.Decode(f); err == nil && m.Kind == jsonrpc.KindRequest {
				p.refuse(m.ID, p.gaveUpError())
			}
		}
		p.queue, p.suspects, p.suspectID = nil, nil, ""
		for id, r := range p.pend {
			if r.internal {
				p.forget(id)
				continue
			}
			p.fail(id, r, p.gaveUpError())
		}
	}
}

// restarted decides, for every request in flight on the child that died, replay or error.
// Requests to replay go again at once, unless they were in flight at an earlier death too:
// those are suspects, sent one at a time, each alone in flight to a child that has stayed
// up (see pump). A suspect that is alone in flight when its child dies is what kills the
// children: it is answered with an error that says so, and never sent again; a death with
// no suspect in flight releases the suspects waiting. Deaths of a child that never answered
// anything are not counted: it may never have read them.
//
// A pending request that waits and is a suspect is in p.suspects, and p.suspects names
// nothing else that is pending: only nextSuspect sends a suspect (replay skips them). The
// tests check this after every step (invariant).
func (p *proxy) restarted(dead *Child) {
	if _, judged := p.pend[p.suspectID]; !judged {
		// No suspect was in flight: the children die of something else (a crash loop, a
		// kill). The suspects waiting go again at once with the other replays; held for a
		// child that stays up, they would wait as long as the crashes last, while the host's
		// new requests are answered. Their deaths still count: in flight at the next death
		// of a child that answered, they are suspects again.
		for _, id := range p.suspects {
			if r, ok := p.pend[id]; ok {
				r.suspect = false
			}
		}
		if len(p.suspects) > 0 {
			p.log.Debug("the child died with no suspect in flight: the suspects go again at once", zap.Int("suspects", len(p.suspects)))
		}
		p.suspects = nil
	}
	p.suspectID = ""
	p.listing = false // its list died with it; the next child is listed when ready
	inFlight := p.hostInFlight(dead)
	var fresh []string
	for id, r := range p.pend {
		switch {
		case r.waiting: // not sent to the child that died
			continue
		case r.to != nil && r.to != dead: // on an upgraded-away child, which is still finishing it
			continue
		case r.internal:
			p.forget(id)
			continue
		case !p.replayable(r):
			p.fail(id, r, p.restartError())
			continue
		}
		r.replayed, r.waiting = true, true
		if r.listen || !p.answered { // a stream, never answered, is re-opened at once
			continue
		}
		r.deaths++
		if r.suspect && inFlight == 1 { // sent alone, to a child that had stayed up: it did this
			p.log.Warn("a request was alone in flight when the child died, and in flight at earlier deaths too; it is answered with an error and not sent again",
				zap.String("method", r.method), zap.Int("deaths", r.deaths))
			p.fail(id, r, p.poisonError(r))
			continue
		}
		if r.deaths >= 2 { // not in p.suspects: it was in flight
			r.suspect = true
			fresh = append(fresh, id)
		}
	}
	slices.SortFunc(fresh, func(a, b string) int { // in the order they were sent
		if c := cmp.Compare(len(a), len(b)); c != 0 { // integer ids: shorter is smaller
			return c
		}
		return cmp.Compare(a, b)
	})
	p.suspects = append(p.suspects, fresh...)
}

// poisonError answers a request that killed the children it was sent to.
func (p *proxy) poisonError(r *pending) *jsonrpc.Error {
	return p.unavailable("the server crashed each time it was given this request ("+strconv.Itoa(r.deaths)+
		" times, the last with nothing else in flight); it will not be sent again. Check the request, or the server's stderr for why it crashes",
		map[string]any{"reason": "request crashes the server", "crashes": r.deaths, "retryable": false})
}

// pump sends the next suspect once the one in flight is answered, and what the host sent
// meanwhile unless a suspect must go alone.
func (p *proxy) pump() {
	if p.child == nil || !p.ready || p.gaveUp {
		return
	}
	p.nextSuspect()
	if !p.holding() && len(p.queue) > 0 {
		queue := p.queue
		p.queue = nil
		for _, f := range queue {
			p.fromHost(f)
		}
	}
}

// nextSuspect sends the next suspect, if none is in flight and the child is fit to judge it.
func (p *proxy) nextSuspect() {
	if p.suspectID != "" {
		if _, ok := p.pend[p.suspectID]; ok {
			return
		}
		p.suspectID = "" // answered, cancelled or timed out
	}
	if len(p.suspects) == 0 {
		return
	}
	if !p.answered {
		// A suspect is sent once the child has shown that it reads and answers: a child that
		// dies before that says nothing about the suspect.
		for _, r := range p.pend {
			if r.internal {
				return // its answer will come first
			}
		}
		if probe := p.proto.rules.Ping; probe != "" {
			p.internal(probe, nil) // an error answer (a 2026-07-28 child has no ping) shows it too
			return
		}
		p.answered, p.upAt = true, p.clock.Now() // nothing to ask it: trust it
	}
	// ... and has stayed up for settle: a child that dies soon after its start is likely
	// dying of something else (its own start, or whatever killed its predecessor), and a
	// suspect alone in flight then would be blamed for it.
	if wait := p.opts.settle - p.clock.Now().Sub(p.upAt); wait > 0 {
		if p.settled == nil {
			p.settled = p.clock.After(wait)
		}
		return
	}
	if p.hostInFlight(p.child) > 0 {
		return // a suspect goes alone: the host's requests in flight finish first
	}
	for len(p.suspects) > 0 {
		id := p.suspects[0]
		p.suspects = p.suspects[1:]
		r, ok := p.pend[id]
		if !ok { // cancelled, or timed out, while it waited
			continue
		}
		delete(p.pend, id)
		delete(p.byHost, string(r.hostID))
		r.waiting, r.unsent = false, false
		sent, ok := p.send(r)
		if ok && r.unsent { // the child is gone already: first in line for the next one
			p.suspects = append([]string{sent}, p.suspects...)
			return
		}
		if ok {
			p.suspectID = sent
			return
		}
	}
}

// holding reports whether the host's new requests must wait: a suspect is in flight, or
// is to be sent as soon as the requests in flight are answered.
func (p *proxy) holding() bool {
	if p.suspectID != "" {
		return true
	}
	return len(p.suspects) > 0 && p.answered && p.clock.Now().Sub(p.upAt) >= p.opts.settle
}

// hostInFlight counts the host requests child c has now, streams apart.
func (p *proxy) hostInFlight(c *Child) int {
	n := 0
	for _, r := range p.pend {
		if !r.internal && !r.listen && !r.waiting && r.to == c {
			n++
		}
	}
	return n
}

func (p *proxy) replayable(r *pending) bool {
	switch p.opts.Replay {
	case ReplayNone:
		return false
	case ReplayAnnotated:
		if tool, ok := p.proto.isCall(r.method, r.params); ok {
			return p.annotated[tool]
		}
	}
	return p.proto.readOnly[r.method]
}

// replay re-opens the subscription streams on the new child, then sends the suspects one
// at a time, then what queued meanwhile (pump).
func (p *proxy) replay() {
	var again []*pending // collected first: send adds to p.pend, which must not grow while walked
	for id, r := range p.pend {
		// Everything but the suspects goes at once: streams, requests in flight at one death,
		// requests that never reached a child.
		if r.waiting && !r.suspect {
			delete(p.pend, id)
			delete(p.byHost, string(r.hostID))
			again = append(again, r)
		}
	}
	for _, r := range again {
		r.waiting, r.unsent = false, false
		p.send(r)
	}
	p.pump()
}

// fromHost handles one frame from the host.
func (p *proxy) fromHost(f []byte) {
	m, err := jsonrpc.Decode(f)
	if err != nil {
		if m.Kind == jsonrpc.KindRequest || m.Kind == jsonrpc.KindInvalid {
			if p.child != nil && p.ready {
				p.child.Send(f) // the child answers malformed requests its own way
			} else {
				var de *jsonrpc.DecodeError
				errors.As(err, &de)
				p.refuse(m.ID, de.AsError())
			}
		}
		return
	}
	if p.gaveUp {
		if m.Kind == jsonrpc.KindRequest {
			p.refuse(m.ID, p.gaveUpError())
		}
		return
	}
	if p.stopping && m.Kind == jsonrpc.KindRequest {
		p.refuse(m.ID, p.stoppingError())
		return
	}
	switch m.Kind {
	case jsonrpc.KindResponse: // the host answers a request of the child's
		call, ok := p.calls[string(m.ID)]
		if !ok {
			return
		}
		delete(p.calls, string(m.ID))
		call.child.Send(jsonrpc.ReplaceID(f, m.ID, call.id)) // an error if it is gone: nobody waits for it then
		return
	case jsonrpc.KindNotification:
		if is(m.Method, p.proto.cancel) {
			p.cancel(m)
			return
		}
		if p.child != nil && p.ready {
			p.child.Send(f)
			if is(m.Method, p.proto.rules.Handshaken) && p.initParams != nil {
				p.listParams = json.RawMessage(`{}`) // the handshake is done: list now
				p.learnChild()
			}
		}
		return
	}
	if p.child == nil || !p.ready || p.holding() || p.unlearned(m) {
		if len(p.queue) >= p.opts.Queue {
			p.refuse(m.ID, p.proto.rules.Busy("the server is restarting and too many requests are waiting; retry shortly",
				map[string]any{"reason": "restart queue full", "retryable": true}))
			return
		}
		p.queue = append(p.queue, f)
		return
	}
	p.remember(m)
	if p.listParams == nil && p.initParams == nil {
		// The host's first request says its era: the proxy lists the child's tools itself
		// (and, for a stateless one, discovers its capabilities), so that replay never
		// depends on the host listing them.
		p.listParams = json.RawMessage(`{}`)
		if p.modernMeta != nil {
			p.listParams = jsonrpc.SetMember(p.listParams, "_meta", p.modernMeta)
		}
		p.learnChild()
	}
	r := p.newPending()
	r.hostID, r.method, r.params = m.ID, m.Method, m.Params
	r.listen, r.hostToken = is(m.Method, p.proto.rules.Listen), p.proto.progressToken(m.Params)
	if p.opts.Observer != nil {
		r.params, r.call = p.opts.Observer.Request(m.Method, m.Params)
	}
	if r.hostToken == nil && sameBytes(r.params, m.Params) {
		r.frame = f
	}
	p.send(r)
}

// remember keeps what a new child must be told again: the handshake and the state it set.
func (p *proxy) remember(m jsonrpc.Message) {
	rules := &p.proto.rules
	state := true // the host sets state that a new child must be told
	switch {
	case is(m.Method, rules.Handshake):
		p.initParams, state = m.Params, false
	case p.proto.restate[m.Method]:
		p.restate[m.Method] = m.Params
	case is(m.Method, rules.Subscribe), is(m.Method, rules.Unsubscribe):
		var key string
		json.Unmarshal(jsonrpc.Field(m.Params, rules.SubscriptionKey), &key)
		if m.Method == rules.Subscribe {
			p.subscribed[key] = true
		} else {
			delete(p.subscribed, key)
		}
	default:
		state = false
	}
	if state && p.up != nil && p.up.restored {
		p.upAsk(p.up.child, m.Method, m.Params, nil) // the new child is past its restore: tell it too
	}
	if p.modernMeta == nil && rules.VersionKey != "" { // the first such _meta serves the probes; no need to scan every request
		if meta := jsonrpc.Field(m.Params, "_meta"); jsonrpc.Field(meta, rules.VersionKey) != nil {
			p.modernMeta = meta
		}
	}
}

// send gives a request a fresh child id (and progress token) and sends it to the child. It
// returns the id, and false when the child refused it (the host has been answered).
func (p *proxy) send(r *pending) (string, bool) {
	p.nextID++
	id := jsonrpc.IntID(p.nextID)
	params := r.params
	if r.hostToken != nil {
		params = setMeta(params, p.proto.rules.ProgressKey, json.RawMessage(id))
	}
	r.sent, r.to = p.clock.Now(), p.child
	if r.sends++; r.sends > 1 && r.call != nil {
		r.call.Replayed()
	}
	p.pend[string(id)] = r
	if r.hostID != nil {
		p.byHost[string(r.hostID)] = string(id)
	}
	var frame []byte
	if r.frame != nil {
		frame = jsonrpc.ReplaceID(r.frame, r.hostID, id) // no need to write the request anew
	} else {
		frame = jsonrpc.AppendRequest(make([]byte, 0, len(r.method)+len(params)+64), id, r.method, params)
	}
	err := p.child.Send(frame)
	switch {
	case errors.Is(err, ErrBacklog):
		// The child stopped reading: holding more would grow without bound. The host hears
		// at once, and may retry; --probe restarts a child that stays like this.
		if r.hostID == nil {
			p.forget(string(id))
			return "", false
		}
		p.fail(string(id), r, p.proto.rules.Busy("the server is not reading its input; retry later",
			map[string]any{"reason": "backlog full", "retryable": true}))
		return "", false
	case errors.Is(err, ErrStdinClosed) || errors.Is(err, ErrExited):
		// It never reached the child, which is gone or going: it goes to the next one, whatever
		// the replay policy, as a request that waited for a child would.
		r.waiting, r.unsent = true, true
	case err != nil:
		p.log.Warn("could not send to the child; it will be replayed or answered at restart", zap.Error(err))
	}
	return string(id), true
}

// internal sends a request of the proxy's own to the child, and swallows its answer.
func (p *proxy) internal(method string, params json.RawMessage) string {
	return p.ask(p.child, method, params, nil)
}

// ask sends a request of the proxy's own to c; then, if set, is given its answer.
func (p *proxy) ask(c *Child, method string, params json.RawMessage, then func(jsonrpc.Message)) string {
	p.nextID++
	id := jsonrpc.IntID(p.nextID)
	p.pend[string(id)] = &pending{method: method, params: params, internal: true, sent: p.clock.Now(), to: c, then: then}
	c.Send(jsonrpc.AppendRequest(nil, id, method, params))
	return string(id)
}

func (p *proxy) cancel(m jsonrpc.Message) {
	key := p.proto.rules.CancelKey
	hostID := jsonrpc.Field(m.Params, key)
	childID, ok := p.byHost[string(hostID)]
	if !ok {
		return
	}
	to := p.child
	if r := p.pend[childID]; r != nil && r.to != nil {
		to = r.to // an upgraded-away child may still have it
	}
	if !p.proto.answered { // MCP: nothing more is said about a cancelled request
		if r := p.pend[childID]; r != nil && r.call != nil {
			r.call.Ended(nil, true)
		}
		p.forget(childID)
	}
	if to != nil {
		to.Send(jsonrpc.AppendNotification(nil, m.Method, jsonrpc.SetMember(m.Params, key, json.RawMessage(childID))))
	}
}

func (p *proxy) forget(childID string) {
	r := p.pend[childID]
	if r != nil && r.hostID != nil {
		delete(p.byHost, string(r.hostID))
	}
	delete(p.pend, childID)
	if r != nil && !r.internal && len(p.retiring) > 0 && r.to != p.child { // answered, cancelled, timed out
		p.settle(r.to, 1)
	}
}

// fromChild handles one frame from the child.
func (p *proxy) fromChild(f []byte) {
	m, err := jsonrpc.Decode(f)
	if err != nil && m.Kind != jsonrpc.KindResponse {
		p.bad.Warn("the child wrote a malformed frame; dropped", f, zap.Error(err))
		return
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		if !p.answered {
			p.answered, p.upAt = true, p.clock.Now()
		}
		p.answer(m, f)
	case jsonrpc.KindRequest: // a legacy server asks the client: forward with an id of ours
		p.forwardCall(p.child, m, f)
	case jsonrpc.KindNotification:
		p.notification(m, f)
	}
}

// forwardCall passes a child's request to the host, under an id of the proxy's own.
func (p *proxy) forwardCall(c *Child, m jsonrpc.Message, f []byte) {
	p.nextCall++
	ours := jsonrpc.StringID("relay-" + strconv.FormatInt(p.nextCall, 10))
	p.calls[string(ours)] = childCall{child: c, id: m.ID}
	p.toHost(jsonrpc.ReplaceID(f, m.ID, ours))
}

func (p *proxy) answer(m jsonrpc.Message, f []byte) {
	key := string(m.ID)
	if key == p.probeID {
		p.probeID = ""
	}
	r, ok := p.pend[key]
	if !ok {
		return // cancelled, timed out, or a probe: nobody waits for it
	}
	p.forget(key)
	if r.then != nil {
		r.then(m)
		return
	}
	if r.internal {
		if r.to == p.child { // not an upgraded-away child's: its lists and state are not the proxy's now
			p.internalAnswer(r, m)
		}
		return
	}
	rules := &p.proto.rules
	kept := false // the proxy keeps a slice of the answer
	switch {
	case m.Result == nil, r.to != p.child: // an upgraded-away child's lists are not the proxy's
	case is(r.method, rules.ListTools):
		p.learn(m.Result)
		kept = true // a profile's ReadTools may keep slices of the result
	case is(r.method, rules.Handshake), is(r.method, rules.Discover):
		p.caps, kept = jsonrpc.Field(m.Result, rules.Capabilities), true
	}
	if r.call != nil {
		var e *jsonrpc.Error
		if m.Error != nil {
			e = new(jsonrpc.Error)
			json.Unmarshal(m.Error, e)
		}
		r.call.Ended(e, false)
	}
	if kept {
		p.toHost(jsonrpc.ReplaceID(f, m.ID, r.hostID))
	} else {
		// The child's frame is the proxy's alone (its reader made it for the proxy) and
		// nothing above kept a slice of it: the host's id goes in its own memory. The
		// answers to the methods above are rare: they are copied.
		p.toHost(jsonrpc.ReplaceIDInPlace(f, m.ID, r.hostID))
	}
	p.recycle(r)
}

// recycle keeps an answered request's record for the next one: one allocation less per
// request (nothing refers to it once it has left p.pend and been answered).
func (p *proxy) recycle(r *pending) {
	if len(p.free) < cap(p.free) {
		*r = pending{}
		p.free = append(p.free, r)
	}
}

// newPending returns a cleared record, recycled if one is free.
func (p *proxy) newPending() *pending {
	if n := len(p.free); n > 0 {
		r := p.free[n-1]
		p.free = p.free[:n-1]
		return r
	}
	return new(pending)
}

// internalAnswer completes the proxy's own requests: a replayed handshake is followed by its
// notification, the restated state and the subscriptions, then the queued requests.
func (p *proxy) internalAnswer(r *pending, m jsonrpc.Message) {
	rules := &p.proto.rules
	switch {
	case is(r.method, rules.Handshake):
		if p.child == nil {
			return
		}
		if m.Result != nil {
			p.caps = jsonrpc.Field(m.Result, rules.Capabilities)
		}
		p.restore(p.child, func(method string, params json.RawMessage) { p.internal(method, params) })
		if rules.ListTools != "" {
			p.internal(rules.ListTools, json.RawMessage(`{}`))
		}
		p.ready = true
		p.replay()
		// The new child may offer other tools, prompts or resources than the old one: said
		// for the lists it declared (MCP 2025-11-25, Server Features › Tools, Prompts,
		// Resources › List Changed Notification).
		for _, l := range rules.Lists {
			if p.declared(l) {
				p.toHost(jsonrpc.AppendNotification(nil, l.Changed, nil))
			}
		}
	case is(r.method, rules.Discover):
		if m.Result != nil {
			p.caps = jsonrpc.Field(m.Result, rules.Capabilities)
		}
	case is(r.method, rules.ListTools):
		// A long list comes in pages: the proxy reads them all, then sends the calls that
		// waited for it.
		if m.Result != nil && p.child != nil {
			if next := p.learn(m.Result); next != "" {
				cursor, _ := json.Marshal(next)
				p.internal(rules.ListTools, jsonrpc.SetMember(r.params, rules.ListCursor, cursor))
				return
			}
		}
		p.listing = false
		p.pump()
	}
}

// restore brings a child that has answered the host's handshake to the state the host set:
// the handshake's notification, then (with ask) the restated state and every subscription.
func (p *proxy) restore(c *Child, ask func(method string, params json.RawMessage)) {
	rules := &p.proto.rules
	if rules.Handshaken != "" {
		c.Send(jsonrpc.AppendNotification(nil, rules.Handshaken, nil))
	}
	for _, method := range rules.Restate { // in the protocol's order
		if params, ok := p.restate[method]; ok {
			ask(method, params)
		}
	}
	for key := range p.subscribed {
		params, _ := json.Marshal(map[string]string{rules.SubscriptionKey: key})
		ask(rules.Subscribe, params)
	}
}

// declared reports whether the child declared the capability of a list.
func (p *proxy) declared(l runtime.ListRule) bool { return jsonrpc.Field(p.caps, l.Capability) != nil }

// learnChild lists the child's tools, and discovers a stateless child's capabilities, with
// requests of the proxy's own, once the host's era is known.
func (p *proxy) learnChild() {
	rules := &p.proto.rules
	if p.child == nil || !p.ready || p.listParams == nil {
		return
	}
	if p.modernMeta != nil && rules.Discover != "" {
		p.internal(rules.Discover, jsonrpc.SetMember(json.RawMessage(`{}`), "_meta", p.modernMeta))
	}
	if rules.ListTools != "" {
		p.internal(rules.ListTools, p.listParams)
		p.listing = true
	}
}

// unlearned reports whether a host's request calls a tool the proxy does not know yet
// while it lists the child's tools: sent now and in flight at a crash, it could not be
// judged safe to replay, so it waits for the list (one round trip, at a child's start).
func (p *proxy) unlearned(m jsonrpc.Message) bool {
	if !p.listing || p.opts.Replay != ReplayAnnotated {
		return false
	}
	tool, ok := p.proto.isCall(m.Method, m.Params)
	if !ok {
		return false
	}
	_, known := p.annotated[tool]
	return !known
}

// learn records which tools the child said are safe to repeat, from one page of its list,
// and returns the next page's cursor.
func (p *proxy) learn(result json.RawMessage) string {
	if p.proto.rules.ReadTools == nil {
		return ""
	}
	repeatable, next := p.proto.rules.ReadTools(result)
	for name, ok := range repeatable {
		p.annotated[name] = ok
	}
	return next
}

func (p *proxy) notification(m jsonrpc.Message, f []byte) {
	rules := &p.proto.rules
	if is(m.Method, rules.ToolsChanged) {
		p.learnChild() // the annotations may have changed too
	}
	meta := jsonrpc.Field(m.Params, "_meta")
	var stream json.RawMessage
	if rules.StreamKey != "" {
		stream = jsonrpc.Field(meta, rules.StreamKey)
	}
	switch {
	case is(m.Method, rules.Progress):
		tok := jsonrpc.Field(m.Params, rules.ProgressKey)
		r, ok := p.pend[string(tok)]
		if !ok || r.hostToken == nil {
			return
		}
		var progress float64
		json.Unmarshal(jsonrpc.Field(m.Params, "progress"), &progress)
		if progress <= r.seen && r.replayed {
			return // a replayed request's progress reaches the host only past what it saw
		}
		r.seen = max(r.seen, progress)
		p.toHost(jsonrpc.AppendNotification(nil, m.Method, jsonrpc.SetMember(m.Params, rules.ProgressKey, r.hostToken)))
	case stream != nil:
		r, ok := p.pend[string(stream)]
		if !ok {
			return
		}
		if is(m.Method, rules.Acknowledged) && r.replayed {
			// The stream was re-opened on a new child: swallow the second acknowledgement, and
			// tell the host the lists may differ.
			// Only for the lists the child declared, and that the host's filter asked for (MCP
			// 2026-07-28, Basic › Patterns › Subscriptions).
			filter := jsonrpc.Field(r.params, rules.ListFilter)
			for _, l := range rules.Lists {
				if p.declared(l) && string(jsonrpc.Field(filter, l.Filter)) == "true" && (r.changed == nil || r.changed[l.Capability]) {
					p.toHost(jsonrpc.AppendNotification(nil, l.Changed,
						setMeta(nil, rules.StreamKey, json.RawMessage(r.hostID))))
				}
			}
			return
		}
		p.toHost(jsonrpc.AppendNotification(nil, m.Method, setMeta(m.Params, rules.StreamKey, json.RawMessage(r.hostID))))
	default:
		p.toHost(f)
	}
}

// timers enforces per-request timeouts and probes a silent child.
func (p *proxy) timers() {
	now := p.clock.Now()
	if p.opts.Timeout > 0 {
		for id, r := range p.pend {
			if r.internal || r.listen || now.Sub(r.sent) < p.opts.Timeout {
				continue
			}
			if r.to != nil {
				r.to.Send(p.proto.cancelFrame(json.RawMessage(id), "timed out in the supervisor"))
			}
			p.fail(id, r, p.proto.rules.Busy("the request timed out in the supervisor after "+p.opts.Timeout.String(),
				map[string]any{"reason": "timed out", "retryable": true}))
		}
	}
	if p.opts.ProbeAfter <= 0 || p.child == nil || !p.ready || len(p.pend) == 0 {
		return
	}
	switch {
	case p.probeID != "" && now.Sub(p.lastHeard) >= p.opts.ProbeAfter+p.opts.ProbeTimeout:
		p.probeID = ""
		p.sup.Restart("the child did not answer a liveness probe")
	case p.probeID == "" && now.Sub(p.lastHeard) >= p.opts.ProbeAfter:
		switch rules := &p.proto.rules; {
		case p.modernMeta != nil && rules.Discover != "":
			p.probeID = p.internal(rules.Discover, jsonrpc.SetMember(json.RawMessage(`{}`), "_meta", p.modernMeta))
		case rules.Ping != "":
			p.probeID = p.internal(rules.Ping, nil)
		}
	}
}

func (p *proxy) restartError() *jsonrpc.Error {
	why := "the server restarted while the request was in flight"
	data := map[string]any{"reason": "server restarted", "retryable": false}
	if p.lastExit != "" {
		why = "the server exited (" + p.lastExit + ") while the request was in flight, and is restarted"
		data["exit"] = p.lastExit
	}
	if !p.answered && len(p.lastTail) > 0 { // it never answered anything: its stderr may say why
		why += "; it answered nothing, and its last lines on stderr are in this error's data"
		data["stderr"] = p.lastTail
	}
	return p.unavailable(why, data)
}

// gaveUpError answers a request once the supervisor has given up: with why the command
// cannot run, or with why the supervisor gave up and the last child's stderr. Not "the
// server restarted": it is gone for good, most often because it cannot stay up.
func (p *proxy) gaveUpError() *jsonrpc.Error {
	var why string
	var data map[string]any
	if p.cannotRun != nil {
		why = fmt.Sprintf("the server cannot start: %q cannot run (%v); check that the command exists and is executable", p.cannotRun.Command, p.cannotRun.Err)
		data = map[string]any{"reason": "cannot start", "retryable": false}
	} else {
		why = fmt.Sprintf("the server keeps exiting, and relay stopped restarting it (%v)", p.gaveUpWhy)
		data = map[string]any{"reason": "gave up", "retryable": false}
		if len(p.lastTail) > 0 {
			why += "; its last lines on stderr are in this error's data"
			data["stderr"] = p.lastTail
		}
	}
	return p.unavailable(why, data)
}

func (p *proxy) toHost(f []byte) { p.host <- f }

// sameBytes reports whether a and b are the same slice of memory (not merely equal bytes).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// setMeta returns params with one key of its _meta set.
func setMeta(params json.RawMessage, key string, value json.RawMessage) json.RawMessage {
	return jsonrpc.SetMember(params, "_meta", jsonrpc.SetMember(jsonrpc.Field(params, "_meta"), key, value))
}
