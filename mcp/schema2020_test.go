package mcp_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/relayrt/relay/mcp"
)

// A 2020-12 schema with the keywords a round trip through a Go type could lose.
const schema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"$defs":{"point":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}},` +
	`"properties":{"at":{"$ref":"#/$defs/point"}},"required":["at"],"additionalProperties":false}`

func TestToolSchemas_JSONSchema2020PassThroughUntouched(t *testing.T) {
	// DIGEST A14 (MS Tool): inputSchema is JSON Schema 2020-12 unless $schema says otherwise;
	// tools/list gives it as registered, in both generations, and calls are validated by it.
	var in, out jsonschema.Schema
	json.Unmarshal([]byte(schema2020), &in)
	json.Unmarshal([]byte(schema2020), &out)
	s := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "plot", InputSchema: &in, OutputSchema: &out},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"at": map[string]any{"x": 1}}}, nil
		})
	var want any
	json.Unmarshal([]byte(schema2020), &want)
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		c := connect(t, s)
		params := `{` + modernMeta + `}`
		if era != "2026-07-28" {
			legacyInit(c, `{}`)
			params = `{}`
		}
		tool := result(t, c.call(1, "tools/list", params))["tools"].([]any)[0].(map[string]any)
		for _, member := range []string{"inputSchema", "outputSchema"} {
			if !reflect.DeepEqual(tool[member], want) {
				t.Errorf("%s: %s changed on the way:\n%v\nwant\n%v", era, member, tool[member], want)
			}
		}
	}
	c := connect(t, s)
	r := result(t, c.call(2, "tools/call", `{"name":"plot","arguments":{"at":{"x":1},"extra":true},`+modernMeta+`}`))
	if r["isError"] != true || !strings.Contains(r["content"].([]any)[0].(map[string]any)["text"].(string), "extra") {
		t.Errorf("additionalProperties:false must refuse an extra argument: %v", r)
	}
	r = result(t, c.call(3, "tools/call", `{"name":"plot","arguments":{"at":{}},`+modernMeta+`}`))
	if r["isError"] != true {
		t.Errorf("the $ref to $defs must be followed (x is required): %v", r)
	}
}
