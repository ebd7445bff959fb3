package httpx

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

// fuzzHeaderParams are the mirrored arguments of the tool "t" in FuzzMirroredHeaders: one of
// each type, one of them nested.
var fuzzHeaderParams = []mcp.HeaderParam{
	{Header: "Region", Path: []string{"region"}, Type: "string"},
	{Header: "Count", Path: []string{"opts", "count"}, Type: "integer"},
	{Header: "Dry-Run", Path: []string{"dry"}, Type: "boolean"},
}

// FuzzMirroredHeaders checks the headers that mirror a 2026-07-28 request's body (MCP
// 2026-07-28, Transports › Streamable HTTP › mirrored headers: MCP-Protocol-Version,
// Mcp-Method, Mcp-Name, Mcp-Param-{Name}) against a plain reading of the rule: the handler
// never accepts a header that the rule says differs from the body or has characters it may
// not have, always accepts the headers a client following the rule sends, and refuses only
// with -32020.
func FuzzMirroredHeaders(f *testing.F) {
	f.Add("tools/call", "t", []byte(`{"region":"eu-west","opts":{"count":42},"dry":true}`), "2026-07-28", "tools/call", "t", "eu-west", "42", "true", uint8(0xff), uint8(0))
	f.Add("tools/call", "t", []byte(`{"region":"élève","opts":{"count":42.0}}`), "2026-07-28", "tools/call", "t", "=?base64?w6lsw6h2ZQ==?=", "42", "", uint8(0x1f), uint8(0))
	f.Add("tools/call", "t", []byte(`{"region":" padded ","opts":{"count":-7}}`), "2026-07-28", "tools/call", "t", " padded ", "-7.0", "", uint8(0x1f), uint8(0))
	f.Add("tools/call", "t", []byte(`{"opts":{"count":9007199254740993}}`), "2026-07-28", "tools/call", "t", "", "9007199254740992", "", uint8(0x17), uint8(0))
	f.Add("tools/call", "t", []byte(`{"opts":{"count":42}}`), "2026-07-28", "tools/call", "t", "", "0x2Ap0", "", uint8(0x17), uint8(0))
	f.Add("tools/call", "t", []byte(`{"opts":{"count":42}}`), "2026-07-28", "tools/call", "t", "", "+42", "", uint8(0x17), uint8(0))
	f.Add("tools/call", "t", []byte(`{"opts":{"count":0E0000}}`), "2026-07-28", "tools/call", "t", "", "0", "", uint8(0x17), uint8(0)) // an exponent's leading zeros are not its size
	f.Add("tools/call", "t", []byte(`{"region":"a\tb"}`), "2026-07-28", "tools/call", "t", "a\tb", "", "", uint8(0x0f), uint8(0))
	f.Add("tools/call", "t", []byte(`{"region":null,"dry":false}`), "2026-07-28", "tools/call", "t", "x", "", "false", uint8(0x2f), uint8(0))
	f.Add("resources/read", "mem://notes/one", []byte(`{}`), "2026-07-28", "resources/read", "mem://notes/one", "", "", "", uint8(0x07), uint8(0))
	f.Add("prompts/get", "greet", []byte(`{}`), "2025-11-25", "prompts/get", "=?base64?Z3JlZXQ=?=", "", "", "", uint8(0x07), uint8(0))
	f.Add("tools/call", "=?base64?", []byte(`{}`), "2026-07-28", "tools/call", "=?base64?PT9iYXNlNjQ/?=", "", "", "", uint8(0x07), uint8(0))
	f.Add("tools/call", "t", []byte(`{"region":""}`), "2026-07-28", "tools/call", "t", "", "", "", uint8(0x0f), uint8(0))
	f.Add("tools/call", "t", []byte(`{"region":"eu"}`), "2026-07-28", "tools/call", "t", "eu", "", "", uint8(0x0f), uint8(0x08))
	f.Add("tools/call", "t", []byte(`{}`), "2026-07-28", "tools/call", "t", "", "", "", uint8(0x07), uint8(0x02))
	f.Add("tasks/get", "relay0.mac.id", []byte(`{}`), "2026-07-28", "tasks/get", "relay0.mac.id", "", "", "", uint8(0x07), uint8(0))
	f.Add("tasks/cancel", "id", []byte(`{}`), "2026-07-28", "tasks/cancel", "other", "", "", "", uint8(0x07), uint8(0))

	h := &MCPHandler{headers: func(tool string) []mcp.HeaderParam {
		if tool == "t" {
			return fuzzHeaderParams
		}
		return nil
	}}
	f.Fuzz(func(t *testing.T, method, name string, args []byte, version, hMethod, hName, hRegion, hCount, hDry string, present, twice uint8) {
		params := map[string]any{"name": name, "uri": name, "taskId": name, "_meta": map[string]any{mcp.MetaProtocolVersion: mcp.Version20260728}}
		if json.Valid(args) {
			params["arguments"] = json.RawMessage(args)
		}
		p, err := json.Marshal(params)
		if err != nil {
			return
		}
		msg, err := jsonrpc.Decode(jsonrpc.AppendRequest(nil, jsonrpc.IntID(1), method, p))
		if err != nil {
			return
		}
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		for i, kv := range [][2]string{{"MCP-Protocol-Version", version}, {"Mcp-Method", hMethod}, {"Mcp-Name", hName},
			{"Mcp-Param-Region", hRegion}, {"Mcp-Param-Count", hCount}, {"Mcp-Param-Dry-Run", hDry}} {
			if present&(1<<i) != 0 {
				r.Header.Set(kv[0], kv[1])
			}
			if twice&(1<<i) != 0 { // a second value, which an intermediary might read instead
				r.Header.Add(kv[0], kv[1]+"2")
			}
		}
		got := h.checkMirroredHeaders(r, msg)
		if got != nil && got.Code != mcp.CodeHeaderMismatch {
			t.Fatalf("refused with %d; a header that does not mirror the body is -32020", got.Code)
		}
		if got == nil && !refMirrors(r.Header, msg) {
			t.Fatalf("accepted headers that do not mirror the body:\nbody %s\nheaders %q", p, r.Header)
		}

		// The headers a client following the rule sends are accepted, when the arguments are
		// ones it can mirror.
		var ok bool
		if r.Header, ok = refHeaders(msg); !ok {
			return
		}
		if got := h.checkMirroredHeaders(r, msg); got != nil {
			t.Fatalf("refused the headers a client would send (%s):\nbody %s\nheaders %q", got.Message, p, r.Header)
		}
	})
}

// refMirrors is the rule, read plainly: each header the request mirrors has one value;
// MCP-Protocol-Version and Mcp-Method equal the body's;
// Mcp-Name equals params.name (params.uri for resources/read, params.taskId for tasks/get,
// tasks/update and tasks/cancel) for the methods that need it;
// each Mcp-Param-{Name} is present exactly when its argument is present and not null, and
// equals it: a string as is, an integer numerically, a boolean as true or false. A value is
// sent as it is only when it is visible ASCII with no space at either end and does not look
// like the base64 form; otherwise it is =?base64?<base64 of its UTF-8>?=.
func refMirrors(hdr http.Header, msg jsonrpc.Message) bool {
	var version string
	json.Unmarshal(jsonrpc.Field(jsonrpc.Field(msg.Params, "_meta"), mcp.MetaProtocolVersion), &version)
	if len(hdr.Values("MCP-Protocol-Version")) != 1 || hdr.Get("MCP-Protocol-Version") != version ||
		len(hdr.Values("Mcp-Method")) != 1 || hdr.Get("Mcp-Method") != msg.Method {
		return false
	}
	nameField := map[string]string{"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
		"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}[msg.Method]
	if nameField == "" {
		return true
	}
	var name string
	if json.Unmarshal(jsonrpc.Field(msg.Params, nameField), &name) != nil {
		return false
	}
	if v, ok := refDecode(hdr.Values("Mcp-Name")); !ok || v != name {
		return false
	}
	if msg.Method != "tools/call" || name != "t" {
		return true
	}
	args := jsonrpc.Field(msg.Params, "arguments")
	for _, p := range fuzzHeaderParams {
		value := args
		for _, key := range p.Path {
			value = jsonrpc.Field(value, key)
		}
		values := hdr.Values("Mcp-Param-" + p.Header)
		if value == nil || string(value) == "null" {
			if len(values) != 0 {
				return false
			}
			continue
		}
		v, ok := refDecode(values)
		if !ok {
			return false
		}
		switch p.Type {
		case "string":
			var s string
			if json.Unmarshal(value, &s) != nil || s != v {
				return false
			}
		case "integer":
			if !jsonNumber.MatchString(v) || !jsonNumber.Match(value) || !refSameNumber(v, string(value)) {
				return false
			}
		case "boolean":
			if (v != "true" && v != "false") || v != string(value) {
				return false
			}
		}
	}
	return true
}

// refDecode reads the one value of a mirrored header.
func refDecode(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	v := values[0]
	if inner, ok := strings.CutPrefix(v, "=?base64?"); ok {
		inner, ok = strings.CutSuffix(inner, "?=")
		if !ok {
			return "", false
		}
		b, err := base64.StdEncoding.DecodeString(inner)
		return string(b), err == nil
	}
	return v, plainValue(v)
}

// plainValue reports whether a value is sent as it is: visible ASCII and inner spaces.
func plainValue(v string) bool {
	if v == "" {
		return true
	}
	if v[0] == ' ' || v[len(v)-1] == ' ' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// refHeaders are the headers a client following the rule sends for msg; false when an
// argument is one the rule does not let it mirror (a value of another type, an integer
// beyond ±(2^53−1)).
func refHeaders(msg jsonrpc.Message) (http.Header, bool) {
	hdr := http.Header{}
	var version string
	json.Unmarshal(jsonrpc.Field(jsonrpc.Field(msg.Params, "_meta"), mcp.MetaProtocolVersion), &version)
	hdr.Set("MCP-Protocol-Version", version)
	hdr.Set("Mcp-Method", msg.Method)
	nameField := map[string]string{"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
		"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}[msg.Method]
	if nameField == "" {
		return hdr, true
	}
	var name string
	if json.Unmarshal(jsonrpc.Field(msg.Params, nameField), &name) != nil {
		return nil, false
	}
	hdr.Set("Mcp-Name", refEncode(name))
	if msg.Method != "tools/call" || name != "t" {
		return hdr, true
	}
	args := jsonrpc.Field(msg.Params, "arguments")
	for _, p := range fuzzHeaderParams {
		value := args
		for _, key := range p.Path {
			value = jsonrpc.Field(value, key)
		}
		if value == nil || string(value) == "null" {
			continue
		}
		var v string
		switch p.Type {
		case "string":
			var s string
			if json.Unmarshal(value, &s) != nil {
				return nil, false
			}
			v = refEncode(s)
		case "integer":
			neg, digits, exp, ok := refDecimal(string(value))
			if !ok || !jsonNumber.Match(value) || exp < 0 || len(digits)+exp > 16 {
				return nil, false
			}
			n, err := strconv.ParseInt("0"+digits+strings.Repeat("0", exp), 10, 64)
			if err != nil || n > 1<<53-1 {
				return nil, false
			}
			if neg {
				n = -n
			}
			v = strconv.FormatInt(n, 10)
		case "boolean":
			if string(value) != "true" && string(value) != "false" {
				return nil, false
			}
			v = string(value)
		}
		hdr.Set("Mcp-Param-"+p.Header, v)
	}
	return hdr, true
}

func refEncode(s string) string {
	if s == "" || (plainValue(s) && !strings.HasPrefix(s, "=?base64?")) {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// refSameNumber compares two JSON numbers exactly, as decimals: sign, significant digits and
// exponent, each made canonical.
func refSameNumber(a, b string) bool {
	na, da, ea, okA := refDecimal(a)
	nb, db, eb, okB := refDecimal(b)
	return okA && okB && na == nb && da == db && (da == "" || ea == eb)
}

// refDecimal returns a JSON number as neg × digits × 10^exp, with no leading or trailing
// zeros in digits ("" for zero, which has no sign).
func refDecimal(s string) (neg bool, digits string, exp int, ok bool) {
	neg = strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, e, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		n, err := strconv.Atoi(e)
		if err != nil || n > 1e6 || n < -1e6 {
			return false, "", 0, false
		}
		exp = n
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits = intPart + frac
	exp -= len(frac)
	digits = strings.TrimLeft(digits, "0")
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		neg = false
	}
	return neg, digits, exp, true
}
