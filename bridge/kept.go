package bridge

import (
	"encoding/json"
	"slices"

	"go.uber.org/zap"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

// A legacy session on 2026-07-28 children keeps its state where its transport says
// (runtime.SessionState: a fleet's store), so that every instance of a fleet serves it: what
// its initialize declared, and the log level and subscriptions its client set since. The
// children are stateless, so an instance that takes the session up pins it to a child of its
// own pool and holds a listen there for its subscriptions; every instance that served the
// session holds one, and only the one with the client's GET stream has it delivered. A
// session of legacy children lives in its own child, in one process, and keeps nothing
// (Bridge.SessionsLiveInChildren).

// keptSession is a legacy session's state as its transport keeps it.
type keptSession struct {
	V          int             `json:"v"`   // 1
	Rev        uint64          `json:"rev"` // one more with each save (runtime.SessionState)
	Version    string          `json:"version"`
	ClientCaps json.RawMessage `json:"caps"`
	LogLevel   string          `json:"logLevel,omitempty"`
	Subs       []string        `json:"subs,omitempty"` // sorted
}

// save hands the session's state to the transport that keeps it, if any.
func (s *session) save() error {
	if s.kept == nil || s.kept.Save == nil {
		return nil
	}
	st := keptSession{V: 1, Rev: s.rev + 1, Version: s.version, ClientCaps: s.clientCaps, LogLevel: s.logLevel, Subs: s.subs}
	raw, err := json.Marshal(&st)
	if err == nil {
		err = s.kept.Save(raw)
	}
	if err != nil {
		return mcp.StateNotKept(err)
	}
	s.rev = st.Rev
	return nil
}

// keep answers a request that changed the session's state: {} once it is saved, or the
// save's error after undo has put the state back.
func (s *session) keep(undo func()) runtime.Route {
	if err := s.save(); err != nil {
		undo()
		return runtime.Route{Err: err}
	}
	return runtime.Route{Result: json.RawMessage(`{}`)}
}

// TakeState takes the state another instance's replica of the session saved: it begins the
// session here if this replica has not, and takes what the client set since. A state that
// cannot be read, or is no newer than the one here, is left.
func (s *session) TakeState(raw []byte) {
	var st keptSession
	if err := json.Unmarshal(raw, &st); err != nil || st.V != 1 || st.Version == "" || s.b.legacy {
		s.peer.Logger().Warn("bridge: a session's kept state is left: unreadable, or kept for children of the initialize generation",
			zap.Error(err), zap.Int("version", st.V))
		return
	}
	if s.legacy && st.Rev <= s.rev {
		return
	}
	if !s.legacy {
		s.begin(st.Version, st.ClientCaps)
	}
	s.rev, s.logLevel = st.Rev, st.LogLevel
	if !slices.Equal(s.subs, st.Subs) {
		s.subs = st.Subs
		s.subscribed()
	}
}
