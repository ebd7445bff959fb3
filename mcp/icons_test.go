package mcp_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/relayrt/relay/mcp"
)

// legacyInit opens a 2025-11-25 session on c.
func legacyInit(c *client, caps string) {
	c.t.Helper()
	c.call(100, "initialize", `{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"t","version":"1"}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// icons reads the icons member of v, a decoded definition.
func icons(v any) []mcp.Icon {
	raw, _ := json.Marshal(v.(map[string]any)["icons"])
	var out []mcp.Icon
	json.Unmarshal(raw, &out)
	return out
}

func TestIcons_OnEveryDefinitionAndServerInfo_BothEras(t *testing.T) {
	// 2025-11-25 and 2026-07-28 schema Icons: Tool, Resource, ResourceTemplate, Prompt and
	// Implementation carry icons?: [{src, mimeType?, sizes?, theme?}].
	svg := mcp.Icon{Src: "https://example.com/i.svg", MimeType: "image/svg+xml", Sizes: []string{"any"}, Theme: mcp.IconDark}
	png := mcp.DataIcon("image/png", []byte{0x89, 'P', 'N', 'G'}, "48x48")
	if png.Src != "data:image/png;base64,iVBORw==" || png.MimeType != "image/png" {
		t.Fatalf("DataIcon = %+v", png)
	}
	want := []mcp.Icon{svg, png}
	s := mcp.NewServer(mcp.Implementation{Name: "iconic", Version: "1", Icons: want}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "t", Icons: want}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
		return nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "x://r", Name: "r", Icons: want}, nil)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "x://{id}", Name: "tmpl", Icons: want}, nil)
	s.AddPrompt(&mcp.Prompt{Name: "p", Icons: want}, nil)

	lists := map[string]string{"tools/list": "tools", "resources/list": "resources",
		"resources/templates/list": "resourceTemplates", "prompts/list": "prompts"}
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			c := connect(t, s)
			params := `{` + modernMeta + `}`
			if era != "2026-07-28" {
				legacyInit(c, `{}`)
				params = `{}`
			}
			for method, member := range lists {
				items := result(t, c.call(1, method, params))[member].([]any)
				if got := icons(items[0]); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: icons %+v, want %+v", method, got, want)
				}
			}
			var info any
			if era == "2026-07-28" {
				info = result(t, c.call(2, "server/discover", params))["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"]
			} else {
				c2 := connect(t, s)
				info = result(t, c2.call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`))["serverInfo"]
			}
			if got := icons(info); !reflect.DeepEqual(got, want) {
				t.Errorf("serverInfo icons %+v, want %+v", got, want)
			}
		})
	}
}

func TestIcons_InvalidIconPanicsAtRegistration(t *testing.T) {
	s := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"}, nil)
	for _, tc := range []struct {
		rule string
		icon mcp.Icon
	}{
		{"src must be a URI with a scheme", mcp.Icon{Src: "/relative.png"}},
		{"src must be https, http or data", mcp.Icon{Src: "javascript:alert(1)"}},
		{"an http src needs a host", mcp.Icon{Src: "https:///x.png"}},
		{"theme is light, dark or none", mcp.Icon{Src: "https://e.com/i.png", Theme: "sepia"}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "icon 0 of prompt p") {
					t.Fatalf("want a panic naming the icon and its owner, got %v", r)
				}
			}()
			s.AddPrompt(&mcp.Prompt{Name: "p", Icons: []mcp.Icon{tc.icon}}, nil)
		})
	}
}
