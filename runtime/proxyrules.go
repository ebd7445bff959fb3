package runtime

import (
	"encoding/json"

	"github.com/relayrt/relay/jsonrpc"
)

// ProxyRules is what a proxy between a client and a server process must know of a protocol
// to keep the client whole when the server restarts: which requests may be sent again, how a
// new server is brought back to the state its predecessor was in, how to probe it, how
// requests and streams name themselves in notifications, and what to answer when the
// server cannot. A protocol's package gives it in its Profile (Profile.Proxy); package
// supervise reads it. It is data, and pure functions of a message's bytes: the proxy owns
// the behaviour.
//
// An empty field means the protocol has no such thing: a proxy for a protocol with no
// handshake replays none, one with no Ping does not probe legacy servers, and so on.
type ProxyRules struct {
	// ReadOnly lists the methods that only read, or that re-open a stream (Listen): they
	// are sent again to a new server after a crash.
	ReadOnly []string

	// Handshake is the request that opens a session (MCP's initialize). The proxy sends the
	// client's params of it again to every new server, then the notification Handshaken
	// (when the protocol has one), then the latest params of each method in Restate, then
	// every subscription still held.
	Handshake, Handshaken string
	Restate               []string
	// Subscribe and Unsubscribe open and close a subscription named by the member
	// SubscriptionKey of their params.
	Subscribe, Unsubscribe, SubscriptionKey string
	// Capabilities is the member of Handshake's and Discover's results that holds what the
	// server offers.
	Capabilities string

	// Ping probes a server of the handshake generation. Discover probes a stateless one and
	// returns its capabilities; it is sent with the _meta of the client's first request
	// whose _meta carries VersionKey.
	Ping, Discover, VersionKey string

	// ListTools lists a server's tools, a page at a time (the next page's cursor in its
	// params' member ListCursor), and ToolsChanged is the notification that says the list
	// changed. CallTool calls the tool named by its params' member ToolName. ReadTools
	// reads one page of ListTools' result: each tool, with whether the server said it is
	// safe to call again (it only reads, or repeating it changes nothing), and the next
	// page's cursor ("" at the end).
	ListTools, ListCursor, ToolsChanged, CallTool, ToolName string
	ReadTools                                               func(result json.RawMessage) (repeatable map[string]bool, next string)

	// Lists are the lists a server may say have changed, each once declared in its
	// capabilities. NextCursor is the member of a list's result that holds the next page's
	// cursor (sent back in the params' member ListCursor), absent or empty at the end.
	Lists      []ListRule
	NextCursor string

	// CancelKey is the member of the profile's CancelMethod params that names the request.
	CancelKey string

	// Progress is the notification that reports a request's progress. It names the request
	// by the token in its params' member ProgressKey, which the request carried in its
	// params' _meta under the same name.
	Progress, ProgressKey string

	// Listen opens a stream of notifications; each of them names its stream by the member
	// StreamKey of its params' _meta, and Acknowledged is the notification that opens it.
	// ListFilter is the member of Listen's params that says which lists' changes the
	// client wants (see ListRule.Filter).
	Listen, StreamKey, Acknowledged, ListFilter string

	// Unavailable is the error for a request that the server will not answer: it crashed,
	// the proxy gave up restarting it, or the proxy is stopping; why says which, and data
	// is the error's data. Busy is the error for a request the server cannot take now,
	// which the client may send again later. Nil: JSON-RPC's internal error for both.
	Unavailable, Busy func(why string, data map[string]any) *jsonrpc.Error
}

// ListRule is a list whose changes a server may announce.
type ListRule struct {
	// Capability is the list's member in the server's capabilities ("tools").
	Capability string
	// Changed is the notification that says it changed.
	Changed string
	// Filter is the member of a Listen request's ListFilter that asks for Changed.
	Filter string
	// Read are the requests that read the list, each with the member of its result that
	// holds a page's items: a proxy that replaces a server with another compares them, to
	// say Changed only when the list differs.
	Read []ListRead
}

// ListRead is a request that reads (part of) a list, and the member of its result that holds
// a page's items.
type ListRead struct {
	Method, Items string
}
