// Command everything is a stdio MCP server that exposes the fixture the official MCP
// conformance suite expects of a server under test (shared/spec/CONFORMANCE.md): the test_*
// tools, the test:// resources and template, the test_* prompts and a completion handler of
// the suite's 0.1 line, and the diagnostic tools of its 0.2 line (diagnostics.go), each of
// which makes the server exercise a rule of 2026-07-28. It serves both protocol generations
// on one process: clients that send initialize (2025-11-25 and before) and stateless
// 2026-07-28 clients.
//
// Tools that need the client (test_sampling and the test_elicitation* tools) ask it with a
// server-to-client request under the initialize generation, and answer input_required under
// 2026-07-28 (the client retries with inputResponses and requestState).
//
// test://watched-resource changes on its own: every -watch interval (default 2s) the server
// bumps its revision and calls ResourceUpdated, so subscribed clients (resources/subscribe,
// or subscriptions/listen with resourceSubscriptions) get notifications/resources/updated.
//
// test_reconnection sleeps 300 ms and returns text: with -http and -poll-after shorter than
// that, the server closes its event stream early, primed, and the client resumes it with
// Last-Event-ID (the conformance scenario server-sse-polling).
//
// -state-key-file PATH, or $RELAY_STATE_KEY, gives the key that signs the requestState of
// its input_required results (at least 32 bytes; see package internal/statekey): instances
// behind a load balancer (-http) that share it take each other's retries.
//
// -redis URL, or $RELAY_REDIS_URL, makes it a member of a fleet (see package
// internal/fleetflag): with -http, instances behind a balancer with no affinity share their
// sessions, SSE events, tasks and changes on that Redis, and any of them serves any request.
//
// With -http it serves MCP on /mcp, and /healthz, /readyz and /metrics beside it for an
// orchestrator (see examples/deploy/kubernetes).
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/fleetflag"
	"github.com/relayrt/relay/internal/statekey"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/stdio"
	"github.com/relayrt/relay/telemetry"
)

// URIs and names of the fixture.
const (
	uriStaticText   = "test://static-text"
	uriStaticBinary = "test://static-binary"
	uriWatched      = "test://watched-resource"
	uriEmbedded     = "test://embedded-resource"
	uriTemplate     = "test://template/{id}/data"

	staticText = "This is the content of the static text resource."
)

var (
	// pngImage is a real 2×2 PNG (red, green, blue, white), made once at start.
	pngImage = makePNG()
	// wavAudio is a real WAV file: 0.1 s of a 440 Hz tone, 8 kHz, 16-bit mono.
	wavAudio = makeWAV()
	// watchedRevision counts the changes of test://watched-resource.
	watchedRevision atomic.Int64
)

func main() {
	every := flag.Duration("watch", 2*time.Second,
		"how often test://watched-resource changes and subscribers are told (0: never)")
	addr := flag.String("http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:8080, endpoint /mcp) instead of stdio")
	instance := flag.String("instance", "", "with -http: this instance's name behind a load balancer (see examples/deploy)")
	pollAfter := flag.Duration("poll-after", 0, "with -http: close a session request's event stream after this long without its answer; the client resumes it (SSE polling)")
	stateKey := statekey.AddFlag(flag.CommandLine, "with -http, give every instance behind a load balancer the same key; under relay bridge or relay gateway, the child reads the variable they hand it")
	redis := fleetflag.AddFlag(flag.CommandLine, "with -http")
	flag.Parse()
	key, err := stateKey.Key()
	if err != nil {
		fmt.Fprintln(os.Stderr, "everything:", err)
		os.Exit(2)
	}
	member, err := redis.Join(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "everything:", err)
		os.Exit(2)
	}
	defer member.Close()

	s := newServerWith(key, member)
	tel, err := telemetry.FromEnv(context.Background(), "relay-everything") // OpenTelemetry, when OTEL_* asks for it
	if err != nil {
		fmt.Fprintln(os.Stderr, "everything:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); watch(ctx, s, *every) }()

	if *addr != "" {
		opts := &httpx.MCPOptions{Instance: *instance, PollAfter: *pollAfter, Runtime: []runtime.Option{tel.Option(telemetry.MCP)}}
		member.Handler(opts)
		err = serveHTTP(s, *addr, opts)
	} else {
		err = stdio.ServeStdio(context.Background(), s.Runtime(tel.Option(telemetry.MCP)))
	}
	cancel()
	<-done
	s.Close() // the tasks still running end, marked failed
	tel.Shutdown(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "everything:", err)
		os.Exit(1)
	}
}

// serveHTTP serves s on addr until SIGTERM or SIGINT, then shuts down gracefully: MCP on
// /mcp, and /healthz, /readyz (503 once shutdown begins) and /metrics for an orchestrator's
// probes and scrapes.
func serveHTTP(s *mcp.Server, addr string, opts *httpx.MCPOptions) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ops := httpx.NewOps(nil)
	opts.Ops = ops
	h := httpx.NewMCPHandler(s, opts)
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle("/", ops.Handler()) // /metrics, /healthz, /readyz
	fmt.Fprintf(os.Stderr, "everything: serving MCP on http://%s/mcp\n", addr)
	return httpx.ListenAndServe(ctx, addr, mux, &httpx.ServerOptions{Ops: ops, Drain: []io.Closer{h}})
}

// watch changes test://watched-resource every interval until ctx ends.
func watch(ctx context.Context, s *mcp.Server, every time.Duration) {
	if every <= 0 {
		return
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			watchedRevision.Add(1)
			s.ResourceUpdated(uriWatched)
		}
	}
}

type noArgs struct{}

type samplingArgs struct {
	Prompt string `json:"prompt" jsonschema:"the prompt to send to the client's model"`
}

type elicitationArgs struct {
	Message string `json:"message" jsonschema:"the message to show the user"`
}

// newServer builds the fixture server, with a random key for its requestState.
func newServer() *mcp.Server { return newServerWith(nil, nil) }

// newServerWith builds the fixture server, whose requestState key is stateKey (see
// mcp.ServerOptions.StateKey; nil: a random one), a member of a fleet when member is not nil.
func newServerWith(stateKey []byte, member *fleetflag.Member) *mcp.Server {
	o := &mcp.ServerOptions{Instructions: "A test server exposing the MCP conformance fixture.", StateKey: stateKey}
	member.Server(o)
	s := mcp.NewServer(mcp.Implementation{Name: "relay-everything", Version: "1.0.0"}, o)
	addTools(s)
	addDiagnostics(s)
	addInputRequired(s)
	addTaskTools(s)
	addHeaderTools(s)
	addResources(s)
	addPrompts(s)
	addSkills(s)
	s.SetCompletionHandler(complete)
	return s
}

func addTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "test_simple_text", Description: "Returns one text item.",
		Icons: []mcp.Icon{mcp.DataIcon("image/png", pngImage, "2x2")}}, // checked by the suites' schema validation
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			return mcp.TextResult("This is a simple text response for testing."), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_image_content", Description: "Returns a tiny PNG image."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.ImageContent{Data: pngImage, MimeType: "image/png"},
			}}, nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_audio_content", Description: "Returns a tiny WAV clip."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.AudioContent{Data: wavAudio, MimeType: "audio/wav"},
			}}, nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_embedded_resource", Description: "Returns an embedded text resource."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
					URI: uriEmbedded, MimeType: "text/plain", Text: "This is an embedded resource content.",
				}},
			}}, nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_multiple_content_types", Description: "Returns text, an image and an embedded resource."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "Multiple content types test:"},
				&mcp.ImageContent{Data: pngImage, MimeType: "image/png"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
					URI: "test://mixed-content-resource", MimeType: "application/json",
					Text: `{"test":"data","value":123}`,
				}},
			}}, nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_tool_with_logging", Description: "Sends three log messages while it runs."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			steps := []string{"Tool execution started", "Tool processing data", "Tool execution completed"}
			for i, msg := range steps {
				if i > 0 {
					if err := pause(ctx, 20*time.Millisecond); err != nil {
						return nil, err
					}
				}
				req.Log(mcp.LevelInfo, "everything", msg)
			}
			return mcp.TextResult("Tool with logging executed successfully"), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_error_handling", Description: "Always fails, as a tool error (isError)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			return mcp.ErrorResult("This tool intentionally returns an error for testing"), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_tool_with_progress", Description: "Reports progress 0, 50 and 100 of 100 when asked with a progressToken."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			// Each step is reported and then worked on, so that the last notification is not
			// written together with the response: the TypeScript SDK (1.32.2) handles
			// notifications a microtask late and drops progress that arrives in the same
			// read as its request's response.
			for i, p := range []float64{0, 50, 100} {
				req.Progress(p, 100, fmt.Sprintf("Completed step %d of 3", i+1))
				if err := pause(ctx, 50*time.Millisecond); err != nil {
					return nil, err
				}
			}
			return mcp.TextResult("Progress tool completed"), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_sampling", Description: "Asks the client's model to answer the prompt (sampling/createMessage)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in samplingArgs) (*mcp.CallToolResult, error) {
			text, _ := json.Marshal(map[string]string{"type": "text", "text": in.Prompt})
			res, err := req.CreateMessage(ctx, &mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: "user", Content: text}},
				MaxTokens: 100,
			})
			if err != nil {
				return askFailed("sampling", err)
			}
			return mcp.TextResult("LLM response: " + samplingText(res.Content)), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_elicitation", Description: "Asks the user for a username and an email (elicitation/create)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in elicitationArgs) (*mcp.CallToolResult, error) {
			res, err := req.Elicit(ctx, &mcp.ElicitParams{Message: in.Message, RequestedSchema: userSchema})
			if err != nil {
				return askFailed("elicitation", err)
			}
			return elicitResult("User response", res), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicitation whose fields have default values (SEP-1034)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			res, err := req.Elicit(ctx, &mcp.ElicitParams{
				Message: "Please review and update the form fields with defaults", RequestedSchema: defaultsSchema,
			})
			if err != nil {
				return askFailed("elicitation", err)
			}
			return elicitResult("Elicitation completed", res), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicitation with every kind of enum field (SEP-1330)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			res, err := req.Elicit(ctx, &mcp.ElicitParams{
				Message: "Please select options from the enum fields", RequestedSchema: enumsSchema,
			})
			if err != nil {
				return askFailed("elicitation", err)
			}
			return elicitResult("Elicitation completed", res), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "json_schema_2020_12_tool",
		Description: "A tool whose inputSchema uses JSON Schema 2020-12 ($schema, $defs, additionalProperties).",
		InputSchema: schema2020},
		func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, error) {
			args, _ := json.Marshal(in)
			return mcp.TextResult("JSON Schema 2020-12 tool called with: " + string(args)), nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "test_reconnection",
		Description: "Sleeps 300 ms and returns text: with -poll-after shorter, its stream is closed early and resumed."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noArgs) (*mcp.CallToolResult, error) {
			if err := pause(ctx, 300*time.Millisecond); err != nil {
				return nil, err
			}
			return mcp.TextResult("Reconnection test completed"), nil
		})
}

// pause sleeps for d, or until the request is cancelled.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// askFailed handles an error from Elicit or CreateMessage. ErrInputRequired (2026-07-28: the
// client has not answered yet) and a missing client capability (a protocol error the mcp
// package built) go back unchanged; anything else, such as a client that answered the
// server's request with an error, is a failure of the tool.
func askFailed(what string, err error) (*mcp.CallToolResult, error) {
	if _, direct := err.(*jsonrpc.Error); direct || errors.Is(err, mcp.ErrInputRequired) {
		return nil, err
	}
	return mcp.ErrorResult(what + " failed: " + err.Error()), nil
}

// samplingText returns the text of a sampling result's content: one block or an array.
func samplingText(raw json.RawMessage) string {
	type block struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var blocks []block
	var one block
	if json.Unmarshal(raw, &one) == nil && one.Type != "" {
		blocks = []block{one}
	} else {
		json.Unmarshal(raw, &blocks)
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	if parts == nil {
		return "(no text content)"
	}
	return strings.Join(parts, "\n")
}

func elicitResult(prefix string, res *mcp.ElicitResult) *mcp.CallToolResult {
	content, _ := json.Marshal(res.Content)
	if res.Content == nil {
		content = []byte("{}")
	}
	return mcp.TextResult(fmt.Sprintf("%s: action=%s, content=%s", prefix, res.Action, content))
}

// The requested schemas of the elicitation tools.
var (
	userSchema = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"username": map[string]any{"type": "string", "description": "Your username"},
			"email":    map[string]any{"type": "string", "format": "email", "description": "Your email address"},
		},
		"required": []string{"username", "email"},
	}
	defaultsSchema = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":     map[string]any{"type": "string", "description": "User name", "default": "John Doe"},
			"age":      map[string]any{"type": "integer", "description": "User age", "default": 30},
			"score":    map[string]any{"type": "number", "description": "User score", "default": 95.5},
			"status":   map[string]any{"type": "string", "description": "User status", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
			"verified": map[string]any{"type": "boolean", "description": "Verification status", "default": true},
		},
	}
	enumsSchema = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"untitledSingle": map[string]any{
				"type": "string", "description": "Select one option",
				"enum": []string{"option1", "option2", "option3"},
			},
			"titledSingle": map[string]any{
				"type": "string", "description": "Select one option with titles",
				"oneOf": []map[string]string{
					{"const": "value1", "title": "First Option"},
					{"const": "value2", "title": "Second Option"},
					{"const": "value3", "title": "Third Option"},
				},
			},
			"legacyEnum": map[string]any{
				"type": "string", "description": "Select one option (legacy enumNames)",
				"enum":      []string{"opt1", "opt2", "opt3"},
				"enumNames": []string{"Option One", "Option Two", "Option Three"},
			},
			"untitledMulti": map[string]any{
				"type": "array", "description": "Select several options",
				"items": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}},
			},
			"titledMulti": map[string]any{
				"type": "array", "description": "Select several options with titles",
				"items": map[string]any{"anyOf": []map[string]string{
					{"const": "value1", "title": "First Choice"},
					{"const": "value2", "title": "Second Choice"},
					{"const": "value3", "title": "Third Choice"},
				}},
			},
		},
	}
)

// schema2020 is the input schema of json_schema_2020_12_tool, given as written so that the
// keywords of JSON Schema 2020-12 reach the client unchanged: $schema, $defs and
// additionalProperties (SEP-1613), and the wider vocabulary SEP-2106 allows in 2026-07-28, an
// $anchor in $defs, allOf and anyOf, and if, then and else. The mcp package validates the
// arguments of a call against all of it: a name and a phone or an email, the phone when the
// contact method is the phone.
var schema2020 = mustSchema(`{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"$defs": {
		"address": {
			"$anchor": "addressDef",
			"type": "object",
			"properties": {
				"street": {"type": "string"},
				"city": {"type": "string"}
			}
		}
	},
	"properties": {
		"name": {"type": "string"},
		"address": {"$ref": "#/$defs/address"},
		"contactMethod": {"type": "string", "enum": ["phone", "email"]},
		"phone": {"type": "string"},
		"email": {"type": "string"}
	},
	"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
	"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
	"then": {"required": ["phone"]},
	"else": {"required": ["email"]},
	"additionalProperties": false
}`)

func mustSchema(src string) *jsonschema.Schema {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(src), &s); err != nil {
		panic(err)
	}
	return &s
}

func addResources(s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: uriStaticText, Name: "static-text", Title: "Static text",
		Description: "A static text resource.", MimeType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: uriStaticText, MimeType: "text/plain", Text: staticText},
			}}, nil
		})

	s.AddResource(&mcp.Resource{URI: uriStaticBinary, Name: "static-binary", Title: "Static binary",
		Description: "A static binary resource (a tiny PNG).", MimeType: "image/png"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: uriStaticBinary, MimeType: "image/png", Blob: pngImage},
			}}, nil
		})

	s.AddResource(&mcp.Resource{URI: uriWatched, Name: "watched-resource", Title: "Watched resource",
		Description: "A resource that changes periodically; subscribe to hear of it.", MimeType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: uriWatched, MimeType: "text/plain",
					Text: fmt.Sprintf("Watched resource, revision %d", watchedRevision.Load())},
			}}, nil
		})

	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uriTemplate, Name: "template-data",
		Title: "Templated data", Description: "Data for the given id.", MimeType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := req.Vars["id"]
			body, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.URI, MimeType: "application/json", Text: string(body)},
			}}, nil
		})
}

func addPrompts(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments."},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "This is a simple prompt for testing."}},
			}}, nil
		})

	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with two arguments.",
		Arguments: []*mcp.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf(
					"Prompt with arguments: arg1='%s', arg2='%s'", req.Arguments["arg1"], req.Arguments["arg2"])}},
			}}, nil
		})

	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt that embeds a resource.",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			uri := req.Arguments["resourceUri"]
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
					URI: uri, MimeType: "text/plain", Text: "Embedded resource content for testing.",
				}}},
				{Role: "user", Content: &mcp.TextContent{Text: "Please process the embedded resource above."}},
			}}, nil
		})

	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image."},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.ImageContent{Data: pngImage, MimeType: "image/png"}},
				{Role: "user", Content: &mcp.TextContent{Text: "Please analyze the image above."}},
			}}, nil
		})
}

// completionValues are offered for arg1 of test_prompt_with_arguments and id of the template.
var completionValues = map[string][]string{
	"ref/prompt test_prompt_with_arguments arg1": {"paris", "park", "party", "test1", "test2"},
	"ref/prompt test_prompt_with_arguments arg2": {"alpha", "beta", "gamma"},
	"ref/resource " + uriTemplate + " id":        {"1", "2", "3", "123"},
}

// complete offers the values that start with what has been typed so far.
func complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	target := req.Ref.Name
	if req.Ref.Type == "ref/resource" {
		target = req.Ref.URI
	}
	all := completionValues[req.Ref.Type+" "+target+" "+req.Argument.Name]
	values := []string{}
	for _, v := range all {
		if strings.HasPrefix(v, req.Argument.Value) {
			values = append(values, v)
		}
	}
	return &mcp.CompleteResult{Values: values, Total: len(values)}, nil
}

// makePNG encodes a 2×2 RGBA image.
func makePNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	img.Set(1, 0, color.RGBA{0, 255, 0, 255})
	img.Set(0, 1, color.RGBA{0, 0, 255, 255})
	img.Set(1, 1, color.RGBA{255, 255, 255, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// makeWAV encodes 0.1 s of a 440 Hz sine as a PCM WAV file (RIFF, 8 kHz, 16-bit, mono).
func makeWAV() []byte {
	const rate, samples = 8000, 800
	var pcm bytes.Buffer
	for i := range samples {
		v := int16(8000 * math.Sin(2*math.Pi*440*float64(i)/rate))
		binary.Write(&pcm, binary.LittleEndian, v)
	}
	var w bytes.Buffer
	le := func(v any) { binary.Write(&w, binary.LittleEndian, v) }
	w.WriteString("RIFF")
	le(uint32(36 + pcm.Len()))
	w.WriteString("WAVE")
	w.WriteString("fmt ")
	le(uint32(16))       // fmt chunk size
	le(uint16(1))        // PCM
	le(uint16(1))        // channels
	le(uint32(rate))     // sample rate
	le(uint32(rate * 2)) // byte rate
	le(uint16(2))        // block align
	le(uint16(16))       // bits per sample
	w.WriteString("data")
	le(uint32(pcm.Len()))
	w.Write(pcm.Bytes())
	return w.Bytes()
}
