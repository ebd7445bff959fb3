package gateway

import (
	"context"
	"slices"
	"sync"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// logLevels sets the log level of an upstream of the initialize generation, which has one
// for everything it sends (MCP 2025-11-25, Utilities › Logging): the lowest any host asked
// for of the calls in flight to it. Each host still gets only what it asked for (Request.Log
// filters), and the upstream sends nothing that no host wants. The level goes down before a
// call that needs more, and back up at the first call after the ones that needed it.
// A 2026-07-28 upstream is told each call's level instead (client.WithLogLevel).
type logLevels struct {
	// mu is held across the upstream's logging/setLevel, so that a call is sent only once
	// the upstream logs what it needs.
	mu     sync.Mutex
	conn   *client.Client // the connection set is for: a new one logs as it likes until told
	set    int            // the rank conn was told, or -1
	flight [len(levelOrder)]int
}

// levelOrder ranks the levels, lowest first.
var levelOrder = [...]mcp.LoggingLevel{mcp.LevelDebug, mcp.LevelInfo, mcp.LevelNotice, mcp.LevelWarning,
	mcp.LevelError, mcp.LevelCritical, mcp.LevelAlert, mcp.LevelEmergency}

// enter counts a call made to c for a host that asked for level ("" for none), sets the
// upstream's level if it must change, and returns what ends the call's count. A level that
// cannot be set is left as it was: the call goes on, with the messages it gets.
func (l *logLevels) enter(ctx context.Context, c *client.Client, level mcp.LoggingLevel) (leave func()) {
	rank := slices.Index(levelOrder[:], level)
	if rank < 0 {
		return func() {}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flight[rank]++
	if l.conn != c {
		l.conn, l.set = c, -1
	}
	need := 0
	for l.flight[need] == 0 {
		need++
	}
	if need != l.set && c.SetLogLevel(ctx, levelOrder[need]) == nil {
		l.set = need
	}
	return func() {
		l.mu.Lock()
		l.flight[rank]--
		l.mu.Unlock()
	}
}
