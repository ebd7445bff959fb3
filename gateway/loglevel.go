package gateway

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/relayrt/relay/jsonrpc"
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
	mu      sync.Mutex // guards the fields below; never held across a call to the upstream
	conn    *client.Client
	set     int  // the rank conn was told, or -1: a new connection logs as it likes until told
	setting bool // a logging/setLevel is on its way to conn
	flight  [len(levelOrder)]int
}

// levelOrder ranks the levels, lowest first.
var levelOrder = [...]mcp.LoggingLevel{mcp.LevelDebug, mcp.LevelInfo, mcp.LevelNotice, mcp.LevelWarning,
	mcp.LevelError, mcp.LevelCritical, mcp.LevelAlert, mcp.LevelEmergency}

// setLevelWait bounds a logging/setLevel, which the call that sends it waits for.
const setLevelWait = 5 * time.Second

// enter counts a call made to c for a host that asked for level ("" for none), sets the
// upstream's level first if it must change, and returns what ends the call's count. Only
// the call that sends the logging/setLevel waits for it (at most setLevelWait); a call that
// finds one on its way goes on. A level the upstream refuses (a JSON-RPC error) is not asked
// again on that connection; one that got no answer is asked again by the next call.
func (l *logLevels) enter(ctx context.Context, c *client.Client, level mcp.LoggingLevel) (leave func()) {
	rank := slices.Index(levelOrder[:], level)
	if rank < 0 {
		return func() {}
	}
	l.mu.Lock()
	l.flight[rank]++
	if l.conn != c {
		l.conn, l.set, l.setting = c, -1, false
	}
	need := 0
	for l.flight[need] == 0 {
		need++
	}
	send := need != l.set && !l.setting
	l.setting = l.setting || send
	l.mu.Unlock()
	leave = func() {
		l.mu.Lock()
		l.flight[rank]--
		l.mu.Unlock()
	}
	if !send {
		return leave
	}
	sctx, cancel := context.WithTimeout(ctx, setLevelWait)
	err := c.SetLogLevel(sctx, levelOrder[need])
	cancel()
	var refused *jsonrpc.Error
	l.mu.Lock()
	if l.conn == c {
		l.setting = false
		if err == nil || errors.As(err, &refused) {
			l.set = need
		}
	}
	l.mu.Unlock()
	return leave
}
