package supervise

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
)

// The proxy's side of Supervisor.Upgrade: a new child is started beside the one serving,
// brought to its state (the host's handshake, the state it set, its subscriptions), and
// listed as the old one is; then every new request goes to it, the host's streams are
// re-opened on it, the host is told which lists differ, and the old child is stopped once
// it has answered what it had in flight (within ProxyOptions.Drain). A new child that fails
// to start or to answer leaves the old one serving.

// upgradeTimeout bounds how long a new child has to start and answer what brings it to the
// state of the one it replaces (a server started through npx may first fetch its package).
const upgradeTimeout = 30 * time.Second

// maxListPages bounds the pages of one list read to compare two children's lists: a server
// whose cursors never end would otherwise hold the upgrade until its deadline.
const maxListPages = 1000

// upgrading is an upgrade under way.
type upgrading struct {
	asked     []upgrade
	observed  func(error) // the Observer's end of it, if any
	child     *Child
	out       <-chan []byte
	deadline  <-chan time.Time
	owed      int             // the proxy's requests for it, to either child, not yet answered
	owedOld   map[string]int  // of which, pages of the old child's lists, by list
	restored  bool            // the host's state has been sent to it: what the host sets now is sent too
	era       [3]string       // the host's handshake, _meta and list params when it started
	caps      json.RawMessage // what the new child declared
	annotated map[string]bool // its tools safe to repeat
	lists     [2]map[string]hash.Hash
}

// retiree is an upgraded-away child, finishing what it had in flight.
type retiree struct {
	drained chan struct{} // closed once it owes the host nothing: it is stopped
	owed    int           // the host requests it has in flight (none is sent to it now)
}

// retiredFrame is a frame of a retiring child; end: its output has ended.
type retiredFrame struct {
	from *Child
	f    []byte
	end  bool
}

func (p *proxy) candidateFrames() <-chan []byte {
	if p.up == nil {
		return nil
	}
	return p.up.out
}

func (p *proxy) upgradeDeadline() <-chan time.Time {
	if p.up == nil {
		return nil
	}
	return p.up.deadline
}

// askUpgrade serves a Supervisor.Upgrade.
func (p *proxy) askUpgrade(u upgrade) {
	switch {
	case p.hostDone || p.stopping:
		u.done <- errors.New("supervise: not upgraded: the proxy is stopping")
	case p.gaveUp:
		u.done <- fmt.Errorf("supervise: not upgraded: %w", ErrGaveUp)
	default:
		p.upAgain = append(p.upAgain, u)
		p.nextUpgrade()
	}
}

// nextUpgrade starts one upgrade for all those asked for, once none is under way and the
// child serves: during a restart it waits for the new child, then upgrades it again (the
// restart ran the command as it was then, which may be older than what was asked for).
func (p *proxy) nextUpgrade() {
	if len(p.upAgain) == 0 || p.up != nil || p.adopting != nil || p.child == nil || !p.ready ||
		p.hostDone || p.stopping || p.gaveUp { // the last three: answered when the proxy ends
		return
	}
	asked := p.upAgain
	p.upAgain = nil
	observed := func(error) {}
	if p.opts.Observer != nil {
		observed = p.opts.Observer.Upgrade(asked[0].reason)
	}
	c, err := StartChild(p.sup.spec.Command, &p.sup.spec.Child)
	if err != nil {
		observed(err)
		p.log.Error("upgrade failed: the new child cannot start; the old one keeps serving", zap.Error(err))
		for _, u := range asked {
			u.done <- fmt.Errorf("supervise: upgrade failed, the old child still serves: %w", err)
		}
		return
	}
	u := &upgrading{asked: asked, observed: observed, child: c, out: c.Frames(), deadline: p.clock.After(upgradeTimeout),
		annotated: map[string]bool{}, lists: [2]map[string]hash.Hash{{}, {}}, owedOld: map[string]int{}}
	u.era = p.era()
	p.up = u
	p.log.Info("upgrading: a new child started beside the one serving", zap.Int("pid", c.PID()), zap.String("reason", asked[0].reason))
	rules := &p.proto.rules
	switch {
	case p.initParams != nil:
		p.upAsk(c, rules.Handshake, p.initParams, func(m jsonrpc.Message) {
			if m.Error != nil {
				p.upgradeFailed(fmt.Errorf("the new child refused the handshake: %s", m.Error))
				return
			}
			u.caps = jsonrpc.Field(m.Result, rules.Capabilities)
			p.restore(c, func(method string, params json.RawMessage) { p.upAsk(c, method, params, nil) })
			u.restored = true
			p.compareLists(u)
		})
		return
	case p.modernMeta != nil && rules.Discover != "":
		p.upAsk(c, rules.Discover, jsonrpc.SetMember(json.RawMessage(`{}`), "_meta", p.modernMeta), func(m jsonrpc.Message) {
			if m.Error != nil {
				p.upgradeFailed(fmt.Errorf("the new child refused %s: %s", rules.Discover, m.Error))
				return
			}
			u.caps = jsonrpc.Field(m.Result, rules.Capabilities)
		})
	case rules.Ping != "": // any answer shows it reads and answers
		p.upAsk(c, rules.Ping, nil, nil)
	}
	u.restored = true // a host that has not opened a session has set nothing
	p.compareLists(u)
	p.maybePromote(u)
}

// upAsk sends a request of the upgrade's to c (the new child or the old one); then, if set,
// is given its answer, unless the upgrade has ended meanwhile.
func (p *proxy) upAsk(c *Child, method string, params json.RawMessage, then func(jsonrpc.Message)) {
	u := p.up
	u.owed++
	p.ask(c, method, params, func(m jsonrpc.Message) {
		if p.up != u {
			return
		}
		u.owed--
		if then != nil {
			then(m)
		}
		if p.up == u {
			p.maybePromote(u)
		}
	})
}

// compareLists reads every list from both children, to tell the host only of those that
// differ. Nothing is read before the host has said its era: it knows no list then.
func (p *proxy) compareLists(u *upgrading) {
	if p.listParams == nil {
		return
	}
	rules := &p.proto.rules
	for _, l := range rules.Lists {
		for i, c := range [2]*Child{p.child, u.child} {
			h := sha256.New()
			u.lists[i][l.Capability] = h
			for _, read := range l.Read {
				p.readList(u, c, l.Capability, read.Method, read.Items, p.listParams, h, 0)
			}
		}
	}
}

// readList reads one list from c, page after page, into h.
func (p *proxy) readList(u *upgrading, c *Child, list, method, items string, params json.RawMessage, h hash.Hash, page int) {
	rules := &p.proto.rules
	if c != u.child {
		u.owedOld[list]++
	}
	p.upAsk(c, method, params, func(m jsonrpc.Message) {
		if c != u.child {
			u.owedOld[list]--
		}
		if m.Result == nil {
			h.Write([]byte("\x00error")) // not offered: a list unlike any other
			return
		}
		h.Write(jsonrpc.Field(m.Result, items))
		h.Write([]byte{0})
		if c == u.child && method == rules.ListTools && rules.ReadTools != nil {
			repeatable, _ := rules.ReadTools(m.Result)
			for name, ok := range repeatable {
				u.annotated[name] = ok
			}
		}
		var next string
		json.Unmarshal(jsonrpc.Field(m.Result, rules.NextCursor), &next)
		if next != "" && page+1 < maxListPages {
			cursor, _ := json.Marshal(next)
			p.readList(u, c, list, method, items, jsonrpc.SetMember(params, rules.ListCursor, cursor), h, page+1)
		}
	})
}

// maybePromote makes the new child the one serving, once everything asked of it (and of the
// old one, for its lists) is answered.
func (p *proxy) maybePromote(u *upgrading) {
	if p.up != u || u.owed > 0 {
		return
	}
	p.promote(u)
}

// upgradeTimedOut ends an upgrade whose deadline has passed: a new child that has answered
// all it was asked serves anyway, the old one's lists unread (an old child that no longer
// answers is one to upgrade away from: those lists are said to have changed); otherwise the
// upgrade fails.
func (p *proxy) upgradeTimedOut() {
	u := p.up
	owedOld := 0
	for _, n := range u.owedOld {
		owedOld += n
	}
	if u.owed > owedOld {
		p.upgradeFailed(fmt.Errorf("the new child did not answer within %s", upgradeTimeout))
		return
	}
	p.log.Warn("upgrading: the old child did not list what it serves in time; the new one serves anyway", zap.Duration("timeout", upgradeTimeout))
	p.promote(u)
}

// era is what the host has said of itself: its handshake, the _meta that names its version,
// and the params the proxy lists with.
func (p *proxy) era() [3]string {
	return [3]string{string(p.initParams), string(p.modernMeta), string(p.listParams)}
}

// promote makes the new child the one serving; unless the host said its era meanwhile (its
// handshake came during the upgrade): the new child has not had it, and the upgrade starts
// again.
func (p *proxy) promote(u *upgrading) {
	if u.era != p.era() {
		p.retryUpgrade("the host opened its session during the upgrade, which starts again")
		return
	}
	p.up = nil
	old := p.child
	changed := map[string]bool{}
	for _, l := range p.proto.rules.Lists {
		a, b := u.lists[0][l.Capability], u.lists[1][l.Capability]
		if a != nil && b != nil && (u.owedOld[l.Capability] > 0 || string(a.Sum(nil)) != string(b.Sum(nil))) {
			changed[l.Capability] = true
		}
	}
	p.child, p.childOut, p.ready = u.child, u.out, true
	if u.caps != nil {
		p.caps = u.caps
	}
	p.annotated = u.annotated
	p.answered, p.upAt, p.lastHeard, p.settled, p.probeID = true, p.clock.Now(), p.clock.Now(), nil, ""
	p.listing = false // u.annotated is the new child's whole list; the old child's listing is dropped
	p.adopting = u.child
	p.sup.adopt <- u.child // buffered, and empty: adopting is nil until the supervisor has taken the last one

	// The host's streams move to the new child; their acknowledgement there is swallowed,
	// and says only the lists that differ.
	var moved []*pending
	for id, r := range p.pend {
		if r.to == old && r.listen {
			old.Send(p.proto.cancelFrame(json.RawMessage(id), "moved to the upgraded server"))
			p.forget(id)
			moved = append(moved, r)
		}
	}
	for _, r := range moved {
		r.replayed, r.changed = true, changed
		p.send(r)
	}
	if p.initParams != nil { // a legacy host hears of the lists that differ as they happen
		for _, l := range p.proto.rules.Lists {
			if changed[l.Capability] && p.declared(l) {
				p.toHost(jsonrpc.AppendNotification(nil, l.Changed, nil))
			}
		}
	}
	p.retire(old)
	p.log.Info("upgraded: new requests go to the new child; the old one finishes what it has in flight",
		zap.Int("pid", u.child.PID()), zap.Int("old_pid", old.PID()), zap.Int("lists_changed", len(changed)))
	u.observed(nil)
	for _, a := range u.asked {
		a.done <- nil
	}
}

// upgradeFailed ends the upgrade under way: its child is stopped, the old one keeps serving.
func (p *proxy) upgradeFailed(err error) {
	u := p.up
	if u == nil {
		return
	}
	p.up = nil
	for id, r := range p.pend {
		if r.to == u.child {
			p.forget(id)
		}
	}
	for id, c := range p.calls {
		if c.child == u.child {
			delete(p.calls, id)
		}
	}
	p.discard(u.child)
	p.log.Error("upgrade failed: the old child keeps serving", zap.Error(err), zap.Strings("stderr", u.child.StderrTail()))
	u.observed(err)
	for _, a := range u.asked {
		a.done <- fmt.Errorf("supervise: upgrade failed, the old child still serves: %w", err)
	}
}

// retryUpgrade ends the upgrade under way, and asks for it again: the child serving has died
// (it starts over once the restart has brought a new child up), or the host opened its
// session meanwhile.
func (p *proxy) retryUpgrade(why string) {
	if p.up == nil {
		return
	}
	asked := p.up.asked
	p.up.asked = nil
	p.upgradeFailed(errors.New(why))
	p.upAgain = append(asked, p.upAgain...)
}

// fromCandidate handles a frame of the new child before it serves: answers to the upgrade's
// requests, and requests of its own to the host (roots/list, say), which the host answers.
func (p *proxy) fromCandidate(f []byte, ok bool) {
	u := p.up
	if !ok {
		u.out = nil
		p.upgradeFailed(errors.New("the new child exited before it was ready"))
		return
	}
	m, err := jsonrpc.Decode(f)
	if err != nil && m.Kind != jsonrpc.KindResponse {
		p.bad.Warn("the new child wrote a malformed frame; dropped", f, zap.Error(err))
		return
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		if r, ok := p.pend[string(m.ID)]; ok && r.to == u.child {
			p.answer(m, f)
		}
	case jsonrpc.KindRequest:
		p.forwardCall(u.child, m, f)
	}
}

// retire hands the old child to a forwarder of its frames, and stops it once it owes the
// host nothing, or once Drain has passed.
func (p *proxy) retire(old *Child) {
	r := &retiree{drained: make(chan struct{})}
	p.retiring[old] = r
	p.workers.Add(2)
	go func() { // owned by the proxy, which reads p.retired until the end of each
		defer p.workers.Done()
		for f := range old.Frames() {
			p.retired <- retiredFrame{from: old, f: f}
		}
		p.retired <- retiredFrame{from: old, end: true}
	}()
	drained := r.drained // the proxy's field is its own: it forgets the channel once closed
	go func() {
		defer p.workers.Done()
		select {
		case <-drained:
		case <-p.clock.After(p.opts.Drain):
		}
		old.Stop(context.Background())
	}()
	for _, q := range p.pend {
		if q.to == old && !q.internal {
			r.owed++
		}
	}
	p.settle(old, 0)
}

// settle counts n more of a retiring child's requests done (answered, cancelled, timed out
// or failed), and lets it be stopped once it owes the host nothing.
func (p *proxy) settle(c *Child, n int) {
	r := p.retiring[c]
	if r == nil || r.drained == nil {
		return
	}
	if r.owed -= n; r.owed <= 0 {
		close(r.drained)
		r.drained = nil
	}
}

// fromRetiring handles a frame of an upgraded-away child: its answers, its progress, its
// own requests to the host; and its end, after which what it still owed is replayed on
// the child serving, when safe, or answered with an error.
func (p *proxy) fromRetiring(rf retiredFrame) {
	if rf.end {
		p.retiredEnd(rf.from)
		return
	}
	m, err := jsonrpc.Decode(rf.f)
	if err != nil && m.Kind != jsonrpc.KindResponse {
		p.bad.Warn("an upgraded-away child wrote a malformed frame; dropped", rf.f, zap.Error(err))
		return
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		p.answer(m, rf.f)
	case jsonrpc.KindRequest:
		p.forwardCall(rf.from, m, rf.f)
	case jsonrpc.KindNotification:
		if is(m.Method, p.proto.rules.Progress) { // its lists and streams are no longer the host's
			p.notification(m, rf.f)
		}
	}
}

func (p *proxy) retiredEnd(c *Child) {
	if r := p.retiring[c]; r != nil && r.drained != nil {
		close(r.drained)
	}
	delete(p.retiring, c)
	var again []*pending
	for id, r := range p.pend {
		switch {
		case r.to != c:
		case r.internal:
			p.forget(id)
		case !r.unsent && !p.replayable(r): // one that never reached it goes on, whatever the policy
			p.fail(id, r, p.unavailable("the server was upgraded, and its previous version ended (it exited, or the drain of "+p.opts.Drain.String()+" passed) before answering this request",
				map[string]any{"reason": "server upgraded", "retryable": false}))
		case p.child != nil && p.ready:
			p.forget(id)
			r.replayed, r.unsent = true, false
			again = append(again, r)
		default: // the next child takes it (replay)
			r.waiting, r.replayed, r.to = true, true, nil
		}
	}
	for _, r := range again {
		p.send(r)
	}
}

// discard stops a child nobody serves from, reading its output meanwhile so that it ends.
func (p *proxy) discard(c *Child) {
	p.workers.Add(2)
	go func() {
		defer p.workers.Done()
		for range c.Frames() {
		}
	}()
	go func() {
		defer p.workers.Done()
		c.Stop(context.Background())
	}()
}

// endUpgrades runs once the supervisor is done: whatever upgrade is under way or asked for
// fails, and every child it started or retired is stopped and waited for.
func (p *proxy) endUpgrades() {
	p.upgradeFailed(errors.New("the proxy is stopping"))
	for _, u := range p.upAgain {
		u.done <- errors.New("supervise: not upgraded: the proxy is stopping")
	}
	p.upAgain = nil
	select {
	case c := <-p.sup.adopt: // handed over, never taken: nobody stopped it
		p.discard(c)
	default:
	}
	for _, r := range p.retiring {
		if r.drained != nil {
			close(r.drained)
			r.drained = nil
		}
	}
	for len(p.retiring) > 0 {
		if rf := <-p.retired; rf.end {
			delete(p.retiring, rf.from)
		}
	}
	p.workers.Wait()
}
