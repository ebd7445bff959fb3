package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// version20241105 is the first revision, which servers of the HTTP+SSE transport still
// speak: the initialize generation, older than any a server of Relay's serves.
const version20241105 = "2024-11-05"

func isLegacy(v string) bool { return v == version20241105 || slices.Contains(mcp.LegacyVersions, v) }

// start learns the server's generation, as MCP 2026-07-28, Versioning › backward
// compatibility tells a client to: server/discover first, with the modern _meta; a
// DiscoverResult or a recognised modern error means 2026-07-28; anything else, or no
// answer in time, means the initialize generation.
func (c *Client) start(ctx context.Context) error {
	switch {
	case c.o.version == mcp.Version20260728:
		// Pinned: nothing to detect, so no discover timeout either; only ctx bounds the
		// wait for a server that is slow to answer.
		c.modern, c.version = true, mcp.Version20260728
		return c.discoverOrRetry(ctx, 0)
	case c.o.version != "":
		return c.initializeAnyTransport(ctx, c.o.version)
	}
	c.modern, c.version = true, mcp.Version20260728
	err := c.discoverOrRetry(ctx, c.o.discoverTimeout)
	var rpc *jsonrpc.Error
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.As(err, &rpc) && isModernError(rpc.Code) {
		if rpc.Code == mcp.CodeUnsupportedProtocolVersion {
			// The server knows server/discover but offers only versions of the
			// initialize generation (a server whose modern support is off): retry, as
			// Versioning says, with a version from its list, which means initialize.
			if v := newestLegacy(rpc.Data); v != "" {
				return c.initialize(ctx, v)
			}
			return fmt.Errorf("mcp/client: the server speaks 2026-07-28's generation but none of its versions this client knows: %w", err)
		}
		return fmt.Errorf("mcp/client: server/discover failed: %w", err)
	}
	if errors.Is(err, ErrClosed) {
		return err
	}
	c.modern, c.version = false, ""
	return c.initializeAnyTransport(ctx, mcp.Version20251125)
}

// initializeAnyTransport runs initialize, and over HTTP, when the POST is refused as a
// server of the deprecated HTTP+SSE transport refuses it, opens that transport instead and
// runs it there (MCP 2025-11-25, Transports › Backwards Compatibility).
func (c *Client) initializeAnyTransport(ctx context.Context, version string) error {
	err := c.initialize(ctx, version)
	h, ok := c.conn.(*httpConn)
	if err == nil || !ok || !isOldTransport(err) {
		return err
	}
	old, serr := h.t.dialSSE(ctx, c.in)
	if serr != nil {
		return fmt.Errorf("%w (and as HTTP+SSE: %w)", err, serr)
	}
	h.close()
	c.conn = old
	return c.initialize(ctx, version)
}

// discoverOrRetry sends server/discover, and once more when a modern server refused the
// first with -32022 but names 2026-07-28 among its versions: never a fall back to
// initialize then (MCP 2026-07-28, Versioning).
func (c *Client) discoverOrRetry(ctx context.Context, timeout time.Duration) error {
	err := c.discover(ctx, timeout)
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && rpc.Code == mcp.CodeUnsupportedProtocolVersion && supports(rpc.Data, mcp.Version20260728) {
		err = c.discover(ctx, timeout)
	}
	return err
}

// supports reports whether the data of a -32022 error lists version among supported.
func supports(data any, version string) bool {
	m, _ := data.(map[string]any)
	list, _ := m["supported"].([]any)
	return slices.Contains(list, any(version))
}

// newestLegacy returns the newest version of the initialize generation that the data of a
// -32022 error lists and this client speaks, or "".
func newestLegacy(data any) string {
	m, _ := data.(map[string]any)
	list, _ := m["supported"].([]any)
	for _, v := range mcp.LegacyVersions {
		if slices.Contains(list, any(v)) {
			return v
		}
	}
	return ""
}

// errNotDiscover is a server/discover result that is no DiscoverResult: a legacy server
// that answers every method with {}, say.
var errNotDiscover = errors.New("mcp/client: the answer to server/discover is not a DiscoverResult")

// isModernError reports whether code is one only a 2026-07-28 server sends.
func isModernError(code int64) bool {
	return code == mcp.CodeHeaderMismatch || code == mcp.CodeMissingRequiredClientCapability ||
		code == mcp.CodeUnsupportedProtocolVersion
}

// discover sends server/discover and keeps what it says of the server. A timeout > 0
// bounds the wait for its answer.
func (c *Client) discover(ctx context.Context, timeout time.Duration) error {
	dctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	res, err := c.call(dctx, request{method: "server/discover"})
	if err != nil {
		return err
	}
	var d struct {
		SupportedVersions []string           `json:"supportedVersions"`
		Capabilities      json.RawMessage    `json:"capabilities"`
		Instructions      string             `json:"instructions"`
		ServerInfo        mcp.Implementation `json:"serverInfo"`
		Meta              struct {
			ServerInfo *mcp.Implementation `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(res, &d); err != nil {
		return fmt.Errorf("mcp/client: a server/discover result that does not decode: %w", err)
	}
	if len(d.SupportedVersions) == 0 {
		return errNotDiscover
	}
	if !slices.Contains(d.SupportedVersions, mcp.Version20260728) {
		supported := make([]any, len(d.SupportedVersions))
		for i, v := range d.SupportedVersions {
			supported[i] = v
		}
		return &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion,
			Message: fmt.Sprintf("the server supports %v, not %s", d.SupportedVersions, mcp.Version20260728),
			Data:    map[string]any{"supported": supported}}
	}
	c.caps, c.instructions, c.info = d.Capabilities, d.Instructions, d.ServerInfo
	if d.Meta.ServerInfo != nil {
		c.info = *d.Meta.ServerInfo
	}
	return nil
}

// initialize runs the handshake of the initialize generation (MCP 2025-11-25, Lifecycle ›
// Initialization): initialize, then notifications/initialized.
func (c *Client) initialize(ctx context.Context, version string) error {
	c.modern, c.version = false, ""
	r, err := c.handshake(ctx, version)
	if err != nil {
		return err
	}
	c.version, c.caps, c.info, c.instructions = r.ProtocolVersion, r.Capabilities, r.ServerInfo, r.Instructions
	return c.initialized(ctx)
}

type initializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    json.RawMessage    `json:"capabilities"`
	ServerInfo      mcp.Implementation `json:"serverInfo"`
	Instructions    string             `json:"instructions"`
}

// handshake sends initialize, asking for version, and returns the server's answer once
// it has checked that this client speaks the version the server chose.
func (c *Client) handshake(ctx context.Context, version string) (*initializeResult, error) {
	body, err := json.Marshal(map[string]any{"protocolVersion": version, "capabilities": c.o.capabilities(), "clientInfo": c.o.info})
	if err != nil {
		return nil, err
	}
	res, err := c.conn.call(ctx, &outgoing{id: jsonrpc.IntID(c.ids.Add(1)), method: "initialize", params: body})
	if err != nil {
		return nil, fmt.Errorf("mcp/client: initialize: %w", err)
	}
	var r initializeResult
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, fmt.Errorf("mcp/client: an initialize result that does not decode: %w", err)
	}
	if !isLegacy(r.ProtocolVersion) {
		// MCP 2025-11-25, Lifecycle › Version Negotiation: a client that cannot use the
		// server's version should disconnect.
		return nil, fmt.Errorf("mcp/client: the server answered initialize with version %q, which this client does not speak", r.ProtocolVersion)
	}
	return &r, nil
}

// initialized ends the handshake: notifications/initialized, then, over HTTP, the
// session's own event stream.
func (c *Client) initialized(ctx context.Context) error {
	if err := c.notify(ctx, "notifications/initialized", map[string]any{}); err != nil {
		return err
	}
	if l, ok := c.conn.(interface {
		listen(ctx context.Context, version string)
	}); ok {
		l.listen(ctx, c.version)
	}
	return nil
}
