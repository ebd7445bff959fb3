package mcp

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// ServerOptions configures a Server. The zero value is ready to use.
type ServerOptions struct {
	// Instructions tells the model how to use the server; sent in discover and initialize.
	Instructions string
	// CacheTTL is the ttlMs given with cacheable 2026-07-28 results (server/discover and the
	// lists). Zero, the default, says that a client must not reuse them.
	CacheTTL time.Duration
}

// Server is an MCP server: what it serves and how it describes itself. It holds no protocol
// state; each connection gets its own session from Profile. Register tools before or while
// serving: each request sees a consistent snapshot.
type Server struct {
	info       Implementation
	opts       ServerOptions
	serverInfo json.RawMessage // {"io.modelcontextprotocol/serverInfo":{...}}

	mu    sync.Mutex // serialises registrations only; requests read the snapshot
	tools atomic.Pointer[toolSet]
}

// toolSet is an immutable snapshot of the registered tools, in name order.
type toolSet struct {
	byName map[string]*tool
	list   json.RawMessage // the "tools" array, encoded once
}

// NewServer returns a server that describes itself as info. opts may be nil.
func NewServer(info Implementation, opts *ServerOptions) *Server {
	s := &Server{info: info}
	if opts != nil {
		s.opts = *opts
	}
	raw, _ := json.Marshal(map[string]Implementation{MetaServerInfo: info})
	s.serverInfo = raw
	s.tools.Store(&toolSet{byName: map[string]*tool{}, list: json.RawMessage("[]")})
	return s
}

// Runtime returns a runtime server for this MCP server, ready for any transport.
func (s *Server) Runtime(opts ...runtime.Option) *runtime.Server {
	return runtime.NewServer(s.Profile(), opts...)
}

// Profile returns the MCP profile for Relay's runtime: the rules of both generations, with
// this server's features behind them.
func (s *Server) Profile() runtime.Profile {
	return runtime.Profile{
		CancelMethod: "notifications/cancelled",
		CancelTarget: func(params json.RawMessage) (jsonrpc.ID, bool) {
			id := jsonrpc.Field(params, "requestId")
			return jsonrpc.ID(id), jsonrpc.IsRequestID(id)
		},
		FrameTooLarge: func(limit int) *jsonrpc.Error {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "Invalid request: the message is longer than the server's limit; send a smaller one",
				Data:    map[string]any{"limitBytes": limit}}
		},
		Overloaded: overloaded,
		Abandoned: &jsonrpc.Error{Code: CodeServerBusy,
			Message: "Server shutting down: the request did not finish before the drain deadline; retry it",
			Data:    map[string]any{"retryable": true}},
		NewSession: func(peer *runtime.Peer) runtime.Session { return &session{s: s, peer: peer} },
	}
}

func (s *Server) addTool(t *tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.tools.Load()
	next := &toolSet{byName: make(map[string]*tool, len(old.byName)+1)}
	for k, v := range old.byName {
		next.byName[k] = v
	}
	next.byName[t.def.Name] = t
	names := make([]string, 0, len(next.byName))
	for n := range next.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	defs := make([]*Tool, len(names))
	for i, n := range names {
		defs[i] = next.byName[n].def
	}
	raw, err := json.Marshal(defs)
	if err != nil {
		panic("mcp: tool " + t.def.Name + " cannot be encoded: " + err.Error())
	}
	next.list = raw
	s.tools.Store(next)
}

// modernResult turns an encoded result object into a 2026-07-28 result: resultType
// "complete" and the server's identity in _meta. The object must not carry either already.
func (s *Server) modernResult(obj []byte) json.RawMessage {
	out := make([]byte, 0, len(obj)+len(s.serverInfo)+40)
	out = append(out, `{"resultType":"complete","_meta":`...)
	out = append(out, s.serverInfo...)
	if rest := bytes.TrimSpace(obj[1:]); string(rest) != "}" {
		out = append(out, ',')
	}
	return append(out, obj[1:]...)
}

// cacheable adds ttlMs and cacheScope to an encoded result object.
func (s *Server) cacheable(obj []byte) []byte {
	ttl, _ := json.Marshal(s.opts.CacheTTL.Milliseconds())
	out := append([]byte(`{"ttlMs":`), ttl...)
	out = append(out, `,"cacheScope":"public"`...)
	if len(obj) > 2 {
		out = append(out, ',')
	}
	return append(out, obj[1:]...)
}
