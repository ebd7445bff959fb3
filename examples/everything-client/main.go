// Command everything-client is the client under test of the official MCP conformance
// suite's client scenarios (npx conformance client --command CMD): a thin program over
// package mcp/client. The suite starts a scenario server, appends its URL to the command
// line, and sets MCP_CONFORMANCE_SCENARIO (the scenario's name),
// MCP_CONFORMANCE_PROTOCOL_VERSION (the revision to speak, when one is asked for: its
// lifecycle is then used without detection) and MCP_CONFORMANCE_CONTEXT (JSON with the
// credentials an authorization scenario hands its client).
//
// What it does: connect over Streamable HTTP, list the tools and call each one with
// arguments made from its input schema, list and read the resources, list and get the
// prompts, authorizing with OAuth first in the authorization scenarios (auth.go); a few
// scenarios ask for something more precise (the values of
// http-custom-headers, the schema round trip of json-schema-2020-12-preservation). A
// failed call is reported on stderr and does not stop the run; the exit status is 1 only
// when the connection cannot be made.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: everything-client [ARGS...] SERVER_URL")
		os.Exit(2)
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := run(ctx, url, scenario, os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION")); err != nil {
		fmt.Fprintf(os.Stderr, "everything-client: %s: %v\n", scenario, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url, scenario, version string) error {
	opts := []client.Option{client.WithClientInfo(mcp.Implementation{Name: "relay-everything-client", Version: "0.1.0"}),
		client.WithElicitation(accept), client.WithSampling(sample), client.WithRoots(roots)}
	if version != "" {
		opts = append(opts, client.WithVersion(version))
	}
	t := client.HTTP(url)
	var err error
	if t.OAuth, err = oauthFor(scenario, os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		return err
	}
	c, err := client.Connect(ctx, t, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	var tools []*mcp.Tool
	for t, err := range c.ListTools(ctx) {
		if err != nil {
			warn("tools/list", err)
			break
		}
		tools = append(tools, t)
	}
	switch scenario {
	case "json-schema-2020-12-preservation":
		return schemaRoundTrip(ctx, c, tools)
	case "http-custom-headers":
		return customHeaders(ctx, c)
	}
	for _, t := range tools {
		call(ctx, c, t.Name, argsFor(t.InputSchema, false))
	}
	var uris []string
	for r, err := range c.ListResources(ctx) {
		if err != nil {
			warn("resources/list", err)
			break
		}
		uris = append(uris, r.URI)
	}
	for _, uri := range uris {
		if _, err := c.ReadResource(ctx, uri); err != nil {
			warn("resources/read "+uri, err)
		}
	}
	var prompts []*mcp.Prompt
	for p, err := range c.ListPrompts(ctx) {
		if err != nil {
			warn("prompts/list", err)
			break
		}
		prompts = append(prompts, p)
	}
	for _, p := range prompts {
		args := map[string]string{}
		for _, a := range p.Arguments {
			args[a.Name] = "value"
		}
		if _, err := c.GetPrompt(ctx, p.Name, args); err != nil {
			warn("prompts/get "+p.Name, err)
		}
	}
	return nil
}

func call(ctx context.Context, c *client.Client, name string, args any) {
	res, err := c.CallTool(ctx, name, args)
	switch {
	case err != nil:
		warn("tools/call "+name, err)
	case res.IsError:
		warn("tools/call "+name, fmt.Errorf("the tool failed"))
	}
}

// accept answers every elicitation as a user who submits the form untouched: the client
// fills each field the schema gives a default.
func accept(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
}

// sample answers every sampling request with one line of text, as a model would.
func sample(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	content, _ := json.Marshal(map[string]any{"type": "text", "text": "Hello from relay-everything-client"})
	return &mcp.CreateMessageResult{Role: "assistant", Model: "relay-everything-client", Content: content, StopReason: "endTurn"}, nil
}

// roots lists one root, the working directory.
func roots(ctx context.Context) ([]mcp.Root, error) {
	return []mcp.Root{{URI: "file:///tmp", Name: "tmp"}}, nil
}

func warn(what string, err error) { fmt.Fprintf(os.Stderr, "everything-client: %s: %v\n", what, err) }

// argsFor makes arguments that satisfy a simple schema: each property (only the required
// ones when requiredOnly) gets a value of its type.
func argsFor(s *jsonschema.Schema, requiredOnly bool) map[string]any {
	args := map[string]any{}
	if s == nil {
		return args
	}
	for name, p := range s.Properties {
		if requiredOnly && !slices.Contains(s.Required, name) {
			continue
		}
		args[name] = valueFor(p)
	}
	return args
}

func valueFor(p *jsonschema.Schema) any {
	if p.Default != nil {
		var v any
		if json.Unmarshal(p.Default, &v) == nil {
			return v
		}
	}
	if len(p.Enum) > 0 {
		return p.Enum[0]
	}
	switch p.Type {
	case "integer":
		return 1
	case "number":
		return 1.5
	case "boolean":
		return true
	case "object":
		return argsFor(p, true)
	case "array":
		return []any{}
	case "null":
		return nil
	}
	return "value"
}

// schemaRoundTrip hands json_schema_2020_12_tool's input schema, as the client decoded
// it, back to json_schema_echo: what the scenario compares with what it sent.
func schemaRoundTrip(ctx context.Context, c *client.Client, tools []*mcp.Tool) error {
	for _, t := range tools {
		if t.Name == "json_schema_2020_12_tool" {
			call(ctx, c, "json_schema_echo", map[string]any{"schema": t.InputSchema})
			return nil
		}
	}
	return fmt.Errorf("json_schema_2020_12_tool is not listed")
}

// customHeaders calls the two tools of http-custom-headers with values that exercise
// every way a value is mirrored: plain, integer, boolean, empty, and the base64 form for
// non-ASCII, control characters and surrounding whitespace; and with a null value, whose
// header is left out.
func customHeaders(ctx context.Context, c *client.Client) error {
	call(ctx, c, "test_custom_headers", map[string]any{
		"region": "us-west-2", "priority": 42, "verbose": true, "debug": false, "empty_val": "",
		"method_val": "tools/call", "float_val": 3.14, "non_ascii_val": "日本語", "whitespace_val": "  padded  ",
		"leading_space_val": " leading", "trailing_space_val": "trailing ", "internal_space_val": "two words",
		"control_char_val": "bell\x07", "crlf_val": "line\r\nbreak", "tab_val": "\ttabbed", "query": "not mirrored",
	})
	call(ctx, c, "test_custom_headers_null", map[string]any{
		"region": "eu-central-1", "priority": 1, "verbose": nil, "query": "q",
	})
	return nil
}
