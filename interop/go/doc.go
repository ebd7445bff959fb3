// Package interop drives Relay's real binaries (examples/echo, examples/everything) with the
// official Go MCP SDK client, github.com/modelcontextprotocol/go-sdk, over its command
// transport. It is a module of its own so that Relay's main module never depends on the SDK.
package interop
