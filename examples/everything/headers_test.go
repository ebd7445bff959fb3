package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/mcp"
)

// MCP 2026-07-28, Transports › Streamable HTTP: the x-mcp-header marks of test_custom_headers
// become the tool's mirrored arguments, which tools/list shows.
func TestA13_CustomHeadersToolDeclaresItsMirroredArguments(t *testing.T) {
	s := newServer()
	var got []string
	for _, p := range s.ToolHeaderParams(headersTool) {
		got = append(got, strings.Join(p.Path, ".")+":"+p.Header+":"+p.Type)
	}
	want := []string{"priority:Priority:integer", "region:Region:string", "verbose:Verbose:boolean"}
	if !slices.Equal(got, want) {
		t.Errorf("mirrored arguments %v, want %v", got, want)
	}
	c := openServer(t, s, eras[1], nil)
	for _, it := range c.mustResult("tools/list", nil)["tools"].([]any) {
		if tl := it.(map[string]any); tl["name"] == headersTool {
			raw, _ := json.Marshal(tl["inputSchema"])
			if !strings.Contains(string(raw), `"x-mcp-header":"Region"`) {
				t.Errorf("tools/list must show the x-mcp-header marks: %s", raw)
			}
		}
	}
}

// MCP 2026-07-28, Transports › Streamable HTTP: over HTTP the mirrored headers of a call must
// match its arguments (the =?base64?...?= form decoded first), or the call is refused with
// 400 and -32020 before the tool runs.
func TestA13_CustomHeadersAreCheckedAgainstTheArguments(t *testing.T) {
	h := httpx.NewMCPHandler(newServer(), &httpx.MCPOptions{Logger: zap.NewNop()})
	srv := httptest.NewServer(h)
	defer func() { srv.Close(); h.Close() }()

	b64 := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	cases := []struct {
		name    string
		args    map[string]any
		headers map[string]string
		status  int
		want    string // in the text of the result, or -32020
	}{
		{"mirrored", map[string]any{"region": "us-west1", "priority": 42, "verbose": true, "query": "SELECT 1"},
			map[string]string{"Region": "us-west1", "Priority": "42", "Verbose": "true"}, 200,
			`priority=42 (Mcp-Param-Priority), region="us-west1" (Mcp-Param-Region), verbose=true (Mcp-Param-Verbose), query="SELECT 1" (body only)`},
		{"base64-for-non-ascii", map[string]any{"region": "Zürich"},
			map[string]string{"Region": b64("Zürich")}, 200, `region="Zürich" (Mcp-Param-Region)`},
		{"optional-arguments-absent", map[string]any{"region": "eu"},
			map[string]string{"Region": "eu"}, 200, `region="eu" (Mcp-Param-Region)`},
		{"header-missing", map[string]any{"region": "us-west1"}, nil, 400, "-32020"},
		{"header-differs", map[string]any{"region": "us-west1"},
			map[string]string{"Region": "us-east1"}, 400, "-32020"},
		{"integer-differs", map[string]any{"region": "eu", "priority": 1},
			map[string]string{"Region": "eu", "Priority": "2"}, 400, "-32020"},
		{"bad-base64", map[string]any{"region": "Hello"},
			map[string]string{"Region": "=?base64?SGVs!!!bG8=?="}, 400, "-32020"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
				"params": map[string]any{"name": headersTool, "arguments": tc.args,
					"_meta": map[string]any{mcp.MetaProtocolVersion: mcp.Version20260728, mcp.MetaClientCapabilities: map[string]any{}}}})
			req, _ := http.NewRequest("POST", srv.URL+"/mcp", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", mcp.Version20260728)
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", headersTool)
			for k, v := range tc.headers {
				req.Header.Set("Mcp-Param-"+k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if i := bytes.LastIndex(raw, []byte("data: ")); i >= 0 { // an SSE stream: its last event
				raw = raw[i+len("data: "):]
			}
			var m struct {
				Result toolResult `json:"result"`
				Error  *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			json.Unmarshal(raw, &m)
			got := m.Result.text()
			if m.Error != nil {
				got = fmt.Sprint(m.Error.Code)
			}
			if resp.StatusCode != tc.status || !strings.Contains(got, tc.want) {
				t.Errorf("HTTP %d %s\nwant HTTP %d with %s", resp.StatusCode, raw, tc.status, tc.want)
			}
		})
	}
}
