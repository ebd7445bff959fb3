package mcp

import (
	"fmt"
	"slices"

	"github.com/relayrt/relay/jsonrpc"
)

// Protocol revisions.
const (
	// Version20260728 is the current, stateless revision.
	Version20260728 = "2026-07-28"
	// Version20251125, Version20250618 and Version20250326 are the initialize generation.
	Version20251125 = "2025-11-25"
	Version20250618 = "2025-06-18"
	Version20250326 = "2025-03-26"
)

// ModernVersions lists the stateless revisions served; LegacyVersions the initialize
// generation, newest first.
var (
	ModernVersions = []string{Version20260728}
	LegacyVersions = []string{Version20251125, Version20250618, Version20250326}
)

// Reserved _meta keys.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaProgressToken      = "progressToken"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// MCP error codes beyond JSON-RPC's own.
const (
	CodeHeaderMismatch                  = -32020
	CodeMissingRequiredClientCapability = -32021
	CodeUnsupportedProtocolVersion      = -32022
	// CodeServerBusy is Relay's code, in the range MCP leaves to implementations, for a
	// request refused because the server is overloaded or shutting down.
	CodeServerBusy = -32000
)

// Implementation names a server or client.
type Implementation struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
	// Icons are images a client may show for it (2025-11-25 on). A server's info is in the
	// _meta of every 2026-07-28 result: give it URLs rather than data: URIs.
	Icons []Icon `json:"icons,omitempty"`
}

func errInvalidParams(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + fmt.Sprintf(format, args...)}
}

func errMethodNotFound(method, why string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method + why}
}

func errUnsupportedVersion(requested string) *jsonrpc.Error {
	return &jsonrpc.Error{
		Code:    CodeUnsupportedProtocolVersion,
		Message: "Unsupported protocol version " + requested + "; send one of the supported versions",
		Data:    map[string]any{"supported": ModernVersions, "requested": requested},
	}
}

func isSupportedLegacy(v string) bool { return slices.Contains(LegacyVersions, v) }
