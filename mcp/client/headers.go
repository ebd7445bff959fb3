package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/relayrt/relay/mcp"
)

// keepTools drops, from a page of tools/list, the tools whose x-mcp-header annotations
// break the rules (empty or not an HTTP token, used twice regardless of case, on a
// property that is not a string, an integer or a boolean), and remembers the others'.
func (c *Client) keepTools(items []json.RawMessage) []json.RawMessage {
	kept := items[:0:0]
	for _, raw := range items {
		var t struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(raw, &t) != nil {
			kept = append(kept, raw) // let the caller's decoding report it
			continue
		}
		hp, err := mcp.MirroredArgs(t.Name, t.InputSchema)
		if err != nil {
			continue
		}
		c.mu.Lock()
		c.headers[t.Name] = hp
		c.mu.Unlock()
		kept = append(kept, raw)
	}
	return kept
}

// paramHeaders returns the Mcp-Param-* headers of a call's arguments: a string as it is
// (or encoded), an integer in decimal, a boolean as true or false; an absent or null value
// has no header. An integer that float64 cannot hold exactly is sent as written: the server
// compares numbers exactly.
func paramHeaders(hp []mcp.HeaderParam, args json.RawMessage) map[string]string {
	if len(hp) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, p := range hp {
		v := lookup(args, p.Path)
		if v == nil {
			continue
		}
		switch x := v.(type) {
		case string:
			out["Mcp-Param-"+p.Header] = encodeHeaderValue(x)
		case bool:
			out["Mcp-Param-"+p.Header] = strconv.FormatBool(x)
		case json.Number:
			if i, err := x.Int64(); err == nil {
				out["Mcp-Param-"+p.Header] = strconv.FormatInt(i, 10)
			} else if f, err := x.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 { // exact in float64
				out["Mcp-Param-"+p.Header] = strconv.FormatInt(int64(f), 10)
			} else {
				out["Mcp-Param-"+p.Header] = x.String()
			}
		}
	}
	return out
}

func lookup(args json.RawMessage, path []string) any {
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	for _, name := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[name]
	}
	return v
}

// encodeHeaderValue returns s as a header value: as it is when it is plain visible ASCII
// with no leading or trailing whitespace, and otherwise (or when it looks like the
// sentinel itself) as =?base64?…?= of its UTF-8 (MCP 2026-07-28, Transports › Streamable
// HTTP › encoding of header values).
func encodeHeaderValue(s string) string {
	plain := !(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")) &&
		strings.TrimSpace(s) == s
	for i := 0; plain && i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			plain = false
		}
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}
