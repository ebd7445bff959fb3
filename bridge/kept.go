package bridge

import (
	"encoding/json"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
)

// A legacy session on 2026-07-28 children keeps its state where its transport says
// (runtime.SessionState: a fleet's store), so that every instance of a fleet serves it: what
// its initialize declared, and the log level and subscriptions its client set since. The
// children are stateless, so an instance that takes the session up pins it to a child of its
// own pool and holds a listen there for its subscriptions. A session of legacy children
// lives in its own child, in one process, and keeps nothing (see Bridge.SessionsLiveInChildren).

// keptSession is a legacy session's state as its transport keeps it.
type keptSession struct {
	V          int             `json:"v"`   // 1
	Rev        uint64          `json:"rev"` // one more with each save (runtime.SessionState)
	Version    string          `json:"version"`
	ClientCaps json.RawMessage `json:"caps"`
	LogLevel   string          `json:"logLevel,omitempty"`
	Subs       []string        `json:"subs,omitempty"`
}

// save hands the session's state to the transport that keeps it, if any. An error is the
// request's answer: the change it made is undone by the caller.
func (s *session) save() error {
	kept := s.peer.SessionState()
	if kept == nil || kept.Save == nil {
		return nil
	}
	st := keptSession{V: 1, Rev: s.rev + 1, Version: s.version, ClientCaps: s.clientCaps, LogLevel: s.logLevel, Subs: s.subs}
	raw, err := json.Marshal(&st)
	if err == nil {
		err = kept.Save(raw)
	}
	if err != nil {
		msg := "Server busy: the session's state could not be kept where every instance finds it: " + err.Error()
		if !strings.HasSuffix(msg, "retry") {
			msg += "; retry"
		}
		return &jsonrpc.Error{Code: mcp.CodeServerBusy, Message: msg, Data: map[string]any{"retryable": true}}
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
// cannot be read is logged and left; a state no newer than the one here is left too.
func (s *session) TakeState(raw []byte) {
	if s.b.legacy {
		s.peer.Logger().Warn("bridge: a session's kept state is left: with children of the initialize generation, a session lives in its own child, on one instance")
		return
	}
	var st keptSession
	if err := json.Unmarshal(raw, &st); err != nil || st.V != 1 || st.Version == "" {
		s.peer.Logger().Warn("bridge: a session's kept state could not be read, and is left", zap.Error(err), zap.Int("version", st.V))
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
