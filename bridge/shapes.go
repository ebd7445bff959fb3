package bridge

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// Each generation sees its own shapes, both ways (the bridge translates between them):
//
//   - a 2026-07-28 result carries resultType, and serverInfo in its _meta (MCP 2026-07-28,
//     Basic › resultType and _meta); cacheable ones carry ttlMs and cacheScope (Server ›
//     Utilities › Caching). None of these exists in 2025-11-25, so an initialize-generation
//     client gets the result without them (legacyResult), and a 2026-07-28 client gets a
//     legacy child's result with them (modernize);
//   - a resource that does not exist is -32002 in 2025-11-25 (Server › Resources › Error
//     Handling) and -32602 in 2026-07-28 (Basic › Error codes: "this used to be -32002"),
//     translated by resourceNotFound.

// modernOnly are the members of a 2026-07-28 result that an initialize-generation client
// never sees.
var modernOnly = []string{"resultType", "ttlMs", "cacheScope"}

// legacyResult returns a 2026-07-28 child's result as an initialize-generation client expects
// it: without resultType, ttlMs and cacheScope, and without serverInfo in _meta (a _meta left
// empty goes too).
func legacyResult(res json.RawMessage) json.RawMessage {
	if len(res) == 0 || res[0] != '{' {
		return res
	}
	meta := jsonrpc.Field(res, "_meta")
	if meta != nil {
		meta = withoutMembers(meta, mcp.MetaServerInfo)
		if string(meta) == "{}" {
			meta = nil
		}
	}
	out := withoutMembers(res, append(modernOnly, "_meta")...)
	if meta != nil {
		out = jsonrpc.SetMember(out, "_meta", meta)
	}
	return out
}

// withoutMembers returns a copy of the JSON object obj without the members named.
func withoutMembers(obj json.RawMessage, keys ...string) json.RawMessage {
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	jsonrpc.EachMember(obj, func(k, v []byte) bool {
		for _, drop := range keys {
			if string(k) == drop {
				return true
			}
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		key, _ := json.Marshal(string(k))
		out = append(append(append(out, key...), ':'), v...)
		return true
	})
	return append(out, '}')
}

// legacyNotFound is the 2025-11-25 code of a resource that does not exist.
const legacyNotFound = -32002

// resourceNotFound translates the error of a resources/read between the generations: to the
// client's (modern: -32602, else -32002), when it says the resource does not exist. A
// 2026-07-28 child's -32602 says so when it names the uri in its data or says "not found";
// any other -32602 (a missing uri, say) is left as it is.
func resourceNotFound(method string, e *jsonrpc.Error, modernClient bool) *jsonrpc.Error {
	if method != "resources/read" || e == nil {
		return e
	}
	switch {
	case modernClient && e.Code == legacyNotFound:
		out := *e
		out.Code = jsonrpc.CodeInvalidParams
		return &out
	case !modernClient && e.Code == jsonrpc.CodeInvalidParams && namesMissingResource(e):
		out := *e
		out.Code = legacyNotFound
		return &out
	}
	return e
}

func namesMissingResource(e *jsonrpc.Error) bool {
	if strings.Contains(strings.ToLower(e.Message), "not found") {
		return true
	}
	data, _ := json.Marshal(e.Data)
	return jsonrpc.Field(data, "uri") != nil
}

// modernCaps keeps of a legacy child's capabilities those that 2026-07-28 has (MCP
// 2026-07-28, schema ServerCapabilities): not 2025-11-25's tasks, say.
func modernCaps(caps json.RawMessage) json.RawMessage {
	out := json.RawMessage(`{}`)
	jsonrpc.EachMember(caps, func(k, v []byte) bool {
		switch string(k) {
		case "experimental", "logging", "completions", "prompts", "resources", "tools", "extensions":
			out = jsonrpc.SetMember(out, string(k), append(json.RawMessage(nil), v...))
		}
		return true
	})
	return out
}

// logLevels are MCP's levels, least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// wantsLog reports whether a 2026-07-28 request asked for a log message (MCP 2026-07-28,
// Server › Utilities › Logging: only when the request carried _meta logLevel, and only at
// that level or above).
func wantsLog(request, message json.RawMessage) bool {
	var want, level string
	json.Unmarshal(jsonrpc.Field(jsonrpc.Field(request, "_meta"), mcp.MetaLogLevel), &want)
	json.Unmarshal(jsonrpc.Field(message, "level"), &level)
	w, l := slices.Index(logLevels, want), slices.Index(logLevels, level)
	return w >= 0 && l >= w
}
