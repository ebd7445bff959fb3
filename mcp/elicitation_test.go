package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/relayrt/relay/mcp"
)

const connectURL = "https://mcp.example.com/connect"

// urlServer has a tool that sends the user to a URL (Elicit, mode url) and one whose request
// cannot go on until they have been (URLElicitationRequired), with the id "oauth-1".
func urlServer(ids chan<- string) *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "m", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "visit"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		p := &mcp.ElicitParams{Mode: mcp.ElicitURL, Message: "Set your API key.", URL: connectURL}
		res, err := req.Elicit(ctx, p)
		if err != nil {
			return nil, err
		}
		if ids != nil {
			ids <- p.ElicitationID
		}
		return mcp.TextResult("user said " + res.Action), nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "needs-auth"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return nil, mcp.URLElicitationRequired("Authorization is required to access your files.",
			&mcp.ElicitParams{Message: "Connect your account.", URL: connectURL + "?id=oauth-1", ElicitationID: "oauth-1"})
	})
	mcp.AddTool(s, &mcp.Tool{Name: "form"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		_, err := req.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object"}})
		return nil, err
	})
	return s
}

func TestURLElicitation_Legacy_AskThenCompleteNotifiesThatClient(t *testing.T) {
	// 2025-11-25 Client Features › Elicitation › URL mode: mode "url", a url and an
	// elicitationId; then notifications/elicitation/complete with that id, to that client only.
	ids := make(chan string, 1)
	s := urlServer(ids)
	c := connect(t, s)
	legacyInit(c, `{"elicitation":{"url":{}}}`)
	other := connect(t, s) // another client, which must not be told
	legacyInit(other, `{"elicitation":{"url":{}}}`)

	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"visit"}}`)
	ask := c.recv()
	var p map[string]any
	json.Unmarshal(ask["params"], &p)
	if string(ask["method"]) != `"elicitation/create"` || p["mode"] != "url" || p["url"] != connectURL ||
		p["message"] != "Set your API key." || len(fmt.Sprint(p["elicitationId"])) != 32 {
		t.Fatalf("want a URL-mode elicitation with a 128-bit id: %v", p)
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept"}}`, ask["id"]))
	if m := c.recv(); !strings.Contains(string(m["result"]), "user said accept") {
		t.Fatalf("got %v", m)
	}
	id := <-ids
	if id != p["elicitationId"] {
		t.Fatalf("Elicit must give the handler the id it sent: %q, sent %v", id, p["elicitationId"])
	}

	if err := s.CompleteElicitation(id); err != nil {
		t.Fatal(err)
	}
	n := c.recv()
	if string(n["method"]) != `"notifications/elicitation/complete"` || !strings.Contains(string(n["params"]), `"elicitationId":"`+id+`"`) {
		t.Fatalf("want the completion notification: %v", n)
	}
	if err := s.CompleteElicitation(id); err == nil {
		t.Fatal("an elicitation completes once; the second call must fail")
	}
	// The other client gets nothing: its next frame is the answer to its own ping.
	other.send(`{"jsonrpc":"2.0","id":9,"method":"ping","params":{}}`)
	if m := other.recv(); string(m["id"]) != "9" {
		t.Fatalf("the other client was told: %v", m)
	}
}

func TestURLElicitation_Legacy_RequiredErrorIs32042(t *testing.T) {
	// 2025-11-25 Elicitation › URL Elicitation Required Error: -32042 with data.elicitations,
	// each of mode url with an elicitationId; the server may then complete each.
	s := urlServer(nil)
	c := connect(t, s)
	legacyInit(c, `{"elicitation":{"form":{},"url":{}}}`)
	m := c.call(2, "tools/call", `{"name":"needs-auth"}`)
	var e struct {
		Code    int64
		Message string
		Data    struct{ Elicitations []map[string]any }
	}
	json.Unmarshal(m["error"], &e)
	if e.Code != -32042 || e.Message != "Authorization is required to access your files." || len(e.Data.Elicitations) != 1 {
		t.Fatalf("got %s", m["error"])
	}
	if el := e.Data.Elicitations[0]; el["mode"] != "url" || el["elicitationId"] != "oauth-1" || el["url"] != connectURL+"?id=oauth-1" {
		t.Fatalf("elicitation: %v", el)
	}
	if err := s.CompleteElicitation("oauth-1"); err != nil {
		t.Fatal(err)
	}
	if n := c.recv(); string(n["method"]) != `"notifications/elicitation/complete"` {
		t.Fatalf("got %v", n)
	}
}

func TestURLElicitation_HonoursClientCapabilities(t *testing.T) {
	// Servers MUST NOT send elicitation requests with modes the client did not declare
	// (elicitation {} means form only), and -32042 exists only in 2025-11-25.
	s := urlServer(nil)
	legacy := func(version, caps string) *client {
		c := connect(t, s)
		c.call(100, "initialize", `{"protocolVersion":"`+version+`","capabilities":`+caps+`,"clientInfo":{"name":"t","version":"1"}}`)
		return c
	}
	for _, tc := range []struct {
		rule, version, caps, tool, want string
	}{
		{"elicitation {} is form only", "2025-11-25", `{"elicitation":{}}`, "visit", "elicitation.url"},
		{"URL mode needs 2025-11-25", "2025-06-18", `{"elicitation":{"url":{}}}`, "visit", "2025-11-25"},
		{"a form needs form when modes are named", "2025-11-25", `{"elicitation":{"url":{}}}`, "form", "elicitation.form"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			r := result(t, legacy(tc.version, tc.caps).call(1, "tools/call", `{"name":"`+tc.tool+`"}`))
			if r["isError"] != true || !strings.Contains(fmt.Sprint(r["content"]), tc.want) {
				t.Fatalf("want a tool error naming %s: %v", tc.want, r)
			}
		})
	}
	m := legacy("2025-11-25", `{"elicitation":{}}`).call(1, "tools/call", `{"name":"needs-auth"}`)
	if code(m) != -32603 || !strings.Contains(string(m["error"]), "elicitation.url") {
		t.Fatalf("-32042 to a client without elicitation.url: %s", m["error"])
	}

	modern := func(caps string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	}
	c := connect(t, s)
	for _, tool := range []string{"visit", "needs-auth"} {
		m := c.call(1, "tools/call", `{"name":"`+tool+`",`+modern(`{"elicitation":{}}`)+`}`)
		if code(m) != -32021 || !strings.Contains(string(m["error"]), `"requiredCapabilities":{"elicitation":{"url":{}}}`) {
			t.Errorf("2026-07-28 %s without elicitation.url: %s", tool, m["error"])
		}
	}
	if m := c.call(2, "tools/call", `{"name":"form",`+modern(`{"elicitation":{"url":{}}}`)+`}`); code(m) != -32021 ||
		!strings.Contains(string(m["error"]), `{"elicitation":{"form":{}}}`) {
		t.Errorf("2026-07-28 form to a URL-only client: %s", m["error"])
	}
}

func TestURLElicitation_Modern_InputRequiredWithoutID(t *testing.T) {
	// 2026-07-28 keeps URL mode (ElicitRequestURLParams: mode, message, url) but has neither
	// -32042 nor elicitationId: both ways of asking become input_required questions.
	s := urlServer(nil)
	c := connect(t, s)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}`
	for tool, key := range map[string]string{"visit": "elicitation-0", "needs-auth": "oauth-1"} {
		r := result(t, c.call(1, "tools/call", `{"name":"`+tool+`",`+meta+`}`))
		ask, _ := r["inputRequests"].(map[string]any)[key].(map[string]any)
		p, _ := ask["params"].(map[string]any)
		if r["resultType"] != "input_required" || ask["method"] != "elicitation/create" || p["mode"] != "url" ||
			p["url"] == nil || p["elicitationId"] != nil {
			t.Errorf("%s: %v", tool, r)
		}
	}
}
