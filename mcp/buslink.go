package mcp

import (
	"context"
	"crypto/rand"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/zap"

	"github.com/relayrt/relay/internal/ratelog"
)

// A Server with a Bus (ServerOptions.Bus) tells the fleet's other instances each change it
// makes, and tells its own listeners (legacy sessions, subscriptions/listen streams) the
// changes the others make. Its own changes reach its own listeners directly, as without a
// Bus, and are skipped when the bus brings them back: each listener hears each change once,
// and hears this instance's changes while the bus is down.

// The wire format of a change on the bus, version 1: one byte of version, one of kind, the
// 16 bytes of the sending Server's instance id, then the subject (the resource's URI, the
// task's id; nothing for a list). A Server drops, and logs, a message of another version:
// a fleet upgraded one instance at a time tells itself less meanwhile, and no more wrongly.
const (
	busVersion    = 1
	busHeader     = 2 + busIDLen
	busIDLen      = 16
	busMaxSubject = 16 << 10 // longer subjects are not sent; the URIs of the registry are shorter
)

// The kinds on the wire, fixed apart from changeKind so that it may be renumbered.
const (
	wireTools    = 1
	wirePrompts  = 2
	wireResList  = 3
	wireResource = 4
	wireTask     = 5
)

var kindToWire = map[changeKind]byte{toolsChanged: wireTools, promptsChanged: wirePrompts,
	resourcesChanged: wireResList, resourceUpdated: wireResource, taskChanged: wireTask}

var wireToKind = map[byte]changeKind{wireTools: toolsChanged, wirePrompts: promptsChanged,
	wireResList: resourcesChanged, wireResource: resourceUpdated, wireTask: taskChanged}

// encodeChange returns c as a version 1 message from the instance id, or nil when c has no
// form on the bus.
func encodeChange(id [busIDLen]byte, c change) []byte {
	k, ok := kindToWire[c.kind]
	if !ok || len(c.uri) > busMaxSubject {
		return nil
	}
	msg := make([]byte, 0, busHeader+len(c.uri))
	msg = append(msg, busVersion, k)
	msg = append(msg, id[:]...)
	return append(msg, c.uri...)
}

// decodeChange reads a message of the bus; why says what is wrong with one it rejects.
func decodeChange(msg []byte) (from [busIDLen]byte, c change, why string) {
	if len(msg) < busHeader {
		return from, c, "shorter than the header"
	}
	if msg[0] != busVersion {
		return from, c, "of a version this instance does not read (upgrade it)"
	}
	kind, ok := wireToKind[msg[1]]
	if !ok {
		return from, c, "of an unknown kind"
	}
	copy(from[:], msg[2:busHeader])
	subject := msg[busHeader:]
	switch {
	case (kind == resourceUpdated || kind == taskChanged) && len(subject) == 0:
		return from, c, "without the resource or task it is about"
	case kind != resourceUpdated && kind != taskChanged && len(subject) > 0:
		return from, c, "with a subject where its kind has none"
	case len(subject) > busMaxSubject || !utf8.Valid(subject):
		return from, c, "with a subject that is too long or not UTF-8"
	}
	return from, change{kind: kind, uri: string(subject)}, ""
}

// Timings of the link: how long a listener waits for a subscription being made before it is
// acknowledged anyway, how long a publish may take, how long Close gives the changes still
// queued, and how long a subscription must have lasted for its loss to be a first failure.
const (
	busAwait     = 10 * time.Second
	busPublish   = 5 * time.Second
	busDrain     = 2 * time.Second
	busStable    = time.Minute
	busQueue     = 256
	busMinRetry  = 50 * time.Millisecond
	busMaxRetry  = 10 * time.Second
	busLogMaxLen = 64
)

// busLink is a Server's side of its Bus: a publisher goroutine, started at the first change,
// that sends the changes queued; and a subscriber goroutine, started at the first listener or
// task, that delivers the other instances' changes to this one's hub and subscribes again
// when the bus loses the subscription. Both stop at Server.Close.
//
// The subscription is made at the first listener, or the first task this instance runs
// (another instance may take the task's tasks/update or tasks/cancel), rather than with the
// Server: NewServer takes no context and returns no error, so it must not wait for a
// network; and an instance nobody listens to (one that only serves calls, a test's)
// subscribes to nothing, which on a bus that sends every message to every subscriber saves
// it all of the fleet's traffic. Once made, it is kept until Close: listeners come and go,
// and each would otherwise wait for a subscription again.
type busLink struct {
	bus   Bus
	topic string
	id    [busIDLen]byte
	hub   *hub
	log   *zap.Logger
	rate  *ratelog.Limiter // what the bus or another instance causes, bounded
	// elsewhere is told of each task another instance changed, after the hub: the task may
	// run here (Server.taskChangedElsewhere).
	elsewhere func(taskID string)

	mu         sync.Mutex
	closed     bool
	queue      chan []byte   // to publish; nil until the publisher starts
	subscribed bool          // the subscriber has started
	settled    chan struct{} // closed unless a subscription is being made
	wg         sync.WaitGroup
	stopSub    context.CancelFunc
	stopPub    context.CancelFunc
}

func newBusLink(bus Bus, topic string, h *hub, log *zap.Logger, elsewhere func(taskID string)) *busLink {
	l := &busLink{bus: bus, topic: topic, hub: h, log: log, rate: ratelog.New(log, &ratelog.Options{MaxBytes: busLogMaxLen}),
		elsewhere: elsewhere, settled: make(chan struct{})}
	close(l.settled)
	if _, err := rand.Read(l.id[:]); err != nil {
		panic("mcp: no randomness for the Server's instance id: " + err.Error())
	}
	return l
}

// publish queues c for the other instances, without waiting: when the queue is full (the bus
// is slow or down) c is dropped, as a bus drops what a subscriber behind has not read.
func (l *busLink) publish(c change) {
	msg := encodeChange(l.id, c)
	if msg == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if l.queue == nil {
		l.queue = make(chan []byte, busQueue)
		ctx, cancel := context.WithCancel(context.Background())
		l.stopPub = cancel
		l.wg.Go(func() { l.publisher(ctx) })
	}
	select {
	case l.queue <- msg:
	default:
		l.rate.Warn("dropped a change for the fleet's other instances: the bus takes them slower than they come; their listeners miss it", nil,
			zap.String("topic", l.topic))
	}
}

// publisher sends the changes queued, until Close closes the queue; ctx ends at the end of
// Close's grace for them.
func (l *busLink) publisher(ctx context.Context) {
	for msg := range l.queue {
		pctx, cancel := context.WithTimeout(ctx, busPublish)
		err := l.bus.Publish(pctx, l.topic, msg)
		cancel()
		if err != nil && ctx.Err() == nil {
			l.rate.Warn("could not publish a change on the bus; the fleet's other instances miss it (is the bus reachable?)", nil,
				zap.String("topic", l.topic), zap.Error(err))
		}
	}
}

// await starts the subscription if it has not started, and returns once it is in force, or
// has failed (the bus is down: the listeners will be told the lists changed once it is back),
// or busAwait has passed, or ctx has ended. A listener calls it after joining the hub and
// before its acknowledgement, so that whatever another instance publishes after the
// acknowledgement reaches it (MCP 2026-07-28, Basic › Subscriptions: the acknowledgement
// says the subscription is in force).
func (l *busLink) await(ctx context.Context) {
	settled := l.start()
	t := time.NewTimer(busAwait)
	defer t.Stop()
	select {
	case <-settled:
	case <-ctx.Done():
	case <-t.C:
		l.rate.Warn("acknowledged a listener before the bus subscription was in force: the bus has not answered; it may miss other instances' changes until then", nil,
			zap.String("topic", l.topic), zap.Duration("waited", busAwait))
	}
}

// start starts the subscriber unless it has started, and returns the channel that closes
// once no subscription is being made.
func (l *busLink) start() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.subscribed && !l.closed {
		l.subscribed = true
		l.settled = make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		l.stopSub = cancel
		l.wg.Go(func() { l.subscriber(ctx) })
	}
	return l.settled
}

// setSettled marks whether a subscription is being made now.
func (l *busLink) setSettled(settled bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.settled:
		if !settled {
			l.settled = make(chan struct{})
		}
	default:
		if settled {
			close(l.settled)
		}
	}
}

// subscriber holds the subscription until ctx ends: it delivers the other instances'
// changes to the hub, and subscribes again, with backoff, when the bus fails to subscribe
// or loses the subscription. Messages published meanwhile are lost to this instance; so once
// subscribed again it tells its listeners that everything they follow may have changed
// (busResumed), which they can always be told again.
func (l *busLink) subscriber(ctx context.Context) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = busMinRetry, busMaxRetry
	b.Multiplier, b.RandomizationFactor, b.MaxElapsedTime = 2, 0.2, 0
	b.Reset()
	lost := false // a subscription was made once and lost since, or never made
	for {
		l.setSettled(false)
		ch, err := l.bus.Subscribe(ctx, l.topic)
		l.setSettled(true)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			lost = true
			l.rate.Warn("could not subscribe to the bus; this instance's listeners miss the fleet's other instances' changes until it can (is the bus reachable?)", nil,
				zap.String("topic", l.topic), zap.Error(err))
		} else {
			if lost {
				l.hub.publish(change{kind: busResumed})
			}
			since := time.Now()
			l.deliver(ch)
			if ctx.Err() != nil {
				return
			}
			lost = true
			if time.Since(since) >= busStable {
				b.Reset() // a loss after a long while is a first failure, not one of a run
			}
			l.log.Warn("the bus lost this instance's subscription; subscribing again", zap.String("topic", l.topic))
		}
		t := time.NewTimer(b.NextBackOff())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// deliver passes the other instances' changes on ch to the hub until ch closes. A message it
// cannot read is logged and dropped.
func (l *busLink) deliver(ch <-chan []byte) {
	for msg := range ch {
		from, c, why := decodeChange(msg)
		if why != "" {
			l.rate.Warn("dropped a malformed message from the bus: "+why, msg, zap.String("topic", l.topic))
			continue
		}
		if from == l.id { // told here already, when it was made
			continue
		}
		l.hub.publish(c)
		if c.kind == taskChanged {
			l.elsewhere(c.uri)
		}
	}
}

// close stops both goroutines and waits for them; the changes still queued get busDrain to
// be published. Nothing starts after it.
func (l *busLink) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	if l.stopSub != nil {
		l.stopSub()
	}
	if l.queue != nil {
		close(l.queue)
		t := time.AfterFunc(busDrain, l.stopPub)
		defer t.Stop()
		defer l.stopPub()
	}
	l.mu.Unlock()
	l.wg.Wait()
	l.rate.Flush()
}
