package rcp

import (
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// Rules returns RCP/1's profile with no server behind it (NewSession is nil): the protocol's
// rules alone, for programs that carry RCP without serving it. A proxy that restarts RCP
// servers reads Proxy from it (supervise.ProtocolOf).
func Rules() runtime.Profile {
	p := (*Server)(nil).profile(false) // the rules do not depend on a server: only NewSession does
	p.NewSession = nil
	return p
}

// A program that links the package decodes its method names without allocating, whatever
// profile it serves them through (relay bridge's, say).
func init() { jsonrpc.Intern(methods...) }

// methods are RCP/1's method and notification names (§7, §9).
var methods = []string{
	"initialize", "info", "ping", "shutdown", "embed", "embed/sparse", "embed/multi", "rerank",
	"retrieve", "query/transform", "graph", "index/add", "index/delete", "catalog/list",
	"feedback", "memory/build", "memory/recall",
	"notifications/cancel", "notifications/progress", "notifications/log",
}

// proxyRules is what a proxy must know of RCP/1: the methods that only read (§7), the
// lifecycle to replay on a new server (§7.1 initialize, with no notification after it, §13),
// ping (§7.15), the cancel's id (§7.14), progress by the token in _meta (§9), and -32010
// for a backend that cannot answer (§12).
var proxyRules = runtime.ProxyRules{
	ReadOnly: []string{"initialize", "info", "ping", "embed", "embed/sparse", "embed/multi", "rerank",
		"retrieve", "query/transform", "graph", "catalog/list", "memory/recall"},
	Handshake:    "initialize",
	Capabilities: "capabilities",
	Ping:         "ping",
	CancelKey:    "id",
	Progress:     "notifications/progress",
	ProgressKey:  "progressToken",
	Unavailable: func(why string, data map[string]any) *jsonrpc.Error {
		return &jsonrpc.Error{Code: CodeBackendUnavailable, Message: "Backend unavailable: " + why, Data: data}
	},
	Busy: func(why string, data map[string]any) *jsonrpc.Error {
		return &jsonrpc.Error{Code: CodeBackendUnavailable, Message: "Backend unavailable: " + why, Data: data}
	},
}
